package otlp_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/internal/otlpattr"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
	"github.com/pprofotel/profiler/labels"
	"github.com/pprofotel/profiler/pprofconv"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/proto"
)

// wideProfile returns a profile of n samples with distinct stacks over a
// pool of functions, two sample types, labels on every sample and trace
// links on every third, so that a request of it is large and every part of
// a split needs its own share of the dictionary.
func wideProfile(name string, n int) otlp.Input {
	p := &pprofdecode.Profile{
		SampleTypes: []pprofdecode.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:  pprofdecode.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:      10000000,
		Mappings:    []pprofdecode.Mapping{{Start: 0x400000, Limit: 0x800000, File: "/app/server", HasFunctions: true}},
	}
	const funcs = 200
	for f := range funcs {
		p.Functions = append(p.Functions, pprofdecode.Function{
			Name:     fmt.Sprintf("%s.handler%03d", name, f),
			Filename: fmt.Sprintf("/src/%s/file%02d.go", name, f%17),
		})
		p.Locations = append(p.Locations, pprofdecode.Location{
			Mapping: 0, Address: 0x401000 + uint64(f)*0x40,
			Lines: []pprofdecode.Line{{Function: int32(f), Line: int64(10 + f)}},
		})
	}
	for i := range n {
		s := pprofdecode.Sample{
			Locations: []int32{int32(i % funcs), int32((i / funcs) % funcs), int32((i*7 + 3) % funcs)},
			Values:    []int64{int64(1 + i%5), int64(10000000 * (1 + i%5))},
			Labels:    []pprofdecode.Label{{Key: "request", Str: fmt.Sprintf("r%d", i%13)}},
		}
		if i%3 == 0 {
			s.Labels = append(s.Labels,
				pprofdecode.Label{Key: labels.TraceIDKey, Str: fmt.Sprintf("%032x", 1+i%11)},
				pprofdecode.Label{Key: labels.SpanIDKey, Str: fmt.Sprintf("%016x", 1+i%7)})
		}
		p.Samples = append(p.Samples, s)
	}
	return otlp.Input{Name: name, Profile: p}
}

// totals sums, over all parts, the stack totals of every scope and sample
// type, keyed "scope/sample-type/stack".
func totals(t *testing.T, parts ...*collectorpb.ExportProfilesServiceRequest) map[string]int64 {
	t.Helper()
	sum := make(map[string]int64)
	for i, part := range parts {
		profs, _, err := pprofconv.Convert([]pprofconv.Request{{Source: fmt.Sprint("part ", i), Request: part}}, pprofconv.Filter{})
		if err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		for name, p := range profs {
			for si, st := range p.SampleType {
				for k, v := range otlptest.StackTotals(p, si) {
					sum[name+"/"+st.Type+"/"+k] += v
				}
			}
		}
	}
	return sum
}

func numSamples(req *collectorpb.ExportProfilesServiceRequest) int {
	n := 0
	for _, rp := range req.ResourceProfiles {
		for _, sp := range rp.ScopeProfiles {
			for _, p := range sp.Profiles {
				n += len(p.Samples)
			}
		}
	}
	return n
}

