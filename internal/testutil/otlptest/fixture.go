package otlptest

import (
	"time"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/collect/requests"
	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/labels"
)

// Values used by FixtureInputs.
const (
	FixtureExecutable = "/app/server"
	FixtureGoBuildID  = "go-build-id/fixture"
	FixtureTraceID    = "0af7651916cd43dd8448eb211c80319c"
	FixtureSpanID     = "b7ad6b7169203331"
	fixtureOtherSpan  = "00f067aa0ba902b7"
)

// FixtureInputs returns hand-built decoded profiles of one imaginary
// program: a heap, a cpu, a mutex and a block profile. They were decoded
// separately, so each has its own copy of the same functions, locations and
// mappings, in a different order for the cpu profile. They cover inlined
// frames, a folded location, numeric and string labels, a valid trace link
// shared by two samples, a malformed trace id, two samples to be merged,
// zero values, and a function that only zero-valued samples use.
// Every call returns fresh values.
func FixtureInputs() []otlp.Input {
	heap := program(false)
	heap.SampleTypes = []pprofdecode.ValueType{
		{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
		{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"},
	}
	heap.PeriodType = pprofdecode.ValueType{Type: "space", Unit: "bytes"}
	heap.Period = 524288
	heap.DefaultSampleType = "inuse_space"
	l := heap.loc
	heap.Samples = []pprofdecode.Sample{
		{Locations: []int32{l["mallocgc"], l["alloc"], l["handle"], l["main"]}, Values: []int64{2, 2048, 1, 1024},
			Labels: []pprofdecode.Label{{Key: "bytes", Num: 1024, IsNum: true}}},
		{Locations: []int32{l["alloc"], l["handle"], l["main"]}, Values: []int64{0, 0, 3, 300}},
		{Locations: []int32{l["unused"], l["main"]}, Values: []int64{0, 0, 0, 0}},
	}

	cpu := program(true)
	cpu.SampleTypes = []pprofdecode.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}
	cpu.PeriodType = pprofdecode.ValueType{Type: "cpu", Unit: "nanoseconds"}
	cpu.Period = 10000000
	l = cpu.loc
	traced := []pprofdecode.Label{
		{Key: labels.SpanIDKey, Str: FixtureSpanID},
		{Key: "worker", Num: 7, NumUnit: "requests", IsNum: true},
		{Key: labels.TraceIDKey, Str: FixtureTraceID},
	}
	cpu.Samples = []pprofdecode.Sample{
		{Locations: []int32{l["alloc"], l["handle"], l["main"]}, Values: []int64{3, 30000000},
			Labels: []pprofdecode.Label{{Key: labels.TraceIDKey, Str: FixtureTraceID}, {Key: labels.SpanIDKey, Str: FixtureSpanID}, {Key: "route", Str: "/api"}}},
		{Locations: []int32{l["handle"], l["main"]}, Values: []int64{1, 10000000}, Labels: traced},
		{Locations: []int32{l["handle"], l["main"]}, Values: []int64{2, 0},
			Labels: []pprofdecode.Label{{Key: labels.TraceIDKey, Str: "XYZ"}, {Key: labels.SpanIDKey, Str: fixtureOtherSpan}}},
		// Same identity as the second sample, labels in another order.
		{Locations: []int32{l["handle"], l["main"]}, Values: []int64{1, 5},
			Labels: []pprofdecode.Label{traced[2], traced[0], traced[1]}},
	}

	mutex := program(false)
	mutex.SampleTypes = []pprofdecode.ValueType{{Type: "contentions", Unit: "count"}, {Type: "delay", Unit: "nanoseconds"}}
	mutex.PeriodType = pprofdecode.ValueType{Type: "contentions", Unit: "count"}
	mutex.Period = 1
	l = mutex.loc
	mutex.Samples = []pprofdecode.Sample{
		{Locations: []int32{l["unlock"], l["handle"], l["main"]}, Values: []int64{5, 5000}},
	}

	block := program(false)
	block.SampleTypes = mutex.SampleTypes
	block.PeriodType = mutex.PeriodType
	block.Period = 1
	l = block.loc
	block.Samples = []pprofdecode.Sample{
		{Locations: []int32{l["unlock"], l["handle"], l["main"]}, Values: []int64{7, 7000}},
		{Locations: []int32{l["unlock"], l["main"]}, Values: []int64{0, 0}},
	}

	return []otlp.Input{
		{Name: "heap", Profile: &heap.Profile},
		{Name: "cpu", Profile: &cpu.Profile},
		{Name: "mutex", Profile: &mutex.Profile},
		{Name: "block", Profile: &block.Profile},
	}
}

// RequestsFixture returns the request counts profile the collector adds
// to a window: 3 requests of /api and 2 of routes past the bound, each
// route a sample on a frame named after it.
func RequestsFixture() *pprofdecode.Profile {
	p := &pprofdecode.Profile{
		SampleTypes:       []pprofdecode.ValueType{{Type: "requests", Unit: "count"}},
		DefaultSampleType: "requests",
		PeriodType:        pprofdecode.ValueType{Type: "requests", Unit: "count"},
		Period:            1,
	}
	for i, e := range []struct {
		route string
		n     int64
	}{{"/api", 3}, {"_other", 2}} {
		p.Functions = append(p.Functions, pprofdecode.Function{Name: e.route, SystemName: e.route})
		p.Locations = append(p.Locations, pprofdecode.Location{Mapping: -1, Lines: []pprofdecode.Line{{Function: int32(i)}}})
		p.Samples = append(p.Samples, pprofdecode.Sample{Locations: []int32{int32(i)}, Values: []int64{e.n},
			Labels: []pprofdecode.Label{{Key: "route", Str: e.route}}})
	}
	return p
}

type fixtureProgram struct {
	pprofdecode.Profile
	loc map[string]int32
}

// program returns the functions, locations and mappings of the imaginary
// program, in reverse order when reversed is set.
func program(reversed bool) *fixtureProgram {
	fn := []pprofdecode.Function{
		{Name: "main.main", SystemName: "main.main", Filename: "main.go", StartLine: 10},
		{Name: "main.handle", SystemName: "main.handle", Filename: "main.go", StartLine: 20},
		{Name: "main.alloc", SystemName: "main.alloc", Filename: "alloc.go", StartLine: 5},
		{Name: "runtime.mallocgc", SystemName: "runtime.mallocgc", Filename: "malloc.go", StartLine: 900},
		{Name: "strings.Repeat", SystemName: "strings.Repeat", Filename: "strings.go", StartLine: 30},
		{Name: "sync.(*Mutex).Unlock", SystemName: "sync.(*Mutex).Unlock", Filename: "mutex.go", StartLine: 50},
		{Name: "main.unused", SystemName: "main.unused", Filename: "unused.go", StartLine: 1},
	}
	maps := []pprofdecode.Mapping{
		{Start: 0x400000, Limit: 0x800000, File: FixtureExecutable, BuildID: "c0ffee",
			HasFunctions: true, HasFilenames: true, HasLineNumbers: true},
		{Start: 0x7f0000000000, Limit: 0x7f0000100000, Offset: 0x1000, File: "/lib/libunused.so", BuildID: "dead"},
	}
	type loc struct {
		name string
		l    pprofdecode.Location
	}
	locs := []loc{
		{"main", pprofdecode.Location{Mapping: 0, Address: 0x401000, Lines: []pprofdecode.Line{{Function: 0, Line: 12}}}},
		{"handle", pprofdecode.Location{Mapping: 0, Address: 0x402000, Lines: []pprofdecode.Line{{Function: 1, Line: 25}}}},
		{"alloc", pprofdecode.Location{Mapping: 0, Address: 0x403000, Lines: []pprofdecode.Line{{Function: 4, Line: 33}, {Function: 2, Line: 7}}}},
		{"mallocgc", pprofdecode.Location{Mapping: 0, Address: 0x404000, Lines: []pprofdecode.Line{{Function: 3, Line: 950, Column: 4}}}},
		{"unlock", pprofdecode.Location{Mapping: 0, Address: 0x405000, IsFolded: true, Lines: []pprofdecode.Line{{Function: 5, Line: 60}}}},
		{"unused", pprofdecode.Location{Mapping: 1, Address: 0x7f0000000100, Lines: []pprofdecode.Line{{Function: 6, Line: 3}}}},
	}
	if reversed {
		n := int32(len(fn))
		for i := range locs {
			for j := range locs[i].l.Lines {
				locs[i].l.Lines[j].Function = n - 1 - locs[i].l.Lines[j].Function
			}
		}
		for i, j := 0, len(fn)-1; i < j; i, j = i+1, j-1 {
			fn[i], fn[j] = fn[j], fn[i]
		}
		for i, j := 0, len(locs)-1; i < j; i, j = i+1, j-1 {
			locs[i], locs[j] = locs[j], locs[i]
		}
	}
	p := &fixtureProgram{loc: make(map[string]int32)}
	p.Functions = fn
	p.Mappings = maps
	for i, l := range locs {
		p.Locations = append(p.Locations, l.l)
		p.loc[l.name] = int32(i)
	}
	return p
}

// OffCPUFixture returns an off-CPU profile of waits in the second after
// start: chan receive waits of 300 and 50 ns on recv, one of 7 ns in
// select on recv, a sleep of 100 ns, and a wait of 0 ns that is not sent.
// Each wait is an event with its start time; the chan receive waits come
// in two samples of the same stack and labels, which are sent as one.
func OffCPUFixture(start time.Time) *pprofdecode.Profile {
	at := func(ms int64) int64 { return start.Add(time.Duration(ms) * time.Millisecond).UnixNano() }
	reason := func(r string) []pprofdecode.Label { return []pprofdecode.Label{{Key: "wait_reason", Str: r}} }
	return &pprofdecode.Profile{
		SampleTypes: []pprofdecode.ValueType{{Type: "off_cpu", Unit: "nanoseconds"}},
		Functions:   []pprofdecode.Function{{Name: "recv"}, {Name: "sleep"}},
		Locations: []pprofdecode.Location{
			{Mapping: -1, Address: 0x10, Lines: []pprofdecode.Line{{Function: 0}}},
			{Mapping: -1, Address: 0x20, Lines: []pprofdecode.Line{{Function: 1}}},
		},
		Samples: []pprofdecode.Sample{
			{Locations: []int32{0}, Labels: reason("chan receive"), Values: []int64{300},
				Events: []pprofdecode.Event{{Value: 300, TimeNanos: at(10)}}},
			{Locations: []int32{1}, Labels: reason("sleep"), Values: []int64{100},
				Events: []pprofdecode.Event{{Value: 100, TimeNanos: at(20)}}},
			{Locations: []int32{0}, Labels: reason("chan receive"), Values: []int64{50},
				Events: []pprofdecode.Event{{Value: 50, TimeNanos: at(30)}, {Value: 0, TimeNanos: at(50)}}},
			{Locations: []int32{0}, Labels: reason("select"), Values: []int64{7},
				Events: []pprofdecode.Event{{Value: 7, TimeNanos: at(40)}}},
		},
	}
}

// Values used by SlowFixture: its second request's ids.
const (
	SlowFixtureTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	SlowFixtureSpanID  = "00f067aa0ba902b7"
)

// SlowFixture returns a slow-request profile of two requests in the
// second after start, as the off-CPU recorder builds it: one of 250 ms on
// route /lock (FixtureTraceID, FixtureSpanID), 200 ms of it waiting on
// a mutex under main.handleLock (the first 50 ms before the trace began),
// 10 ms runnable and 40 ms on CPU; and one of 120 ms on /cpu, 100 ms on
// CPU in main.hash and 20 ms waiting on the network. Each interval is an
// event with its start time.
func SlowFixture(start time.Time) *pprofdecode.Profile {
	at := func(ms int64) int64 { return start.Add(time.Duration(ms) * time.Millisecond).UnixNano() }
	const ms = int64(time.Millisecond)
	fns := []string{"main.main", "main.handleLock", "sync.(*Mutex).Lock", "main.handleCPU", "main.hash", "internal/poll.(*FD).Read"}
	p := &pprofdecode.Profile{
		SampleTypes:       []pprofdecode.ValueType{{Type: "wall", Unit: "nanoseconds"}},
		DefaultSampleType: "wall",
		PeriodType:        pprofdecode.ValueType{Type: "wall", Unit: "nanoseconds"},
		Period:            1,
		TimeNanos:         start.UnixNano(),
		DurationNanos:     int64(time.Second),
	}
	for i, f := range fns {
		p.Functions = append(p.Functions, pprofdecode.Function{Name: f, SystemName: f, Filename: "main.go"})
		p.Locations = append(p.Locations, pprofdecode.Location{Mapping: -1, Address: uint64(0x1000 * (i + 1)),
			Lines: []pprofdecode.Line{{Function: int32(i), Line: int64(10 * (i + 1))}}})
	}
	lbl := func(ids [2]string, route, state, reason string, before bool) []pprofdecode.Label {
		l := []pprofdecode.Label{{Key: "goroutine_state", Str: state}}
		if reason != "" {
			l = append(l, pprofdecode.Label{Key: "wait_reason", Str: reason})
		}
		if before {
			l = append(l, pprofdecode.Label{Key: "before_trace", Str: "true"})
		}
		l = append(l, pprofdecode.Label{Key: requests.RouteKey, Str: route})
		return append(l, pprofdecode.Label{Key: labels.SpanIDKey, Str: ids[1]}, pprofdecode.Label{Key: labels.TraceIDKey, Str: ids[0]})
	}
	lock := [2]string{FixtureTraceID, FixtureSpanID}
	cpu := [2]string{SlowFixtureTraceID, SlowFixtureSpanID}
	sample := func(locs []int32, l []pprofdecode.Label, events ...pprofdecode.Event) pprofdecode.Sample {
		var v int64
		for _, e := range events {
			v += e.Value
		}
		return pprofdecode.Sample{Locations: locs, Labels: l, Values: []int64{v}, Events: events}
	}
	p.Samples = []pprofdecode.Sample{
		sample([]int32{2, 1, 0}, lbl(lock, "/lock", "off_cpu", "sync", true), pprofdecode.Event{Value: 50 * ms, TimeNanos: at(0)}),
		sample([]int32{2, 1, 0}, lbl(lock, "/lock", "off_cpu", "sync", false), pprofdecode.Event{Value: 150 * ms, TimeNanos: at(50)}),
		sample([]int32{2, 1, 0}, lbl(lock, "/lock", "runnable", "", false), pprofdecode.Event{Value: 10 * ms, TimeNanos: at(200)}),
		sample([]int32{1, 0}, lbl(lock, "/lock", "on_cpu", "", false),
			pprofdecode.Event{Value: 15 * ms, TimeNanos: at(210)}, pprofdecode.Event{Value: 25 * ms, TimeNanos: at(225)}),
		sample([]int32{4, 3, 0}, lbl(cpu, "/cpu", "on_cpu", "", false), pprofdecode.Event{Value: 100 * ms, TimeNanos: at(300)}),
		sample([]int32{5, 3, 0}, lbl(cpu, "/cpu", "off_cpu", "network", false), pprofdecode.Event{Value: 20 * ms, TimeNanos: at(400)}),
	}
	return p
}
