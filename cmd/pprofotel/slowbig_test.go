package main

import (
	"flag"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/collect/requests"
	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/labels"
)

// bigSlow returns a slow-request profile of one request with n samples,
// one event each, spread over fns application functions that each wait in
// one of three standard-library calls: the shape of a long request the
// off-CPU recorder followed for a long time.
func bigSlow(start time.Time, n, fns int) *pprofdecode.Profile {
	p := &pprofdecode.Profile{
		SampleTypes:       []pprofdecode.ValueType{{Type: "wall", Unit: "nanoseconds"}},
		DefaultSampleType: "wall",
		PeriodType:        pprofdecode.ValueType{Type: "wall", Unit: "nanoseconds"},
		Period:            1,
		TimeNanos:         start.UnixNano(),
		DurationNanos:     int64(time.Minute),
	}
	waits := []string{"sync.(*Mutex).Lock", "internal/poll.(*FD).Read", "time.Sleep"}
	for _, w := range waits {
		p.Functions = append(p.Functions, pprofdecode.Function{Name: w, SystemName: w, Filename: "std.go"})
	}
	p.Functions = append(p.Functions, pprofdecode.Function{Name: "main.main", SystemName: "main.main", Filename: "main.go"})
	for i := range fns {
		name := fmt.Sprintf("main.step%d", i)
		p.Functions = append(p.Functions, pprofdecode.Function{Name: name, SystemName: name, Filename: "main.go"})
	}
	for i := range p.Functions {
		p.Locations = append(p.Locations, pprofdecode.Location{Mapping: -1, Address: uint64(0x1000 * (i + 1)),
			Lines: []pprofdecode.Line{{Function: int32(i), Line: int64(i + 1)}}})
	}
	states := [][2]string{{"off_cpu", "sync"}, {"off_cpu", "network"}, {"off_cpu", "sleep"}, {"runnable", ""}, {"on_cpu", ""}}
	step := int64(time.Minute) / int64(n)
	for i := range n {
		w, st := i%len(waits), states[i%len(states)]
		l := []pprofdecode.Label{{Key: "goroutine_state", Str: st[0]}}
		if st[1] != "" {
			l = append(l, pprofdecode.Label{Key: "wait_reason", Str: st[1]})
		}
		if i < n/10 {
			l = append(l, pprofdecode.Label{Key: "before_trace", Str: "true"})
		}
		l = append(l, pprofdecode.Label{Key: requests.RouteKey, Str: "/long"},
			pprofdecode.Label{Key: labels.SpanIDKey, Str: "b7ad6b7169203331"},
			pprofdecode.Label{Key: labels.TraceIDKey, Str: "0af7651916cd43dd8448eb211c80319c"})
		p.Samples = append(p.Samples, pprofdecode.Sample{
			Locations: []int32{int32(w), int32(len(waits) + 1 + i%fns), int32(len(waits))},
			Labels:    l,
			Values:    []int64{step},
			Events:    []pprofdecode.Event{{Value: step, TimeNanos: start.UnixNano() + int64(i)*step}},
		})
	}
	return p
}

// TestSlowManyParts reads a generated request of 5,000 samples, each in
// a function of its own: every sample is a part of the request, and the
// parts add up to the request's duration and to the time before the trace.
func TestSlowManyParts(t *testing.T) {
	const n = 5000
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	dir := slowWindow(t, otlp.Input{Name: "slowrequests", Profile: bigSlow(start, n, n)})
	var sel selection
	profiles, err := sel.convert(flag.NewFlagSet("slow", flag.ContinueOnError), "", []string{dir}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := slowRequests(profiles[slowProfile])
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	step := int64(time.Minute) / n
	if r.dur != n*step || r.route != "/long" || r.spanID != "b7ad6b7169203331" {
		t.Errorf("request %v on %q span %s, want %v on /long span b7ad6b7169203331", time.Duration(r.dur), r.route, r.spanID, time.Duration(n*step))
	}
	if len(r.parts) != n {
		t.Fatalf("%d parts, want %d", len(r.parts), n)
	}
	var sum, before int64
	seen := map[string]bool{}
	for _, p := range r.parts {
		sum += p.dur
		before += p.before
		seen[p.fn] = true
		if p.dur != step {
			t.Fatalf("part %+v: %d ns, want %d", p, p.dur, step)
		}
	}
	if sum != r.dur || before != n/10*step || len(seen) != n {
		t.Errorf("parts add up to %d ns, %d ns before the trace, in %d functions; want %d, %d, %d", sum, before, len(seen), r.dur, n/10*step, n)
	}
}

// BenchmarkSlow runs pprofotel slow on a window holding one request of n
// samples, each in a function of its own.
func BenchmarkSlow(b *testing.B) {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, n := range []int{25000, 50000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := slowWindow(b, otlp.Input{Name: "slowrequests", Profile: bigSlow(start, n, n)})
			for b.Loop() {
				if err := run([]string{"slow", dir}, nil, io.Discard, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
