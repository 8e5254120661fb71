package offcpu

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"reflect"
	"runtime/trace"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	xtrace "golang.org/x/exp/trace"

	"github.com/pprofotel/profiler/labels"
)

// TestFoundLate explains requests from timelines whose first interval
// came at different times: the state the trace found stands for the time
// before it when the trace found the goroutine within the threshold, or
// the traces saw at least half as much of the request (a third of it); a
// request whose trace found its goroutine later, as it ended, is
// dropped, whatever the state found.
func TestFoundLate(t *testing.T) {
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	lock := []xtrace.StackFrame{{Func: "sync.(*Mutex).Lock"}, {Func: "main.handle"}}
	end := []xtrace.StackFrame{{Func: "labels.(*labeledSpan).End"}, {Func: "main.handle"}}
	iv := func(from, to int64, st gstate, reason string, frames []xtrace.StackFrame) interval {
		return interval{start: ms(from), end: ms(to), state: st, reason: reason, frames: frames, found: true}
	}
	for _, tc := range []struct {
		name string
		ivs  []interval
		d    int64 // the request's duration, ms
		// before is the part explained before the trace, in ms; -1
		// when the request is dropped.
		before int64
	}{
		// The trace began as the request ended: woken from its wait,
		// the goroutine ran to its span's end.
		{"found running as it ended", []interval{iv(199, 200, stateRunnable, "", nil), iv(200, 201, stateRunning, "", end)}, 201, -1},
		{"found in another wait as it ended", []interval{iv(199, 204, stateWaiting, "network", end), iv(204, 205, stateRunning, "", end)}, 205, -1},
		{"found late, in the wait, less seen", []interval{iv(150, 200, stateWaiting, "sync", lock), iv(200, 201, stateRunning, "", end)}, 201, -1},
		{"found late, in the wait, a third seen", []interval{iv(110, 200, stateWaiting, "sync", lock), iv(200, 201, stateRunning, "", end)}, 201, 110},
		{"found within the threshold", []interval{iv(90, 200, stateWaiting, "sync", lock), iv(200, 201, stateRunning, "", end)}, 201, 90},
		// The time between two traces is not seen.
		{"found late, the rest untraced", []interval{iv(150, 151, stateRunning, "", end), iv(300, 301, stateRunning, "", end)}, 301, -1},
		{"found past the threshold, more seen", []interval{iv(400, 900, stateWaiting, "sync", lock), iv(900, 1000, stateRunning, "", end)}, 1000, 400},
		{"seen from the start", []interval{iv(0, 200, stateWaiting, "sync", lock), iv(200, 201, stateRunning, "", end)}, 201, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stats Stats
			ss := newSlowState(&Config{SlowThreshold: 100 * time.Millisecond, MaxWatched: 1, MaxSlow: 1, Stats: &stats})
			ids := fmt.Sprintf("%032x%016x", 1, 1)
			start := time.Unix(0, 0)
			ss.apply(watchEvent{ids: ids, start: start})
			w := ss.byRoot[ids[32:]]
			w.goroutines[1] = &timeline{intervals: tc.ivs}
			w.endG, w.hasEndG = 1, true
			ss.apply(watchEvent{ids: ids, start: start, end: start.Add(time.Duration(ms(tc.d))), ended: true})
			ss.settle(0, false, start.Add(time.Minute))
			if tc.before < 0 {
				if len(ss.explained) != 0 || stats.SlowRequestsDropped.Load() != 1 {
					t.Errorf("explained as %v (%d dropped), want dropped", ss.explained, stats.SlowRequestsDropped.Load())
				}
				return
			}
			if len(ss.explained) != 1 {
				t.Fatalf("%d explained, %d dropped; want it explained", len(ss.explained), stats.SlowRequestsDropped.Load())
			}
			var before int64
			for _, p := range ss.explained[0].parts {
				if p.before {
					before += p.end - p.start
				}
			}
			if before != ms(tc.before) {
				t.Errorf("%v before the trace, want %v", time.Duration(before), time.Duration(ms(tc.before)))
			}
		})
	}
}

