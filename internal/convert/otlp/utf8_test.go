package otlp_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/internal/convert/otlpjson"
	"github.com/pprofotel/profiler/internal/otlpattr"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// TestBuildRepairsInvalidUTF8 feeds strings that are not valid UTF-8
// through every place a profile's strings enter a request, and checks that
// the request encodes (proto3 refuses invalid strings), holds the repaired
// strings without duplicates, and counts each repair.
func TestBuildRepairsInvalidUTF8(t *testing.T) {
	profile := func(edit func(p *pprofdecode.Profile)) *pprofdecode.Profile {
		p := &pprofdecode.Profile{
			SampleTypes: []pprofdecode.ValueType{{Type: "samples", Unit: "count"}},
			PeriodType:  pprofdecode.ValueType{Type: "cpu", Unit: "nanoseconds"},
			Period:      10_000_000,
			Mappings:    []pprofdecode.Mapping{{Start: 0x1000, Limit: 0x2000, File: "/app/server", BuildID: "abc", HasFunctions: true}},
			Functions:   []pprofdecode.Function{{Name: "main.f", SystemName: "main.f", Filename: "/src/main.go"}},
			Locations:   []pprofdecode.Location{{Mapping: 0, Address: 0x1010, Lines: []pprofdecode.Line{{Function: 0, Line: 3}}}},
			Samples: []pprofdecode.Sample{
				{Locations: []int32{0}, Values: []int64{5}, Labels: []pprofdecode.Label{{Key: "route", Str: "/cafe"}}},
			},
		}
		edit(p)
		return p
	}
	tests := []struct {
		name  string
		edit  func(p *pprofdecode.Profile)
		want  string // a sample's attribute, frame or string the request must hold
		check func(v view) string
		n     int64
		first string // the first string repaired, as repaired
	}{
		{
			name: "label value",
			edit: func(p *pprofdecode.Profile) { p.Samples[0].Labels[0].Str = "/caf\xe9" },
			want: "route=/caf\uFFFD",
			check: func(v view) string {
				return v.attrs(v.profile("cpu", "samples").Samples[0].AttributeIndices)[0]
			},
			n: 1, first: "/caf\uFFFD",
		},
		{
			name: "label key",
			edit: func(p *pprofdecode.Profile) { p.Samples[0].Labels[0].Key = "r\xffoute" },
			want: "r\uFFFDoute=/cafe",
			check: func(v view) string {
				return v.attrs(v.profile("cpu", "samples").Samples[0].AttributeIndices)[0]
			},
			n: 1, first: "r\uFFFDoute",
		},
		{
			name: "run of invalid bytes",
			edit: func(p *pprofdecode.Profile) { p.Samples[0].Labels[0].Str = "\xff\xfe" },
			want: "route=\uFFFD",
			check: func(v view) string {
				return v.attrs(v.profile("cpu", "samples").Samples[0].AttributeIndices)[0]
			},
			n: 1, first: "\uFFFD",
		},
		{
			name: "function name",
			edit: func(p *pprofdecode.Profile) { p.Functions[0].Name = "main.\xc3" },
			want: "main.\uFFFD",
			check: func(v view) string {
				return v.frames(v.profile("cpu", "samples").Samples[0].StackIndex)[0]
			},
			n: 1, first: "main.\uFFFD",
		},
		{
			name: "file and mapping names",
			edit: func(p *pprofdecode.Profile) {
				p.Functions[0].Filename = "/home/jos\xe9/main.go"
				p.Mappings[0].File = "/home/jos\xe9/server"
			},
			want: "/home/jos\uFFFD/main.go",
			check: func(v view) string {
				return v.d.StringTable[v.d.FunctionTable[1].FilenameStrindex]
			},
			n: 2, first: "/home/jos\uFFFD/server", // mappings come first
		},
		{
			name: "build id",
			edit: func(p *pprofdecode.Profile) { p.Mappings[0].BuildID = "\x80" },
			want: "process.executable.build_id.gnu=\uFFFD",
			check: func(v view) string {
				for _, a := range v.attrs(v.d.MappingTable[1].AttributeIndices) {
					if strings.HasPrefix(a, otlpattr.BuildIDGNU+"=") {
						return a
					}
				}
				return "no build id"
			},
			n: 1, first: "\uFFFD",
		},
		{
			// Two invalid values that repair to the same string, and a
			// valid one equal to it, share one attribute, so that the
			// request's tables stay free of duplicates (Validate).
			name: "repairs that collide",
			edit: func(p *pprofdecode.Profile) {
				p.Samples = append(p.Samples,
					pprofdecode.Sample{Locations: []int32{0}, Values: []int64{1}, Labels: []pprofdecode.Label{{Key: "route", Str: "/caf\xe9"}}},
					pprofdecode.Sample{Locations: []int32{0}, Values: []int64{1}, Labels: []pprofdecode.Label{{Key: "route", Str: "/caf\xe8"}}},
					pprofdecode.Sample{Locations: []int32{0}, Values: []int64{1}, Labels: []pprofdecode.Label{{Key: "route", Str: "/caf\uFFFD"}}},
				)
			},
			want: "route=/caf\uFFFD route=/caf\uFFFD route=/caf\uFFFD",
			check: func(v view) string {
				var out []string
				for _, s := range v.profile("cpu", "samples").Samples[1:] {
					out = append(out, v.attrs(s.AttributeIndices)...)
				}
				n := 0
				for _, a := range v.d.AttributeTable {
					if a.GetValue().GetStringValue() == "/caf\uFFFD" {
						n++
					}
				}
				if n != 1 {
					return fmt.Sprintf("%d attributes hold /caf\uFFFD, want 1", n)
				}
				return strings.Join(out, " ")
			},
			n: 2, first: "/caf\uFFFD",
		},
		{
			name: "default sample type",
			edit: func(p *pprofdecode.Profile) {
				p.SampleTypes[0].Type = "sam\xffples"
				p.DefaultSampleType = "sam\xffples"
			},
			want: "sam\uFFFDples sam\uFFFDples",
			check: func(v view) string {
				sp := v.scope("cpu")
				return defaultSampleType(sp.Scope) + " " + v.d.StringTable[sp.Profiles[0].SampleType.TypeStrindex]
			},
			n: 2, first: "sam\uFFFDples", // in the scope, then in the string table
		},
		{
			name:  "valid strings",
			edit:  func(*pprofdecode.Profile) {},
			want:  "route=/cafe",
			check: func(v view) string { return v.attrs(v.profile("cpu", "samples").Samples[0].AttributeIndices)[0] },
			n:     0,
		},
	}
	b := newTestBuilder()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One Builder for all cases: what a request repaired must not
			// carry over into the next.
			req := b.Build(windowStart, windowEnd, []otlp.Input{{Name: "cpu", Profile: profile(tt.edit)}})
			if err := otlptest.Validate(req); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			data, err := otlp.AppendRequest(nil, req)
			if err != nil {
				t.Fatalf("AppendRequest: %v", err)
			}
			if _, err := proto.Marshal(req); err != nil {
				t.Fatalf("proto.Marshal: %v", err)
			}
			if _, err := otlpjson.Marshal(req, false); err != nil {
				t.Fatalf("otlpjson.Marshal: %v", err)
			}
			checkRoundTrip(t, data, req)
			if got := tt.check(view{t, req, req.Dictionary}); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			r := b.Repairs()
			if r.N != tt.n {
				t.Errorf("Repairs().N = %d, want %d", r.N, tt.n)
			}
			if r.First != tt.first {
				t.Errorf("Repairs().First = %q, want %q", r.First, tt.first)
			}
		})
	}
}

func defaultSampleType(s *commonpb.InstrumentationScope) string {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == otlpattr.DefaultSampleType {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}
