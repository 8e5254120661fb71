package pprofconv_test

import (
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/internal/convert/otlpjson"
	"github.com/pprofotel/profiler/pprofconv"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/protobuf/proto"
)

// cpuProfile returns the OTLP Profile of the CPU scope of r.
func cpuProfile(t *testing.T, r pprofconv.Request) *profilespb.Profile {
	return scopeOf(t, r, "cpu").Profiles[0]
}

// TestConvertWithoutPeriodType merges two windows whose Profiles lack
// period_type, which made pprof's Merge dereference nil (issue 25, break 2).
func TestConvertWithoutPeriodType(t *testing.T) {
	reqs := []pprofconv.Request{cpuOnly(t, 0), cpuOnly(t, 1)}
	for _, r := range reqs {
		cpuProfile(t, r).PeriodType = nil
	}
	got, _, err := pprofconv.Convert(reqs, pprofconv.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	one, _, err := pprofconv.Convert([]pprofconv.Request{cpuOnly(t, 0)}, pprofconv.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if g, w := totals(got)["cpu/samples"], 2*totals(one)["cpu/samples"]; g != w || w == 0 {
		t.Errorf("cpu/samples total %d, want %d (twice one window's)", g, w)
	}
	if pt := got["cpu"].PeriodType; pt == nil || pt.Type != "" || pt.Unit != "" {
		t.Errorf("period type %v, want an empty one, as pprof's Parse gives", pt)
	}
}

// TestConvertMergeMismatch checks that windows of one runtime profile with
// different sample or period types are refused with an error naming both
// windows and their types as text, not as Go pointers.
func TestConvertMergeMismatch(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(r pprofconv.Request)
		wantErr string
	}{
		{"period type", func(r pprofconv.Request) { cpuProfile(t, r).PeriodType = nil },
			"cpu profile: w0.pb and w1.pb: windows of different period types, cpu/nanoseconds and none: convert them apart"},
		{"sample type", func(r pprofconv.Request) {
			d := r.Request.Dictionary
			d.StringTable = append(d.StringTable, "wakeups")
			cpuProfile(t, r).SampleType = &profilespb.ValueType{TypeStrindex: int32(len(d.StringTable) - 1), UnitStrindex: cpuProfile(t, r).SampleType.UnitStrindex}
		}, "cpu profile: w0.pb and w1.pb: windows of different sample types, [samples/count cpu/nanoseconds] and [wakeups/count cpu/nanoseconds]: convert them apart"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w0, w1 := cpuOnly(t, 0), cpuOnly(t, 1)
			w0.Source, w1.Source = "w0.pb", "w1.pb"
			tt.mutate(w1)
			_, _, err := pprofconv.Convert([]pprofconv.Request{w0, w1}, pprofconv.Filter{})
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "0x") {
				t.Fatalf("Convert error %v, want one starting %q", err, tt.wantErr)
			}
		})
	}
}

// TestConvertValues checks that values below zero are read as zero and
// counted, and that sums and products past the int64 maximum, within a
// window or across windows, are refused: they wrapped (MaxInt64 + MaxInt64
// was -2).
func TestConvertValues(t *testing.T) {
	const maxInt = math.MaxInt64
	// window returns a CPU window whose samples all cite one stack, with
	// the given values, each in a sample of its own span.
	window := func(t *testing.T, w int, period int64, values ...int64) pprofconv.Request {
		r := cpuOnly(t, w)
		// samples/count alone: cpu/nanoseconds is computed from it.
		sp := scopeOf(t, r, "cpu")
		sp.Profiles = sp.Profiles[:1]
		sp.Scope.Attributes = slices.DeleteFunc(sp.Scope.Attributes, func(kv *commonpb.KeyValue) bool { return kv.Key == "pprof.scope.sample_type_order" })
		prof := sp.Profiles[0]
		prof.Period = period
		stack := prof.Samples[0].StackIndex
		prof.Samples = nil
		for _, v := range values {
			prof.Samples = append(prof.Samples, &profilespb.Sample{StackIndex: stack, Values: []int64{v}})
		}
		r.Source = "w"
		return r
	}
	tests := []struct {
		name         string
		reqs         []pprofconv.Request
		samples, cpu int64
		negative     int
		wantErr      string
	}{
		{"negative", []pprofconv.Request{window(t, 0, 10, 5, -4000, 7)}, 12, 120, 1, ""},
		{"negative period", []pprofconv.Request{window(t, 0, -10, 3)}, 3, 0, 1, ""},
		{"up to the maximum", []pprofconv.Request{window(t, 0, 1, maxInt-1, 1)}, maxInt, maxInt, 0, ""},
		{"sum past the maximum", []pprofconv.Request{window(t, 0, 1, maxInt, maxInt)}, 0, 0, 0,
			"w: cpu profile: samples values add up past the int64 maximum"},
		{"value times period past the maximum", []pprofconv.Request{window(t, 0, 10_000_000, 1<<40)}, 0, 0, 0,
			"w: cpu profile: cpu values, samples times the period 10000000, pass the int64 maximum"},
		{"windows add up past the maximum", []pprofconv.Request{window(t, 0, 1, maxInt/2+1), window(t, 1, 1, maxInt/2+1)}, 0, 0, 0,
			"cpu profile: samples values add up past the int64 maximum over the windows from w to w"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rep, err := pprofconv.Convert(tt.reqs, pprofconv.Filter{})
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("Convert error %v, want one starting %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tot := totals(got)
			if tot["cpu/samples"] != tt.samples || tot["cpu/cpu"] != tt.cpu {
				t.Errorf("samples %d, cpu %d; want %d, %d", tot["cpu/samples"], tot["cpu/cpu"], tt.samples, tt.cpu)
			}
			if rep.NegativeValues != tt.negative {
				t.Errorf("report %+v, want %d negative values", rep, tt.negative)
			}
		})
	}
}

