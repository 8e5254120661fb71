package splunk

import (
	"github.com/pprofotel/profiler/internal/convert/splunk/splunktest"
	"testing"
	"unicode/utf8"

	gpprof "github.com/google/pprof/profile"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"

	"github.com/pprofotel/profiler/internal/collect"
)

// TestEncodeRepairsInvalidUTF8 checks that the strings of the pprof bodies,
// which profile.proto declares as proto3 strings, are valid UTF-8 whatever
// the request holds, repaired as package validutf8 does. The profiler's
// requests are valid already (the OTLP encoding repairs what the runtime
// gives it); these are requests built elsewhere, edited in memory, where
// protobuf's decoder would have refused them.
func TestEncodeRepairsInvalidUTF8(t *testing.T) {
	// replace sets every string of the dictionary equal to old to new, in
	// the string table and the attribute values.
	replace := func(old, new string) func(*collectorpb.ExportProfilesServiceRequest) {
		return func(req *collectorpb.ExportProfilesServiceRequest) {
			d := req.Dictionary
			for i, s := range d.StringTable {
				if s == old {
					d.StringTable[i] = new
				}
			}
			for _, a := range d.AttributeTable {
				if sv, ok := a.GetValue().GetValue().(*commonpb.AnyValue_StringValue); ok && sv.StringValue == old {
					sv.StringValue = new
				}
			}
		}
	}
	tests := []struct {
		name string
		edit func(*collectorpb.ExportProfilesServiceRequest)
		// check returns what the decoded body says where the repair
		// should show.
		check func(p *gpprof.Profile) string
		want  string
	}{
		{
			name:  "label value",
			edit:  replace("checkout", "check\xffout"),
			check: func(p *gpprof.Profile) string { return labelOf(p, "handler") },
			want:  "check\uFFFDout",
		},
		{
			name:  "function name",
			edit:  replace("main.main", "main.m\xc3ain"),
			check: func(p *gpprof.Profile) string { return p.Function[len(p.Function)-1].Name },
			want:  "main.m\uFFFDain",
		},
		{
			name:  "mapping file",
			edit:  replace("/bin/app", "/bin/\xe9app"),
			check: func(p *gpprof.Profile) string { return p.Mapping[0].File },
			want:  "/bin/\uFFFDapp",
		},
		{
			name:  "valid",
			edit:  func(*collectorpb.ExportProfilesServiceRequest) {},
			check: func(p *gpprof.Profile) string { return labelOf(p, "handler") },
			want:  "checkout",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(handWindow(collect.Profile{Name: collect.CPU, Data: handCPU()}))
			tt.edit(req)
			logs, err := Encode(req, EncodeOptions{Convert: toPprof})
			if err != nil {
				t.Fatal(err)
			}
			p := splunktest.DecodeBody(t, splunktest.Records(t, logs)[DataTypeCPU])
			for i, s := range stringsOf(p) {
				if !utf8.ValidString(s) {
					t.Errorf("string %d of the body, %q, is not valid UTF-8", i, s)
				}
			}
			if got := tt.check(p); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// labelOf returns the first value of the string label key in p's samples.
func labelOf(p *gpprof.Profile, key string) string {
	for _, s := range p.Sample {
		if vs := s.Label[key]; len(vs) > 0 {
			return vs[0]
		}
	}
	return ""
}

// stringsOf lists every string of a decoded profile.
func stringsOf(p *gpprof.Profile) []string {
	var out []string
	for _, s := range p.Sample {
		for k, vs := range s.Label {
			out = append(out, k)
			out = append(out, vs...)
		}
	}
	for _, f := range p.Function {
		out = append(out, f.Name, f.SystemName, f.Filename)
	}
	for _, m := range p.Mapping {
		out = append(out, m.File, m.BuildID)
	}
	for _, st := range p.SampleType {
		out = append(out, st.Type, st.Unit)
	}
	return out
}
