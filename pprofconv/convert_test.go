package pprofconv_test

import (
	"bytes"
	"maps"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	pprofprofile "github.com/google/pprof/profile"
	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
	"github.com/pprofotel/profiler/pprofconv"
)

// toGoogle converts a decoded profile to a google pprof profile directly,
// without going through OTLP, as the reference for round trips.
func toGoogle(p *pprofdecode.Profile) *pprofprofile.Profile {
	g := &pprofprofile.Profile{
		DefaultSampleType: p.DefaultSampleType,
		PeriodType:        &pprofprofile.ValueType{Type: p.PeriodType.Type, Unit: p.PeriodType.Unit},
		Period:            p.Period,
		TimeNanos:         p.TimeNanos,
		DurationNanos:     p.DurationNanos,
	}
	for _, st := range p.SampleTypes {
		g.SampleType = append(g.SampleType, &pprofprofile.ValueType{Type: st.Type, Unit: st.Unit})
	}
	for i, m := range p.Mappings {
		g.Mapping = append(g.Mapping, &pprofprofile.Mapping{
			ID: uint64(i + 1), Start: m.Start, Limit: m.Limit, Offset: m.Offset, File: m.File, BuildID: m.BuildID,
			HasFunctions: m.HasFunctions, HasFilenames: m.HasFilenames, HasLineNumbers: m.HasLineNumbers, HasInlineFrames: m.HasInlineFrames,
		})
	}
	for i, f := range p.Functions {
		g.Function = append(g.Function, &pprofprofile.Function{ID: uint64(i + 1), Name: f.Name, SystemName: f.SystemName, Filename: f.Filename, StartLine: f.StartLine})
	}
	for i, l := range p.Locations {
		loc := &pprofprofile.Location{ID: uint64(i + 1), Address: l.Address, IsFolded: l.IsFolded}
		if l.Mapping >= 0 {
			loc.Mapping = g.Mapping[l.Mapping]
		}
		for _, ln := range l.Lines {
			loc.Line = append(loc.Line, pprofprofile.Line{Function: g.Function[ln.Function], Line: ln.Line, Column: ln.Column})
		}
		g.Location = append(g.Location, loc)
	}
	for _, s := range p.Samples {
		gs := &pprofprofile.Sample{Value: append([]int64(nil), s.Values...)}
		for _, l := range s.Locations {
			gs.Location = append(gs.Location, g.Location[l])
		}
		for _, l := range s.Labels {
			if l.IsNum {
				if gs.NumLabel == nil {
					gs.NumLabel, gs.NumUnit = map[string][]int64{}, map[string][]string{}
				}
				gs.NumLabel[l.Key] = append(gs.NumLabel[l.Key], l.Num)
				if l.NumUnit != "" {
					gs.NumUnit[l.Key] = append(gs.NumUnit[l.Key], l.NumUnit)
				}
			} else {
				if gs.Label == nil {
					gs.Label = map[string][]string{}
				}
				gs.Label[l.Key] = append(gs.Label[l.Key], l.Str)
			}
		}
		g.Sample = append(g.Sample, gs)
	}
	return g
}

