package splunk

import (
	"flag"
	"fmt"
	"github.com/pprofotel/profiler/internal/convert/splunk/splunktest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/convert/otlp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const (
	traceID = "0af7651916cd43dd8448eb211c80319c"
	spanID  = "b7ad6b7169203331"
)

var (
	windowStart = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	windowEnd   = windowStart.Add(10 * time.Second)
	// midpointMs is source.event.time for the hand-built window.
	midpointMs = windowStart.Add(5 * time.Second).UnixMilli()
)

// repeat returns n copies of location index li.
func repeat(li int32, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = li
	}
	return out
}

// handLocations are shared by the hand-built profiles: location 0 holds
// main.work inlined into main.handle, 1 is main.main, 2 has no symbols, and
// 3 (unused.fn) belongs to no reported sample.
func handLocations() ([]pprofdecode.Location, []pprofdecode.Function, []pprofdecode.Mapping) {
	funcs := []pprofdecode.Function{
		{Name: "main.work", SystemName: "main.work", Filename: "main.go", StartLine: 8},
		{Name: "main.handle", SystemName: "main.handle", Filename: "main.go", StartLine: 18},
		{Name: "main.main", SystemName: "main.main", Filename: "main.go", StartLine: 28},
		{Name: "unused.fn", SystemName: "unused.fn", Filename: "unused.go", StartLine: 1},
	}
	locs := []pprofdecode.Location{
		{Mapping: 0, Address: 0x401000, Lines: []pprofdecode.Line{{Function: 0, Line: 10}, {Function: 1, Line: 20}}},
		{Mapping: 0, Address: 0x402000, Lines: []pprofdecode.Line{{Function: 2, Line: 30}}},
		{Mapping: 0, Address: 0x403000},
		{Mapping: -1, Address: 0x404000, Lines: []pprofdecode.Line{{Function: 3, Line: 2}}},
	}
	maps := []pprofdecode.Mapping{{Start: 0x400000, Limit: 0x500000, File: "/bin/app", BuildID: "abc", HasFunctions: true}}
	return locs, funcs, maps
}

func handCPU() *pprofdecode.Profile {
	locs, funcs, maps := handLocations()
	ms := int64(time.Millisecond)
	return &pprofdecode.Profile{
		SampleTypes:       []pprofdecode.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		DefaultSampleType: "cpu",
		PeriodType:        pprofdecode.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:            10 * ms,
		Samples: []pprofdecode.Sample{
			// Seen 3 times inside a span, with an application label.
			{Locations: []int32{0, 1}, Values: []int64{3, 30 * ms}, Labels: []pprofdecode.Label{
				{Key: "handler", Str: "checkout"},
				{Key: "trace_id", Str: traceID},
				{Key: "span_id", Str: spanID},
			}},
			// Outside any span; its label on a key the conventions own
			// must not survive.
			{Locations: []int32{1}, Values: []int64{1, 10 * ms}, Labels: []pprofdecode.Label{
				{Key: "source.event.time", Num: 5, IsNum: true},
			}},
			// At the runtime's CPU stack limit: truncated.
			{Locations: repeat(2, 64), Values: []int64{2, 21 * ms}},
			// One frame short of the limit: complete.
			{Locations: repeat(2, 63), Values: []int64{1, 10 * ms}},
			{Locations: []int32{3}, Values: []int64{0, 0}},
		},
		Locations: locs, Functions: funcs, Mappings: maps,
	}
}

func handHeap() *pprofdecode.Profile {
	locs, funcs, maps := handLocations()
	return &pprofdecode.Profile{
		SampleTypes: []pprofdecode.ValueType{
			{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
			{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"},
		},
		DefaultSampleType: "inuse_space",
		PeriodType:        pprofdecode.ValueType{Type: "space", Unit: "bytes"},
		Period:            512 * 1024,
		Samples: []pprofdecode.Sample{
			{Locations: []int32{0, 1}, Values: []int64{2, 2048, 0, 0}},
			// Live but allocated nothing in the window: left out.
			{Locations: []int32{3}, Values: []int64{0, 0, 5, 500}},
			// At the default heap stack limit.
			{Locations: repeat(2, 128), Values: []int64{1, 4096, 1, 4096}},
		},
		Locations: locs, Functions: funcs, Mappings: maps,
	}
}

func handWindow(profiles ...collect.Profile) collect.Window {
	return collect.Window{Start: windowStart, End: windowEnd, Profiles: profiles}
}

// request builds the OTLP profiles request of w as the profiler does, the
// input of Encode.
func request(w collect.Window) *collectorpb.ExportProfilesServiceRequest {
	b := otlp.NewBuilder(testResource(), &commonpb.InstrumentationScope{Name: "github.com/pprofotel/profiler"})
	inputs := make([]otlp.Input, len(w.Profiles))
	for i, p := range w.Profiles {
		inputs[i] = otlp.Input{Name: p.Name, Profile: p.Data, Start: p.Start, End: p.End}
	}
	return b.Build(w.Start, w.End, inputs)
}

// encodeWindow encodes the request of w.
// A zero opts.Convert takes toPprof.
func encodeWindow(w collect.Window, opts EncodeOptions) (*collogspb.ExportLogsServiceRequest, error) {
	if opts.Convert == nil {
		opts.Convert = toPprof
	}
	return Encode(request(w), opts)
}

func testResource() *resourcepb.Resource {
	return &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
		{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "checkout"}}},
	}}
}

