package splunk

import (
	"testing"
	"unicode/utf8"

	gpprof "github.com/google/pprof/profile"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/pprofdecode"
)

// TestEncodeRepairsInvalidUTF8 checks that the strings of the pprof bodies,
// which profile.proto declares as proto3 strings, are valid UTF-8 whatever
// the application's labels and the binary's names hold, repaired as
// package validutf8 does, and counted.
func TestEncodeRepairsInvalidUTF8(t *testing.T) {
	tests := []struct {
		name string
		edit func(p *pprofdecode.Profile)
		// check returns what the decoded body says where the repair
		// should show.
		check func(p *gpprof.Profile) string
		want  string
		n     int64
	}{
		{
			name:  "label value",
			edit:  func(p *pprofdecode.Profile) { p.Samples[0].Labels[0].Str = "check\xffout" },
			check: func(p *gpprof.Profile) string { return labelOf(p, "handler") },
			want:  "check\uFFFDout",
			n:     1,
		},
		{
			name: "label value equal to a valid one once repaired",
			edit: func(p *pprofdecode.Profile) {
				p.Samples[0].Labels[0].Str = "check\xffout"
				p.Samples[1].Labels = []pprofdecode.Label{{Key: "handler", Str: "check\uFFFDout"}}
			},
			check: func(p *gpprof.Profile) string { return labelOf(p, "handler") },
			want:  "check\uFFFDout",
			n:     1,
		},
		{
			name:  "function name",
			edit:  func(p *pprofdecode.Profile) { p.Functions[2].Name = "main.m\xc3ain" },
			check: func(p *gpprof.Profile) string { return p.Function[len(p.Function)-1].Name },
			want:  "main.m\uFFFDain",
			n:     1,
		},
		{
			name:  "mapping file",
			edit:  func(p *pprofdecode.Profile) { p.Mappings[0].File = "/bin/\xe9app" },
			check: func(p *gpprof.Profile) string { return p.Mapping[0].File },
			want:  "/bin/\uFFFDapp",
			n:     1,
		},
		{
			name:  "valid",
			edit:  func(*pprofdecode.Profile) {},
			check: func(p *gpprof.Profile) string { return labelOf(p, "handler") },
			want:  "checkout",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cpu := handCPU()
			tt.edit(cpu)
			req, repairs, err := Encode(handWindow(collect.Profile{Name: collect.CPU, Data: cpu}), testResource(), EncodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			p := decodeBody(t, records(t, req)[DataTypeCPU])
			for i, s := range stringsOf(p) {
				if !utf8.ValidString(s) {
					t.Errorf("string %d of the body, %q, is not valid UTF-8", i, s)
				}
			}
			if got := tt.check(p); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if repairs.N != tt.n {
				t.Errorf("repairs.N = %d, want %d", repairs.N, tt.n)
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