// fromGoogle converts a parsed pprof profile into the decoded form the
// Builder takes, standing in for the module's own decoder.
func fromGoogle(g *pprofprofile.Profile) *pprofdecode.Profile {
	p := &pprofdecode.Profile{DefaultSampleType: g.DefaultSampleType, Period: g.Period, TimeNanos: g.TimeNanos, DurationNanos: g.DurationNanos}
	if g.PeriodType != nil {
		p.PeriodType = pprofdecode.ValueType{Type: g.PeriodType.Type, Unit: g.PeriodType.Unit}
	}
	for _, st := range g.SampleType {
		p.SampleTypes = append(p.SampleTypes, pprofdecode.ValueType{Type: st.Type, Unit: st.Unit})
	}
	mapIdx := map[*pprofprofile.Mapping]int32{}
	for i, m := range g.Mapping {
		mapIdx[m] = int32(i)
		p.Mappings = append(p.Mappings, pprofdecode.Mapping{Start: m.Start, Limit: m.Limit, Offset: m.Offset, File: m.File, BuildID: m.BuildID,
			HasFunctions: m.HasFunctions, HasFilenames: m.HasFilenames, HasLineNumbers: m.HasLineNumbers, HasInlineFrames: m.HasInlineFrames})
	}
	fnIdx := map[*pprofprofile.Function]int32{}
	for i, f := range g.Function {
		fnIdx[f] = int32(i)
		p.Functions = append(p.Functions, pprofdecode.Function{Name: f.Name, SystemName: f.SystemName, Filename: f.Filename, StartLine: f.StartLine})
	}
	locIdx := map[*pprofprofile.Location]int32{}
	for i, l := range g.Location {
		locIdx[l] = int32(i)
		loc := pprofdecode.Location{Mapping: -1, Address: l.Address, IsFolded: l.IsFolded}
		if l.Mapping != nil {
			loc.Mapping = mapIdx[l.Mapping]
		}
		for _, ln := range l.Line {
			loc.Lines = append(loc.Lines, pprofdecode.Line{Function: fnIdx[ln.Function], Line: ln.Line, Column: ln.Column})
		}
		p.Locations = append(p.Locations, loc)
	}
	for _, s := range g.Sample {
		ps := pprofdecode.Sample{Values: append([]int64(nil), s.Value...)}
		for _, l := range s.Location {
			ps.Locations = append(ps.Locations, locIdx[l])
		}
		for k, vs := range s.Label {
			for _, v := range vs {
				ps.Labels = append(ps.Labels, pprofdecode.Label{Key: k, Str: v})
			}
		}
		for k, vs := range s.NumLabel {
			for i, v := range vs {
				l := pprofdecode.Label{Key: k, Num: v, IsNum: true}
				if i < len(s.NumUnit[k]) {
					l.NumUnit = s.NumUnit[k][i]
				}
				ps.Labels = append(ps.Labels, l)
			}
		}
		p.Samples = append(p.Samples, ps)
	}
	return p
}

// roundTrip builds a request from inputs and checks that Convert gives
// back, for every input and sample type, the stack totals of the input.
func roundTrip(t *testing.T, inputs []otlp.Input) map[string]*pprofprofile.Profile {
	t.Helper()
	start := time.Unix(1700000000, 0)
	req := otlp.NewBuilder(nil, nil).Build(start, start.Add(time.Second), inputs)
	if err := otlptest.Validate(req); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	got, _, err := pprofconv.Convert([]pprofconv.Request{{Source: "request", Request: req}}, pprofconv.Filter{})
	if err != nil {
		t.Fatalf("Convert: %v", err)
	}
	if len(got) != len(inputs) {
		t.Fatalf("Convert returned %d profiles, want %d", len(got), len(inputs))
	}
	for _, in := range inputs {
		g := got[in.Name]
		if g == nil {
			t.Fatalf("Convert lost profile %q", in.Name)
		}
		want := toGoogle(in.Profile)
		if len(g.SampleType) != len(want.SampleType) {
			t.Fatalf("%s: %d sample types, want %d", in.Name, len(g.SampleType), len(want.SampleType))
		}
		for i, st := range want.SampleType {
			if g.SampleType[i].Type != st.Type || g.SampleType[i].Unit != st.Unit {
				t.Errorf("%s: sample type %d = %s/%s, want %s/%s", in.Name, i, g.SampleType[i].Type, g.SampleType[i].Unit, st.Type, st.Unit)
			}
			gotTotals, wantTotals := otlptest.StackTotals(g, i), otlptest.StackTotals(want, i)
			if !maps.Equal(gotTotals, wantTotals) {
				t.Errorf("%s/%s: stack totals differ\n got: %v\nwant: %v", in.Name, st.Type, gotTotals, wantTotals)
			}
		}
	}
	return got
}

func TestConvertFixture(t *testing.T) {
	got := roundTrip(t, otlptest.FixtureInputs())

	tests := []struct {
		profile string
		index   int
		key     string
		want    int64
	}{
		{"heap", 1, "runtime.mallocgc:950;strings.Repeat:33;main.alloc:7;main.handle:25;main.main:12|", 2048},
		{"heap", 3, "strings.Repeat:33;main.alloc:7;main.handle:25;main.main:12|", 300},
		{"cpu", 1, "main.handle:25;main.main:12|span_id=" + otlptest.FixtureSpanID + ",trace_id=" + otlptest.FixtureTraceID, 10000005},
		{"cpu", 0, "main.handle:25;main.main:12|span_id=00f067aa0ba902b7,trace_id=XYZ", 2},
		{"block", 1, "sync.(*Mutex).Unlock:60;main.handle:25;main.main:12|", 7000},
	}
	for _, tt := range tests {
		if v := otlptest.StackTotals(got[tt.profile], tt.index)[tt.key]; v != tt.want {
			t.Errorf("%s[%d] %q = %d, want %d", tt.profile, tt.index, tt.key, v, tt.want)
		}
	}
	if !got["mutex"].Location[0].IsFolded {
		t.Errorf("the folded location lost its flag")
	}
	if got["heap"].DefaultSampleType != "inuse_space" {
		t.Errorf("heap default sample type = %q", got["heap"].DefaultSampleType)
	}
}