// TestTraceStartedAsTheRequestEnded plays, with the runtime's tracer,
// the watch trace of a request that starts only as the request ends
// (late: the budget, or the recorder reading the trace before): the
// request waited a second, untraced, was woken, and its goroutine runs
// on as the short trace and the trace start, then ends its span in the
// trace. The trace found it running at its end, which says nothing of
// the wait: the request is not explained, and counted dropped.
func TestTraceStartedAsTheRequestEnded(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	tracer := labels.WrapTracerProvider(tp).Tracer("slow-test")
	var stats Stats
	ss := newSlowState(&Config{SlowThreshold: DefaultSlowThreshold, MaxWatched: 1, MaxSlow: 1, Stats: &stats})

	release := make(chan struct{})
	var traced atomic.Bool
	begun := make(chan string)
	ended := make(chan time.Time)
	go func() {
		_, span := tracer.Start(context.Background(), "GET /lock")
		sc := span.SpanContext()
		begun <- sc.TraceID().String() + sc.SpanID().String()
		<-release
		for !traced.Load() {
		}
		span.End()
		ended <- time.Now()
	}()
	ids := <-begun
	// The request began a second ago as far as the tracker knows, and
	// was reported at half the threshold: its wait is the one released
	// now, which no trace saw.
	start := time.Now().Add(-time.Second)
	ss.apply(watchEvent{ids: ids, route: "GET /lock", start: start})
	close(release)

	// The recorder's watch trace: the short trace, then the trace.
	var short, long bytes.Buffer
	if err := trace.Start(&short); err != nil {
		t.Fatal(err)
	}
	trace.Stop()
	if err := trace.Start(&long); err != nil {
		t.Fatal(err)
	}
	traced.Store(true)
	end := <-ended
	trace.Stop()

	rd := newWindow(math.MaxInt, SampleType).newReading(start)
	rd.slow, rd.noWaits = ss, true
	if err := rd.read(bytes.NewReader(short.Bytes())); err != nil {
		t.Fatal(err)
	}
	rd.finishSlow()
	if err := rd.read(bytes.NewReader(long.Bytes())); err != nil {
		t.Fatal(err)
	}
	rd.finish()
	w := ss.byRoot[ids[32:]]
	if w == nil || !w.hasEndG || w.goroutines[w.endG] == nil {
		t.Fatalf("the trace did not see the request's goroutine end its span: %+v", w)
	}
	ss.apply(watchEvent{ids: ids, route: "GET /lock", start: start, end: end, ended: true})
	ss.settle(0, false, end)
	for _, e := range ss.explained {
		for _, p := range e.parts {
			t.Errorf("explained: %s %s before=%v %v at %v", stateNames[p.state], p.reason, p.before, time.Duration(p.end-p.start), p.frames)
		}
	}
	if n := stats.SlowRequestsDropped.Load(); n != 1 {
		t.Errorf("%d dropped, want 1", n)
	}
}

// TestExplainedInTheWindowTheyEndedIn builds a window whose collection
// reached the recorder late, as it does when the recorder is reading a
// trace as the window ends: a request that ended after the window's end,
// explained meanwhile, is sent in the next window, not in this one with
// its times pushed to the window's end.
func TestExplainedInTheWindowTheyEndedIn(t *testing.T) {
	var stats Stats
	ss := newSlowState(&Config{SlowThreshold: 100 * time.Millisecond, MaxWatched: 4, MaxSlow: 4, Stats: &stats})
	ids := func(i int) string { return fmt.Sprintf("%032x%016x", i, i) }
	run := []xtrace.StackFrame{{Func: "main.handle"}}
	t0 := time.Unix(1000, 0)
	// Both run 200 ms; the window ends at t0 + 1 s, between their ends.
	for i, start := range map[int]time.Time{1: t0.Add(700 * time.Millisecond), 2: t0.Add(900 * time.Millisecond)} {
		ss.apply(watchEvent{ids: ids(i), route: "/a", start: start})
		end := start.Add(200 * time.Millisecond)
		ss.byRoot[ids(i)[32:]].goroutines[1] = &timeline{intervals: []interval{{start: start.UnixNano(), end: end.UnixNano(), state: stateRunning, frames: run}}}
		ss.apply(watchEvent{ids: ids(i), route: "/a", start: start, end: end, ended: true})
	}
	ss.settle(0, false, t0.Add(2*time.Second))
	windowEnd := t0.Add(time.Second)
	for n, win := range [][2]time.Time{{t0, windowEnd}, {windowEnd, t0.Add(2 * time.Second)}} {
		w := newWindow(math.MaxInt, SlowSampleType)
		ss.build(w, win[1].UnixNano())
		p := w.build(new(built), win[0], win[1], 1)
		var got []string
		for _, s := range p.Samples {
			at := time.Unix(0, s.Events[0].TimeNanos)
			got = append(got, fmt.Sprintf("%s at %v", label(s, labels.SpanIDKey)[15:], at.Sub(t0)))
		}
		// The second's time in its window begins at the window's
		// start, within its span.
		want := []string{fmt.Sprintf("%d at %v", n+1, []time.Duration{700 * time.Millisecond, time.Second}[n])}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("window %d: %v, want %v", n, got, want)
		}
		if e := stats.SlowRequestsExplained.Load(); e != int64(n+1) {
			t.Errorf("window %d: %d explained in all, want %d", n, e, n+1)
		}
	}
}