// TestConvertReadsWindowOnce checks that a window read twice, as two
// copies of a file or a file and its JSON copy, is converted once and
// reported, while the parts of a window cut by Split, which share its
// profile ids, and windows without profile ids all count.
func TestConvertReadsWindowOnce(t *testing.T) {
	orig := fixtureWindow("checkout", "a", 0)
	orig.Source = "a.pb"
	single, _, err := pprofconv.Convert([]pprofconv.Request{orig}, pprofconv.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	one := totals(single)
	twice := make(map[string]int64)
	for k, v := range one {
		twice[k] = 2 * v
	}
	copyOf := func(r pprofconv.Request, source string) pprofconv.Request {
		return pprofconv.Request{Source: source, Request: proto.Clone(r.Request).(*collectorpb.ExportProfilesServiceRequest)}
	}
	line, err := otlpjson.Marshal(orig.Request, false)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := otlpjson.Unmarshal(line)
	if err != nil {
		t.Fatal(err)
	}
	// A CPU window of 1,000 samples, each of a span of its own, cut into
	// parts along its samples: each part has the window's profile ids.
	wide := cpuOnly(t, 0)
	wide.Source = "wide.pb"
	d := wide.Request.Dictionary
	prof := cpuProfile(t, wide)
	for i := range 1000 {
		d.LinkTable = append(d.LinkTable, &profilespb.Link{TraceId: make([]byte, 16), SpanId: []byte{1, 2, 3, 4, 5, 6, byte(i >> 8), byte(i)}})
		prof.Samples = append(prof.Samples, &profilespb.Sample{StackIndex: prof.Samples[0].StackIndex, LinkIndex: int32(len(d.LinkTable) - 1), Values: []int64{1}})
	}
	wholeWide, _, err := pprofconv.Convert([]pprofconv.Request{wide}, pprofconv.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	parts, err := otlp.Split(wide.Request, proto.Size(wide.Request)/3)
	if err != nil || len(parts) < 3 {
		t.Fatalf("Split = %d parts, %v; want 3 or more", len(parts), err)
	}
	var split []pprofconv.Request
	for _, p := range parts {
		split = append(split, pprofconv.Request{Source: "part", Request: p})
	}
	noIDs := []pprofconv.Request{copyOf(orig, "x.pb"), copyOf(orig, "y.pb")}
	for _, r := range noIDs {
		for _, sp := range r.Request.ResourceProfiles[0].ScopeProfiles {
			for _, p := range sp.Profiles {
				p.ProfileId = nil
			}
		}
	}
	tests := []struct {
		name       string
		reqs       []pprofconv.Request
		want       map[string]int64
		duplicates int
	}{
		{"two copies", []pprofconv.Request{orig, copyOf(orig, "copy of a.pb")}, one, 4},
		{"protobuf and JSON", []pprofconv.Request{orig, {Source: "a.json", Request: fromJSON}}, one, 4},
		{"parts of a window", split, totals(wholeWide), 0},
		{"parts of a window twice", append(split, split...), totals(wholeWide), len(split)},
		{"no profile ids", noIDs, twice, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rep, err := pprofconv.Convert(tt.reqs, pprofconv.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			tot := totals(got)
			// The snapshots are the latest of the process, not a sum.
			for _, k := range []string{"heap/inuse_objects", "heap/inuse_space"} {
				if _, ok := tt.want[k]; ok {
					tot[k] = tt.want[k]
				}
			}
			if !maps.Equal(tot, tt.want) {
				t.Errorf("totals %v, want %v", tot, tt.want)
			}
			if len(rep.Duplicates) != tt.duplicates {
				t.Fatalf("%d duplicates reported (%v), want %d", len(rep.Duplicates), rep.Duplicates, tt.duplicates)
			}
			for _, d := range rep.Duplicates {
				if d.First != "a.pb" && d.First != "part" || d.Source == "a.pb" || d.Profile == "" {
					t.Errorf("duplicate %+v, want one of a.pb read again", d)
				}
			}
		})
	}
}