//go:noinline
func allocSmall(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = make([]byte, 64)
	}
	return out
}

//go:noinline
func allocLarge(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = make([]byte, 4096)
	}
	return out
}

var sink [][]byte

func TestConvertRuntimeHeap(t *testing.T) {
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = old }()
	sink = append(allocSmall(1000), allocLarge(100)...)
	runtime.GC()
	runtime.GC()

	var buf bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&buf, 0); err != nil {
		t.Fatal(err)
	}
	g, err := pprofprofile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	in := fromGoogle(g)
	got := roundTrip(t, []otlp.Input{{Name: "heap", Profile: in}})["heap"]

	// The allocating functions must show up with their allocations.
	allocated := map[string]int64{}
	for key, v := range otlptest.StackTotals(got, 1) { // alloc_space
		for _, fn := range []string{"allocSmall", "allocLarge"} {
			if strings.Contains(strings.SplitN(key, ";", 2)[0], fn) {
				allocated[fn] += v
			}
		}
	}
	if allocated["allocSmall"] < 1000*64 || allocated["allocLarge"] < 100*4096 {
		t.Errorf("alloc_space of allocSmall = %d (want >= %d), allocLarge = %d (want >= %d)",
			allocated["allocSmall"], 1000*64, allocated["allocLarge"], 100*4096)
	}
	sink = nil
}

// TestToPprofCPUSentOnce checks that a CPU profile whose cpu/nanoseconds is
// samples/count times the period travels as one Profile and comes back with
// both sample types, in runtime/pprof's order and names.
func TestToPprofCPUSentOnce(t *testing.T) {
	in := otlptest.FixtureInputs()[1]
	if in.Name != "cpu" {
		t.Fatalf("fixture input 1 is %q, want cpu", in.Name)
	}
	p := *in.Profile
	p.Samples = slices.Clone(p.Samples)
	for i := range p.Samples {
		v := slices.Clone(p.Samples[i].Values)
		v[1] = v[0] * p.Period
		p.Samples[i].Values = v
	}
	in.Profile = &p
	req := otlp.NewBuilder(nil, nil).Build(time.Unix(1, 0), time.Unix(2, 0), []otlp.Input{in})
	if n := len(req.ResourceProfiles[0].ScopeProfiles[0].Profiles); n != 1 {
		t.Fatalf("CPU sent as %d Profiles, want 1", n)
	}
	got := roundTrip(t, []otlp.Input{in})["cpu"]
	if st := got.SampleType; len(st) != 2 || st[0].Type != "samples" || st[1].Type != "cpu" || st[1].Unit != "nanoseconds" {
		t.Fatalf("sample types %v, want samples/count, cpu/nanoseconds", st)
	}
	if got.PeriodType == nil || got.PeriodType.Type != "cpu" || got.Period != p.Period {
		t.Errorf("period %v %d, want cpu/nanoseconds %d", got.PeriodType, got.Period, p.Period)
	}
}

// TestConvertOffCPU converts an off-CPU profile, whose samples carry a
// value per wait and its timestamp: pprof gets each stack's waits added
// up, with the reason as a label, and no times.
func TestConvertOffCPU(t *testing.T) {
	start := time.Unix(1700000000, 0)
	p := otlptest.OffCPUFixture(start)
	got := roundTrip(t, []otlp.Input{{Name: "offcpu", Profile: p}})["offcpu"]
	byReason := map[string]int64{}
	for _, s := range got.Sample {
		byReason[s.Label["wait_reason"][0]] += s.Value[0]
	}
	if want := map[string]int64{"chan receive": 350, "sleep": 100, "select": 7}; !maps.Equal(byReason, want) {
		t.Errorf("waits by reason %v, want %v", byReason, want)
	}
	if len(got.Sample) != 3 {
		t.Errorf("%d pprof samples, want one per stack and reason (3)", len(got.Sample))
	}
}