func TestSplit(t *testing.T) {
	fixture := newTestBuilder().Build(windowStart, windowEnd, otlptest.FixtureInputs())
	wide := newTestBuilder().Build(windowStart, windowEnd, []otlp.Input{
		wideProfile("cpu", 1200), wideProfile("mutex", 600), wideProfile("block", 40),
	})
	// The smallest part the wide request could be cut into carries the
	// resource, one scope and one sample: a limit a little above the
	// largest scope alone forces a cut along scopes only.
	largestScope := 0
	for _, sp := range wide.ResourceProfiles[0].ScopeProfiles {
		alone := proto.Clone(wide).(*collectorpb.ExportProfilesServiceRequest)
		alone.ResourceProfiles[0].ScopeProfiles = nil
		// Sizes without pruning overestimate, which only makes the
		// limit looser.
		largestScope = max(largestScope, proto.Size(alone)+proto.Size(sp)+8)
	}

	tests := []struct {
		name string
		req  *collectorpb.ExportProfilesServiceRequest
		max  int
		// minParts is the fewest parts the limit allows.
		minParts int
		// wholeScopes: every scope travels whole, in one part.
		wholeScopes bool
	}{
		{name: "fits", req: fixture, max: otlp.DefaultMaxRequestBytes, minParts: 1, wholeScopes: true},
		{name: "fixture by scopes", req: fixture, max: proto.Size(fixture) - 1, minParts: 2},
		{name: "wide by scopes", req: wide, max: largestScope, minParts: 2, wholeScopes: true},
		{name: "wide by samples", req: wide, max: proto.Size(wide) / 7, minParts: 7},
		{name: "wide to small parts", req: wide, max: 8192, minParts: proto.Size(wide) / 8192},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, err := proto.Marshal(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			parts, err := otlp.Split(tt.req, tt.max)
			if err != nil {
				t.Fatal(err)
			}
			if len(parts) < tt.minParts {
				t.Errorf("%d parts, want at least %d", len(parts), tt.minParts)
			}
			if proto.Size(tt.req) <= tt.max && (len(parts) != 1 || parts[0] != tt.req) {
				t.Errorf("a request that fits was not returned as is")
			}
			scopesSeen := make(map[string]int)
			samples := 0
			for i, part := range parts {
				if size := proto.Size(part); size > tt.max {
					t.Errorf("part %d has %d bytes, limit %d", i, size, tt.max)
				}
				if err := otlptest.Validate(part); err != nil {
					t.Errorf("part %d is invalid: %v", i, err)
				}
				samples += numSamples(part)
				for _, sp := range part.ResourceProfiles[0].ScopeProfiles {
					for _, kv := range sp.Scope.Attributes {
						if kv.Key == otlpattr.ProfileName {
							scopesSeen[kv.Value.GetStringValue()]++
						}
					}
				}
			}
			if want := numSamples(tt.req); samples != want {
				t.Errorf("parts carry %d samples, the request %d", samples, want)
			}
			if tt.wholeScopes {
				for name, n := range scopesSeen {
					if n != 1 {
						t.Errorf("scope %q is in %d parts, want 1", name, n)
					}
				}
			}
			want := totals(t, tt.req)
			got := totals(t, parts...)
			if len(want) == 0 {
				t.Fatal("request has no samples; the test proves nothing")
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s: parts total %d, request %d", k, got[k], v)
				}
			}
			for k, v := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("%s: parts carry %d, not in the request", k, v)
				}
			}
			after, _ := proto.Marshal(tt.req)
			if string(before) != string(after) {
				t.Error("Split modified the request")
			}
		})
	}
}

func TestSplitKeepsProfileIdentity(t *testing.T) {
	req := newTestBuilder().Build(windowStart, windowEnd, []otlp.Input{wideProfile("cpu", 1000)})
	parts, err := otlp.Split(req, proto.Size(req)/3)
	if err != nil {
		t.Fatal(err)
	}
	orig := req.ResourceProfiles[0].ScopeProfiles[0]
	for i, part := range parts {
		sp := part.ResourceProfiles[0].ScopeProfiles[0]
		if !proto.Equal(sp.Scope, orig.Scope) {
			t.Errorf("part %d: scope %v, want %v", i, sp.Scope, orig.Scope)
		}
		if len(sp.Profiles) != len(orig.Profiles) {
			t.Fatalf("part %d: %d profiles, want %d", i, len(sp.Profiles), len(orig.Profiles))
		}
		for j, p := range sp.Profiles {
			o := orig.Profiles[j]
			if string(p.ProfileId) != string(o.ProfileId) || p.TimeUnixNano != o.TimeUnixNano ||
				p.DurationNano != o.DurationNano || p.Period != o.Period {
				t.Errorf("part %d profile %d: id %x time %d+%d period %d, want %x %d+%d %d", i, j,
					p.ProfileId, p.TimeUnixNano, p.DurationNano, p.Period, o.ProfileId, o.TimeUnixNano, o.DurationNano, o.Period)
			}
			d, od := part.Dictionary, req.Dictionary
			if got, want := d.StringTable[p.SampleType.TypeStrindex], od.StringTable[o.SampleType.TypeStrindex]; got != want {
				t.Errorf("part %d profile %d: sample type %q, want %q", i, j, got, want)
			}
		}
		// Each part's dictionary is pruned: smaller than the whole one.
		if len(part.Dictionary.StackTable) >= len(req.Dictionary.StackTable) {
			t.Errorf("part %d: %d stacks, the whole request has %d; the dictionary was not pruned",
				i, len(part.Dictionary.StackTable), len(req.Dictionary.StackTable))
		}
	}
}

func TestSplitErrors(t *testing.T) {
	req := newTestBuilder().Build(windowStart, windowEnd, otlptest.FixtureInputs())
	for _, tt := range []struct {
		max  int
		want string
	}{
		{0, "must be positive"},
		{-1, "must be positive"},
		{200, "maximum request size of 200 bytes"},
	} {
		parts, err := otlp.Split(req, tt.max)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Split(max %d) = %d parts, %v; want an error containing %q", tt.max, len(parts), err, tt.want)
		}
	}
}

func BenchmarkSplit(b *testing.B) {
	req := newTestBuilder().Build(windowStart, windowEnd, []otlp.Input{wideProfile("cpu", 5000), wideProfile("block", 2000)})
	limit := proto.Size(req) / 4
	b.ReportAllocs()
	for b.Loop() {
		if _, err := otlp.Split(req, limit); err != nil {
			b.Fatal(err)
		}
	}
}