// TestWaitFoundAsTheShortTraceEnded follows a request blocked on a mutex
// when its watch trace began: the short trace's end writes the
// goroutine's state with its stack among its last events, at the time
// of the last one, and the trace after it names the goroutine only as it
// wakes, with no stack. The short trace's state is kept, and the wait
// explained whole from it; it used to be a moment long, and lost, and
// the request laid on what the trace found at the wake.
func TestWaitFoundAsTheShortTraceEnded(t *testing.T) {
	ms := func(n float64) int64 { return int64(n * float64(time.Millisecond)) }
	lock := []xtrace.StackFrame{{Func: "sync.(*Mutex).Lock"}, {Func: "main.handle"}}
	end := []xtrace.StackFrame{{Func: "labels.(*labeledSpan).End"}, {Func: "main.handle"}}
	var stats Stats
	ss := newSlowState(&Config{SlowThreshold: 100 * time.Millisecond, MaxWatched: 1, MaxSlow: 1, Stats: &stats})
	ids := fmt.Sprintf("%032x%016x", 1, 1)
	start := time.Unix(0, 0)
	ss.apply(watchEvent{ids: ids, route: "/lock", start: start})

	// The short trace's end: the goroutine's status, found waiting, at
	// the time of the reading's last event.
	rd := newWindow(math.MaxInt, SampleType).newReading(start)
	rd.slow = ss
	g := rd.goroutine(7)
	g.st, g.sreason, g.since, g.found, g.known, g.root = stateWaiting, "sync", ms(60), true, true, ids[32:]
	rd.closeInterval(g, 7, ms(60), xtrace.NoStack, true)
	w := ss.byRoot[ids[32:]]
	tl := w.goroutines[7]
	if tl == nil || len(tl.intervals) != 1 {
		t.Fatalf("the wait the short trace found is not kept: %+v", tl)
	}
	tl.intervals[0].frames = lock // the status's stack
	// The trace: the goroutine's status at its wake, no stack; then it
	// runs to its span's end.
	tl.intervals = append(tl.intervals,
		interval{start: ms(200), end: ms(200.001), state: stateWaiting, found: true},
		interval{start: ms(200.001), end: ms(200.3), state: stateRunnable, frames: lock},
		interval{start: ms(200.3), end: ms(200.4), state: stateRunning, frames: end})
	w.endG, w.hasEndG = 7, true
	ss.apply(watchEvent{ids: ids, route: "/lock", start: start, end: start.Add(time.Duration(ms(200.4))), ended: true})
	ss.settle(0, false, start.Add(time.Second))
	if len(ss.explained) != 1 {
		t.Fatalf("%d explained, %d dropped; want it explained", len(ss.explained), stats.SlowRequestsDropped.Load())
	}
	var inWait int64
	for _, p := range ss.explained[0].parts {
		if p.state == stateWaiting && p.reason == "sync" && reflect.DeepEqual(p.frames, lock) {
			inWait += p.end - p.start
		}
	}
	if inWait != ms(200.001) {
		t.Errorf("%v in the mutex wait, want %v: %+v", time.Duration(inWait), time.Duration(ms(200.001)), ss.explained[0].parts)
	}
}
