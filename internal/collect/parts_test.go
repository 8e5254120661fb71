package collect

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"runtime/pprof"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	gpprof "github.com/google/pprof/profile"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/collect/requests"
	"github.com/pprofotel/profiler/internal/labelkey"
	"github.com/pprofotel/profiler/internal/testutil/cputest"
	"github.com/pprofotel/profiler/labels"
)

// cpuPart returns a CPU profile recorded from start for a second, in
// pprof's encoding: for each root span id in samples, that many samples
// of 10 ms on the stack main → handler, labelled with the root.
func cpuPart(t testing.TB, start time.Time, samples map[string]int64) []byte {
	t.Helper()
	mapping := &gpprof.Mapping{ID: 1, Start: 0x1000, Limit: 0x9000, File: "/bin/app", HasFunctions: true}
	mainFn := &gpprof.Function{ID: 1, Name: "main.main", SystemName: "main.main", Filename: "main.go"}
	handlerFn := &gpprof.Function{ID: 2, Name: "main.handler", SystemName: "main.handler", Filename: "main.go"}
	mainLoc := &gpprof.Location{ID: 1, Mapping: mapping, Address: 0x2000, Line: []gpprof.Line{{Function: mainFn, Line: 10}}}
	handlerLoc := &gpprof.Location{ID: 2, Mapping: mapping, Address: 0x3000, Line: []gpprof.Line{{Function: handlerFn, Line: 20}}}
	p := &gpprof.Profile{
		SampleType:    []*gpprof.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &gpprof.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        10_000_000,
		TimeNanos:     start.UnixNano(),
		DurationNanos: int64(time.Second),
		Mapping:       []*gpprof.Mapping{mapping},
		Function:      []*gpprof.Function{mainFn, handlerFn},
		Location:      []*gpprof.Location{mainLoc, handlerLoc},
	}
	for _, id := range slices.Sorted(maps.Keys(samples)) {
		n := samples[id]
		p.Sample = append(p.Sample, &gpprof.Sample{
			Location: []*gpprof.Location{handlerLoc, mainLoc},
			Value:    []int64{n, n * 10_000_000},
			Label:    map[string][]string{labelkey.LocalRootSpanID: {id}},
		})
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestMergeParts merges parts of a CPU profile: recurring mappings,
// functions and locations are kept once, samples of one stack and labels
// summed, and the duration runs from the first part's start to the last
// one's end.
func TestMergeParts(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	tests := []struct {
		name  string
		parts []map[string]int64
		want  map[string]int64 // samples by root
	}{
		{"one part", []map[string]int64{{"a": 3}}, map[string]int64{"a": 3}},
		{"same root in two", []map[string]int64{{"a": 3, "b": 1}, {"a": 2}}, map[string]int64{"a": 5, "b": 1}},
		{"disjoint", []map[string]int64{{"a": 1}, {"b": 2}, {"c": 4}}, map[string]int64{"a": 1, "b": 2, "c": 4}},
		{"an empty part", []map[string]int64{{"a": 1}, {}}, map[string]int64{"a": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var parts cpuParts
			var d pprofdecode.Decoder
			for i, samples := range tt.parts {
				p, err := d.Decode(cpuPart(t, t0.Add(time.Duration(i)*time.Second), samples))
				if err != nil {
					t.Fatal(err)
				}
				if err := parts.add(p); err != nil {
					t.Fatal(err)
				}
			}
			p := parts.take()
			if len(p.Mappings) != 1 || len(p.Functions) != 2 || len(p.Locations) != 2 {
				t.Errorf("%d mappings, %d functions, %d locations; want 1, 2, 2", len(p.Mappings), len(p.Functions), len(p.Locations))
			}
			if want := int64(len(tt.parts)) * int64(time.Second); p.TimeNanos != t0.UnixNano() || p.DurationNanos != want {
				t.Errorf("time %d, duration %d; want %d, %d", p.TimeNanos, p.DurationNanos, t0.UnixNano(), want)
			}
			got := map[string]int64{}
			for _, s := range p.Samples {
				if s.Values[1] != s.Values[0]*10_000_000 {
					t.Errorf("sample values %v", s.Values)
				}
				if fn := p.Functions[p.Locations[s.Locations[0]].Lines[0].Function].Name; fn != "main.handler" {
					t.Errorf("leaf %q, want main.handler", fn)
				}
				got[s.Labels[0].Str] += s.Values[0]
			}
			if !maps.Equal(got, tt.want) || len(p.Samples) != len(tt.want) {
				t.Errorf("%d samples %v, want %v", len(p.Samples), got, tt.want)
			}
			if parts.take() != nil {
				t.Error("take did not empty the parts")
			}
		})
	}
}

// TestCPUParts records the CPU profile continuously in parts: a part
// ends when the tracker holds half of MaxRoots renamed roots, the roots
// its samples name are remembered and the others not, and the window's
// CPU profile holds every part's samples, each with its root's final
// route.
func TestCPUParts(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	root := func(n int) string { return fmt.Sprintf("%016x", n) }
	cpu := &recordingCPU{parts: [][]byte{
		cpuPart(t, t0, map[string]int64{root(1): 2}),
		cpuPart(t, t0.Add(time.Second), map[string]int64{root(5): 1, root(1): 1}),
		cpuPart(t, t0.Add(2*time.Second), map[string]int64{root(8): 4}),
	}}
	c, err := New(Config{
		Profiles: []string{CPU}, CPU: CPUProfiler{Start: cpu.start, Stop: cpu.stop},
		Window: time.Minute, MaxRoutes: 10, MaxRoots: 8, Settle: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	c.Start(t0)
	defer c.Abandon()
	if at, ok := c.NextChange(); !ok || !at.Equal(t0.Add(cpuPartCheck)) {
		t.Fatalf("next change %v, %v; want %v", at, ok, t0.Add(cpuPartCheck))
	}
	requestsEnded := func(from, to int) {
		for n := from; n <= to; n++ {
			r := requests.Begin(fmt.Sprintf("%032x%s", n, root(n)), "GET", "", time.Now())
			c.tracker.Sweep(time.Now())
			r.SetName(fmt.Sprint("GET /", n))
			r.End(time.Now())
		}
		c.tracker.Sweep(time.Now())
	}
	// Taken in by the tracker's first sweep, a request is remembered
	// whatever its time.
	c.tracker.Sweep(time.Now())
	// A part is due when the roots pending fill half the room that the
	// remembered ones leave.
	requestsEnded(1, 4) // 4 of 8: due
	c.Change(t0.Add(cpuPartCheck))
	requestsEnded(5, 5) // 1 of 7: not due
	c.Change(t0.Add(2 * cpuPartCheck))
	requestsEnded(6, 7) // 3 of 7: due
	c.Change(t0.Add(3 * cpuPartCheck))
	requestsEnded(8, 8)
	w := c.Collect(t0.Add(time.Minute))
	if cpu.starts != 4 || cpu.stops != 3 {
		t.Errorf("%d starts, %d stops; want 4, 3", cpu.starts, cpu.stops)
	}
	var p *pprofdecode.Profile
	for _, q := range w.Profiles {
		if q.Name == CPU {
			p = q.Data
			if !q.Start.IsZero() {
				t.Errorf("a continuous CPU profile from %v", q.Start)
			}
		}
	}
	if p == nil {
		t.Fatal("no CPU profile")
	}
	got := map[string]int64{}
	for _, s := range p.Samples {
		got[labelMap(s)[requests.RouteKey]] += s.Values[0]
	}
	want := map[string]int64{"GET /1": 3, "GET /5": 1, "GET /8": 4}
	if !maps.Equal(got, want) {
		t.Errorf("samples by route %v, want %v", got, want)
	}
}

// TestCPUPartsOfTheRuntime runs spans renamed as they end, as otelhttp
// around a ServeMux names them, under the runtime's CPU profile, with a
// tracker that remembers few roots: the CPU profile records in many
// parts, and every CPU sample taken in a request carries the request's
// final route. Each request spins for CPU time, so that the samples
// come whatever the machine's load.
func TestCPUPartsOfTheRuntime(t *testing.T) {
	// The window names about as many roots as it has samples, about
	// 60 here: MaxRoots leaves room for them and more.
	const (
		n        = 1200
		maxRoots = 256
	)
	var starts int
	cpu := CPUProfiler{
		Start: func(w io.Writer) error { starts++; return pprof.StartCPUProfile(w) },
		Stop:  pprof.StopCPUProfile,
	}
	c, err := New(Config{
		Profiles: []string{CPU}, CPU: cpu, Window: time.Minute,
		MaxRoutes: 10, MaxRoots: maxRoots, Settle: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	c.Start(time.Now())
	defer c.Abandon()
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer sdk.Shutdown(context.Background())
	tr := labels.WrapTracerProvider(sdk).Tracer("test")
	for i := range n {
		_, span := tr.Start(context.Background(), "GET")
		cputest.Spin(500 * time.Microsecond)
		span.SetName(fmt.Sprint("GET /", i%3))
		span.End()
		if i%16 == 15 {
			c.tracker.Sweep(time.Now())
			if at, ok := c.NextChange(); ok {
				c.Change(at)
			}
		}
	}
	w := c.Collect(time.Now())
	if starts < n/maxRoots {
		t.Errorf("the CPU profile started %d times, want at least %d", starts, n/maxRoots)
	}
	var labelled, routed int
	for _, p := range w.Profiles {
		if p.Name != CPU {
			continue
		}
		for _, s := range p.Data.Samples {
			route, ok := labelMap(s)[requests.RouteKey]
			if !ok {
				continue
			}
			labelled++
			if route != "GET" {
				routed++
			}
		}
	}
	t.Logf("%d parts; %d labelled CPU samples, %d with their final route; %d roots not remembered",
		starts-1, labelled, routed, c.stats.RoutesUnknown.Load())
	if labelled < 20 || routed != labelled || c.stats.RoutesUnknown.Load() != 0 {
		t.Errorf("%d of %d labelled CPU samples carry their final route, %d roots not remembered; want all of at least 20, and none",
			routed, labelled, c.stats.RoutesUnknown.Load())
	}
}

// BenchmarkCPUProfileRestart stops and starts the runtime's CPU profile
// as the collector does between two parts, after 200 ms of recording:
// ns/op is the time a part's end goes without CPU samples. Beside it,
// one goroutine spins, or 1,024 run short requests (a millisecond's sleep
// and a few microseconds of work each) until the cores are busy: the
// runtime's profile writer, which StopCPUProfile waits for, is then one
// goroutine among hundreds runnable.
//
//	go test -run '^$' -bench CPUProfileRestart -benchtime 20x ./internal/collect
func BenchmarkCPUProfileRestart(b *testing.B) {
	for _, tt := range []struct {
		name string
		load func(done <-chan struct{})
	}{
		{"spinning=1", spinning},
		{"requests=1024", func(done <-chan struct{}) {
			for range 1024 {
				go shortRequests(done)
			}
		}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			done := make(chan struct{})
			defer close(done)
			tt.load(done)
			var buf bytes.Buffer
			if err := pprof.StartCPUProfile(&buf); err != nil {
				b.Fatal(err)
			}
			defer pprof.StopCPUProfile()
			for b.Loop() {
				b.StopTimer()
				time.Sleep(200 * time.Millisecond)
				b.StartTimer()
				pprof.StopCPUProfile()
				buf.Reset()
				if err := pprof.StartCPUProfile(&buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// spinning spins on a goroutine of its own until done is closed.
func spinning(done <-chan struct{}) {
	go func() {
		for {
			select {
			case <-done:
				return
			default:
				cputest.Spin(time.Millisecond)
			}
		}
	}()
}

// shortRequests runs requests of a millisecond's sleep and about 3 µs of
// work until done is closed.
func shortRequests(done <-chan struct{}) {
	x := uint64(1)
	for {
		select {
		case <-done:
			restartSink.Add(x)
			return
		default:
		}
		time.Sleep(time.Millisecond)
		for range 4000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
}

// restartSink keeps shortRequests' work from being optimised away.
var restartSink atomic.Uint64