// TestEncodeGolden pins the whole request for the hand-built window: the
// envelope, and each body decoded back into pprof.
func TestEncodeGolden(t *testing.T) {
	w := handWindow(collect.Profile{Name: collect.CPU, Data: handCPU()}, collect.Profile{Name: collect.Heap, Data: handHeap()})
	req, err := encodeWindow(w, EncodeOptions{Convert: toPprof})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rl := req.ResourceLogs[0]
	for _, kv := range rl.Resource.Attributes {
		fmt.Fprintf(&b, "resource %s=%s\n", kv.Key, attrString(kv.Value))
	}
	for _, sl := range rl.ScopeLogs {
		fmt.Fprintf(&b, "scope %s %s\n", sl.Scope.Name, sl.Scope.Version)
		for _, r := range sl.LogRecords {
			fmt.Fprintf(&b, "record time=%d observed=%d\n", r.TimeUnixNano, r.ObservedTimeUnixNano)
			for _, kv := range r.Attributes {
				fmt.Fprintf(&b, "  attr %s=%s\n", kv.Key, attrString(kv.Value))
			}
			splunktest.RenderProfile(&b, splunktest.DecodeBody(t, r))
		}
	}
	compareGolden(t, "window.golden", b.String())
}

func attrString(v *commonpb.AnyValue) string {
	switch v := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		return strconv.Quote(v.StringValue)
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(v.IntValue, 10)
	}
	return fmt.Sprintf("%T", v.Value)
}

func compareGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestEncode(t *testing.T) {
	ms := int64(time.Millisecond)
	cpu := collect.Profile{Name: collect.CPU, Data: handCPU()}
	heap := collect.Profile{Name: collect.Heap, Data: handHeap()}
	tests := []struct {
		name   string
		window collect.Window
		opts   EncodeOptions
		// want per data type: samples, total frames, sum of the first
		// value, truncated samples, samples with a trace id.
		want map[string][5]int64
	}{
		{
			name:   "cpu and allocation",
			window: handWindow(cpu, heap),
			want: map[string][5]int64{
				// 3 copies of 3 frames, 1 of 1, 2 of 64, 1 of 63.
				"cpu":        {7, 3*3 + 1 + 2*64 + 63, 7, 2, 3},
				"allocation": {2, 3 + 128, 2048 + 4096, 1, 0},
			},
		},
		{
			name:   "without the heap profile, no allocation record",
			window: handWindow(cpu),
			want:   map[string][5]int64{"cpu": {7, 201, 7, 2, 3}},
		},
		{
			name:   "other profiles are left out",
			window: handWindow(collect.Profile{Name: collect.Goroutine, Data: handCPU()}, cpu),
			want:   map[string][5]int64{"cpu": {7, 201, 7, 2, 3}},
		},
		{
			name:   "deeper profstackdepth: the 128-frame heap stack is complete",
			window: handWindow(heap),
			opts:   EncodeOptions{Convert: toPprof, MemoryStackDepth: 200},
			want:   map[string][5]int64{"allocation": {2, 131, 6144, 0, 0}},
		},
		{
			name:   "shallower profstackdepth",
			window: handWindow(heap),
			opts:   EncodeOptions{Convert: toPprof, MemoryStackDepth: 3},
			want:   map[string][5]int64{"allocation": {2, 131, 6144, 2, 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := encodeWindow(tt.window, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(req.ResourceLogs[0].Resource, testResource()) {
				t.Errorf("resource = %v", req.ResourceLogs[0].Resource)
			}
			recs := splunktest.Records(t, req)
			if len(recs) != len(tt.want) {
				t.Fatalf("record types %v, want %v", keys(recs), tt.want)
			}
			for typ, want := range tt.want {
				r := recs[typ]
				if r == nil {
					t.Fatalf("no %s record", typ)
				}
				if r.TimeUnixNano != uint64(windowStart.Add(5*time.Second).UnixNano()) ||
					r.ObservedTimeUnixNano != uint64(windowEnd.UnixNano()) {
					t.Errorf("%s: time %d observed %d, want the window's midpoint and end", typ, r.TimeUnixNano, r.ObservedTimeUnixNano)
				}
				p := splunktest.DecodeBody(t, r)
				var got [5]int64
				for _, s := range p.Sample {
					got[0]++
					got[1] += int64(splunktest.Depth(s))
					got[2] += s.Value[0]
					if splunktest.SampleLabel(s, "thread.stack.truncated") == "true" {
						got[3]++
					}
					if splunktest.SampleLabel(s, "trace_id") != "" {
						got[4]++
						if splunktest.SampleLabel(s, "trace_id") != traceID || splunktest.SampleLabel(s, "span_id") != spanID ||
							splunktest.SampleLabel(s, "handler") != "checkout" {
							t.Errorf("%s: labels %v", typ, s.Label)
						}
					}
					if tl := s.NumLabel["source.event.time"]; len(tl) != 1 || tl[0] != midpointMs {
						t.Errorf("%s: source.event.time = %v, want [%d]", typ, tl, midpointMs)
					}
					period := s.NumLabel["source.event.period"]
					if typ == "cpu" && (len(period) != 1 || period[0] != 10) {
						t.Errorf("cpu: source.event.period = %v, want [10]", period)
					}
					if typ == "allocation" && period != nil {
						t.Errorf("allocation: source.event.period = %v, want none", period)
					}
					for _, f := range p.Function {
						if f.Name == "unused.fn" {
							t.Errorf("%s: function of an unreported stack was copied", typ)
						}
					}
				}
				if got != want {
					t.Errorf("%s: samples, frames, value sum, truncated, traced = %v, want %v", typ, got, want)
				}
				if fc := splunktest.Attributes(r)["profiling.data.total.frame.count"]; fc != strconv.FormatInt(want[1], 10) {
					t.Errorf("%s: profiling.data.total.frame.count = %s, want %d", typ, fc, want[1])
				}
				if typ == "cpu" {
					var cpuNs int64
					for _, s := range p.Sample {
						cpuNs += s.Value[1]
					}
					if cpuNs != 71*ms {
						t.Errorf("cpu: total %d ns, want %d: the copies must sum to the runtime's values", cpuNs, 71*ms)
					}
				}
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestEncodeNothingToSend(t *testing.T) {
	zero := handCPU()
	zero.Samples = zero.Samples[4:] // only the all-zero sample
	for name, req := range map[string]*collectorpb.ExportProfilesServiceRequest{
		"empty request":     {},
		"no profiles":       request(handWindow()),
		"only zero samples": request(handWindow(collect.Profile{Name: collect.CPU, Data: zero})),
		"goroutine profile": request(handWindow(collect.Profile{Name: collect.Goroutine, Data: handCPU()})),
	} {
		t.Run(name, func(t *testing.T) {
			logs, err := Encode(req, EncodeOptions{Convert: toPprof})
			if err != nil || logs != nil {
				t.Fatalf("Encode = %v, %v; want nil, nil", logs, err)
			}
		})
	}
}

func TestEncodeInvalidProfile(t *testing.T) {
	bad := request(handWindow(collect.Profile{Name: collect.CPU, Data: handCPU()}))
	bad.Dictionary.StackTable[1].LocationIndices[0] = 99
	_, err := Encode(bad, EncodeOptions{Convert: toPprof})
	if err == nil || !strings.Contains(err.Error(), "location index 99") {
		t.Fatalf("err = %v, want one naming location index 99", err)
	}
	noAlloc := handHeap()
	noAlloc.SampleTypes = noAlloc.SampleTypes[2:]
	for i := range noAlloc.Samples {
		noAlloc.Samples[i].Values = noAlloc.Samples[i].Values[2:]
	}
	_, err = encodeWindow(handWindow(collect.Profile{Name: collect.Heap, Data: noAlloc}), EncodeOptions{Convert: toPprof})
	if err == nil || !strings.Contains(err.Error(), "alloc_space") {
		t.Fatalf("err = %v, want one naming alloc_space", err)
	}
}

func BenchmarkEncode(b *testing.B) {
	req := request(handWindow(collect.Profile{Name: collect.CPU, Data: handCPU()}, collect.Profile{Name: collect.Heap, Data: handHeap()}))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(req, EncodeOptions{Convert: toPprof}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuildAndEncode is the Splunk encoding's whole cost per window
// from the runtime's decoded profiles: the OTLP request, which the
// profiler builds for every exporter, then its conversion.
func BenchmarkBuildAndEncode(b *testing.B) {
	w := handWindow(collect.Profile{Name: collect.CPU, Data: handCPU()}, collect.Profile{Name: collect.Heap, Data: handHeap()})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(request(w), EncodeOptions{Convert: toPprof}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEncodeCPUSpan encodes a window whose CPU profile covers only part of
// it, as under a duty cycle: the cpu record's time, its samples'
// source.event.time and its pprof body's time and duration are that part's,
// the allocation record's are the window's. The records are observed at
// the window's end, or at the CPU profile's end when the request holds
// nothing else.
func TestEncodeCPUSpan(t *testing.T) {
	from, to := windowStart.Add(2*time.Second), windowStart.Add(4*time.Second)
	cpu := collect.Profile{Name: collect.CPU, Data: handCPU(), Start: from, End: to}
	req, err := encodeWindow(handWindow(cpu, collect.Profile{Name: collect.Heap, Data: handHeap()}), EncodeOptions{Convert: toPprof})
	if err != nil {
		t.Fatal(err)
	}
	cpuOnly, err := encodeWindow(handWindow(cpu), EncodeOptions{Convert: toPprof})
	if err != nil {
		t.Fatal(err)
	}
	recs := splunktest.Records(t, req)
	for _, tt := range []struct {
		typ        string
		recs       map[string]*logspb.LogRecord
		start, end time.Time
		observed   time.Time
	}{
		{DataTypeCPU, recs, from, to, windowEnd},
		{DataTypeAllocation, recs, windowStart, windowEnd, windowEnd},
		{DataTypeCPU, splunktest.Records(t, cpuOnly), from, to, to},
	} {
		r := tt.recs[tt.typ]
		if r == nil {
			t.Fatalf("no %s record", tt.typ)
		}
		mid := tt.start.Add(tt.end.Sub(tt.start) / 2)
		if r.TimeUnixNano != uint64(mid.UnixNano()) || r.ObservedTimeUnixNano != uint64(tt.observed.UnixNano()) {
			t.Errorf("%s: time %d observed %d, want %d and %d", tt.typ, r.TimeUnixNano, r.ObservedTimeUnixNano, mid.UnixNano(), tt.observed.UnixNano())
		}
		p := splunktest.DecodeBody(t, r)
		if p.TimeNanos != tt.start.UnixNano() || p.DurationNanos != int64(tt.end.Sub(tt.start)) {
			t.Errorf("%s: pprof time %d duration %d, want %d and %d", tt.typ, p.TimeNanos, p.DurationNanos, tt.start.UnixNano(), tt.end.Sub(tt.start))
		}
		for _, s := range p.Sample {
			if got := s.NumLabel["source.event.time"]; len(got) != 1 || got[0] != mid.UnixMilli() {
				t.Errorf("%s: source.event.time %v, want %d", tt.typ, got, mid.UnixMilli())
			}
		}
	}
}

// TestEncodeBoundsCopies checks that a stack counted more often than the
// cpu record's bound on copies, as only a request built elsewhere can be,
// is written once with its values, and the others still one per count.
func TestEncodeBoundsCopies(t *testing.T) {
	cpu := handCPU()
	cpu.Samples = []pprofdecode.Sample{
		{Locations: []int32{1}, Values: []int64{1 << 40, 7}},
		{Locations: []int32{0, 1}, Values: []int64{3, 30 * int64(time.Millisecond)}},
	}
	req, err := encodeWindow(handWindow(collect.Profile{Name: collect.CPU, Data: cpu}), EncodeOptions{Convert: toPprof})
	if err != nil {
		t.Fatal(err)
	}
	p := splunktest.DecodeBody(t, splunktest.Records(t, req)[DataTypeCPU])
	var got [][]int64
	for _, s := range p.Sample {
		got = append(got, s.Value)
	}
	want := [][]int64{{1 << 40, 7}, {1, 10e6}, {1, 10e6}, {1, 10e6}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sample values %v, want %v", got, want)
	}
}
