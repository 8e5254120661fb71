package offcpu

import (
	"context"
	"fmt"
	"io"
	"math"
	"reflect"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
	xtrace "golang.org/x/exp/trace"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/testutil/cputest"
	"github.com/pprofotel/profiler/internal/testutil/polltest"
	"github.com/pprofotel/profiler/internal/testutil/waittest"
	"github.com/pprofotel/profiler/labels"
)

// handleLock is a request handler that waits on a contended mutex.
//
//go:noinline
func handleLock(d time.Duration) { waittest.OnMutex(d) }

// handleLockTraced is a request handler that waits on a contended mutex
// at least d, and until the execution tracer has run 100 ms: a request
// that lasts until the trace its watch starts has seen it, however long
// a loaded machine takes to start the tracer.
//
//go:noinline
func handleLockTraced(d time.Duration) { waittest.OnMutexTraced(d, 100*time.Millisecond) }

// handleCPU is a request handler that computes.
//
//go:noinline
func handleCPU(d time.Duration) { cputest.Spin(d) }

// handleFast is a request handler that returns at once.
//
//go:noinline
func handleFast(d time.Duration) { waittest.InSleep(d) }

// served is a request run under a root span, as the request tracker sees
// it.
type served struct {
	ids        string
	start, end time.Time
	// handled is how long the handler took: the request's time but for
	// starting and ending its span.
	handled time.Duration
}

// serve runs handler(d) inside a root span of tracer, and plays the
// request tracker: from another goroutine, as the tracker's sweeper does,
// it reports the request to r as long once it has run longAfter (never
// when longAfter is 0: a request the tracker sees end first), and its end
// once it ended.
func serve(t *testing.T, r *Recorder, tracer oteltrace.Tracer, handler func(time.Duration), d, longAfter time.Duration) served {
	t.Helper()
	start := time.Now()
	_, span := tracer.Start(context.Background(), "GET /x")
	sc := span.SpanContext()
	ids := sc.TraceID().String() + sc.SpanID().String()
	watched := make(chan struct{})
	if longAfter > 0 {
		go func() {
			time.Sleep(longAfter)
			r.Watch(ids, "GET /x", start)
			close(watched)
		}()
	}
	h0 := time.Now()
	handler(d)
	handled := time.Since(h0)
	span.End()
	end := time.Now()
	if longAfter > 0 {
		<-watched
		r.Ended(ids, "GET /x", start, end)
	}
	return served{ids: ids, start: start, end: end, handled: handled}
}

// explained sums the slow-request profile's values linked to ids: in all,
// and those of samples in state, for reason, whose stack holds fn.
func explained(p *pprofdecode.Profile, ids, state, reason, fn string) (all, matching time.Duration, n int) {
	if p == nil {
		return 0, 0, 0
	}
	for _, s := range p.Samples {
		if label(s, labels.TraceIDKey)+label(s, labels.SpanIDKey) != ids {
			continue
		}
		n++
		v := time.Duration(s.Values[0])
		all += v
		if label(s, StateKey) == state && label(s, ReasonKey) == reason && fnIn(p, s, fn) {
			matching += v
		}
		var sum int64
		for _, e := range s.Events {
			sum += e.Value
		}
		if sum != s.Values[0] {
			panic("a sample's value is not the sum of its events")
		}
	}
	return all, matching, n
}

func TestSlowRequestExplained(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	tracer := labels.WrapTracerProvider(tp).Tracer("slow-test")
	for _, tc := range []struct {
		name string
		// duty is the off-CPU duty cycle: 1 % rests when the request
		// comes (the watch starts a trace), 100 % traces all along.
		duty           int
		handler        func(time.Duration)
		d              time.Duration
		state, reason  string
		fn             string
		wantBeforeMark bool
		// cpuProfile runs the CPU profile, whose samples the trace
		// carries: the time on CPU is then on their stacks, in Spin, not
		// where the goroutine was preempted.
		cpuProfile bool
	}{
		// Where the watch starts the tracer, the request lasts 400 ms,
		// or, on the mutex, until the trace has seen it: on a machine
		// whose CPUs are oversubscribed starting the tracer can take
		// hundreds of milliseconds, and what a request does before its
		// trace starts is seen only as the state it starts in.
		{"mutex, tracer started by the watch", 1, handleLockTraced, 300 * time.Millisecond, "off_cpu", "sync", "handleLockTraced", true, false},
		{"mutex, inside a duty stretch", 100, handleLock, 200 * time.Millisecond, "off_cpu", "sync", "handleLock", false, false},
		{"CPU, tracer started by the watch", 1, handleCPU, 400 * time.Millisecond, "on_cpu", "", "handleCPU", true, false},
		{"CPU, with the CPU profile", 1, handleCPU, 400 * time.Millisecond, "on_cpu", "", "handleCPU", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer SetDutyCycle(tc.duty)()
			var stats Stats
			r := Start(time.Now(), Config{Stats: &stats})
			if tc.duty < 100 {
				// Past the first stretch (at most a 100th of the cycle):
				// the recorder rests.
				polltest.Until(t, "the first stretch's end", func() bool { return !trace.IsEnabled() })
			}
			if tc.cpuProfile {
				if err := pprof.StartCPUProfile(io.Discard); err != nil {
					t.Fatal(err)
				}
			}
			slow := serve(t, r, tracer, tc.handler, tc.d, DefaultSlowThreshold/2)
			if tc.cpuProfile {
				pprof.StopCPUProfile()
			}
			fast := serve(t, r, tracer, handleFast, time.Millisecond, 0)
			// Watched, but ended under the threshold.
			short := serve(t, r, tracer, handleFast, DefaultSlowThreshold*3/4, DefaultSlowThreshold/4)
			if _, err := r.Collect(time.Now(), true); err != nil {
				t.Fatal(err)
			}
			p := r.Slow()
			if p == nil {
				t.Fatalf("no slow-request profile: %d explained, %d dropped", stats.SlowRequestsExplained.Load(), stats.SlowRequestsDropped.Load())
			}
			dur := slow.end.Sub(slow.start)
			all, matching, _ := explained(p, slow.ids, tc.state, tc.reason, tc.fn)
			if all < dur*90/100 || all > dur*110/100 {
				t.Errorf("the slow request's samples add up to %v, want its duration %v ± 10%%", all, dur)
			}
			// The reference is the handler's time: under load, starting
			// or ending the span may wait (for a CPU, in a GC assist), and
			// that time is explained as what it was. A handler on CPU
			// also waits for a processor while other goroutines (the
			// trace's reader among them) run.
			if tc.state == "on_cpu" {
				_, runnable, _ := explained(p, slow.ids, "runnable", "", tc.fn)
				matching += runnable
			}
			if matching < slow.handled*80/100 {
				t.Errorf("%v of the handler's %v (the request's %v) in %s %q under %s, want at least 80%%:\n%s", matching, slow.handled, dur, tc.state, tc.reason, tc.fn, describe(p))
			}
			if tc.cpuProfile {
				_, inSpin, _ := explained(p, slow.ids, "on_cpu", "", "Spin")
				var leafInSpin time.Duration
				for _, s := range p.Samples {
					if label(s, labels.SpanIDKey) == slow.ids[32:] && label(s, StateKey) == "on_cpu" && len(s.Locations) > 0 &&
						strings.Contains(p.Functions[p.Locations[s.Locations[0]].Lines[0].Function].Name, "cputest") {
						leafInSpin += time.Duration(s.Values[0])
					}
				}
				// Where the goroutine was preempted, the leaf is
				// runtime.asyncPreempt2; samples are not taken while
				// the goroutine waits for a CPU.
				if leafInSpin < inSpin/4 {
					t.Errorf("%v of %v on CPU in Spin has a stack whose leaf is in Spin, want at least a quarter: the CPU samples' stacks\n%s", leafInSpin, inSpin, describe(p))
				}
			}
			marked := false
			for _, s := range p.Samples {
				marked = marked || label(s, labels.SpanIDKey) == slow.ids[32:] && label(s, BeforeTraceKey) == "true"
			}
			if marked != tc.wantBeforeMark {
				t.Errorf("a part marked before the trace: %v, want %v\n%s", marked, tc.wantBeforeMark, describe(p))
			}
			if _, _, n := explained(p, fast.ids, "", "", ""); n != 0 {
				t.Errorf("a request of %v, never watched, carries %d samples", fast.end.Sub(fast.start), n)
			}
			wantExplained := int64(1)
			if d := short.end.Sub(short.start); d < DefaultSlowThreshold {
				if _, _, n := explained(p, short.ids, "", "", ""); n != 0 {
					t.Errorf("a request of %v, watched, carries %d samples", d, n)
				}
			} else {
				// It waited for a CPU past the threshold: slow.
				wantExplained++
			}
			if got := stats.SlowRequestsExplained.Load(); got != wantExplained {
				t.Errorf("SlowRequestsExplained = %d, want %d", got, wantExplained)
			}
		})
	}
}

// describe lists a slow-request profile's samples, for failure messages.
func describe(p *pprofdecode.Profile) string {
	if p == nil {
		return "(no profile)"
	}
	var b strings.Builder
	for _, s := range p.Samples {
		leaf := ""
		if len(s.Locations) > 0 {
			for _, ln := range p.Locations[s.Locations[0]].Lines {
				leaf = p.Functions[ln.Function].Name
			}
		}
		b.WriteString(label(s, StateKey) + " " + label(s, ReasonKey) + " before=" + label(s, BeforeTraceKey) + " " +
			time.Duration(s.Values[0]).String() + " " + leaf + "\n")
	}
	return b.String()
}

// TestExplainParts lays timelines over a request's time: the part before
// the first interval takes the state the trace found (not the runnable
// one starting the tracer leaves), short gaps join the interval before,
// long ones and a missing end are untraced, and the parts always add up
// to the request's duration.
func TestExplainParts(t *testing.T) {
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	lock := []xtrace.StackFrame{{Func: "sync.(*Mutex).Lock"}, {Func: "main.handle"}}
	run := []xtrace.StackFrame{{Func: "main.handle"}}
	iv := func(from, to int64, st gstate, reason string, frames []xtrace.StackFrame) interval {
		return interval{start: ms(from), end: ms(to), state: st, reason: reason, frames: frames}
	}
	// lockFound is lock as a goroutine found blocked has it: the
	// runtime's frames first.
	lockFound := append([]xtrace.StackFrame{{Func: "runtime.gopark"}, {Func: "runtime.semacquire1"}}, lock...)
	found := func(i interval) interval { i.found = true; return i }
	cut := func(i interval) interval { i.open = true; return i }
	type want struct {
		from, to int64
		state    string
		before   bool
	}
	for _, tc := range []struct {
		name       string
		ivs        []interval
		start, end int64
		want       []want
	}{
		{"wait open at the trace's start", []interval{found(iv(50, 200, stateWaiting, "sync", lock)), iv(200, 201, stateRunnable, "", lock), iv(201, 240, stateRunning, "", run)}, 0, 240,
			[]want{{0, 50, "off_cpu", true}, {50, 200, "off_cpu", false}, {200, 201, "runnable", false}, {201, 240, "on_cpu", false}}},
		{"runnable as the trace starts", []interval{found(iv(50, 51, stateRunnable, "", run)), iv(51, 150, stateRunning, "", run)}, 0, 150,
			[]want{{0, 50, "on_cpu", true}, {50, 51, "runnable", false}, {51, 150, "on_cpu", false}}},
		{"short gaps joined, a long one untraced", []interval{iv(0, 40, stateRunning, "", run), iv(41, 60, stateWaiting, "sleep", run), iv(100, 120, stateRunning, "", run)}, 0, 121,
			[]want{{0, 41, "on_cpu", false}, {41, 60, "off_cpu", false}, {60, 100, "untraced", false}, {100, 121, "on_cpu", false}}},
		{"the trace ended first", []interval{iv(0, 80, stateWaiting, "network", lock)}, 0, 200,
			[]want{{0, 80, "off_cpu", false}, {80, 200, "untraced", false}}},
		{"intervals outside the request cut", []interval{iv(-50, 30, stateWaiting, "select", lock), iv(30, 300, stateRunning, "", run)}, 0, 120,
			[]want{{0, 30, "off_cpu", false}, {30, 120, "on_cpu", false}}},
		// A trace ran as the request began, but saw its goroutine under
		// its span only later: preempted between the span's start and
		// its labels, the goroutine waited for a CPU, or ran until it
		// waited. Not before the trace.
		{"seen late, then running", []interval{iv(50, 51, stateRunning, "", lock), iv(51, 200, stateWaiting, "sync", lock)}, 0, 200,
			[]want{{0, 50, "runnable", false}, {50, 51, "on_cpu", false}, {51, 200, "off_cpu", false}}},
		{"seen late, then waiting", []interval{iv(50, 200, stateWaiting, "sync", lock)}, 0, 200,
			[]want{{0, 50, "on_cpu", false}, {50, 200, "off_cpu", false}}},
		// The goroutine's work before the request (kept while its span
		// was not known) is not the state the request's trace found.
		{"intervals before the request", []interval{iv(-300, -200, stateRunning, "", run), iv(-200, -199, stateRunnable, "", run), found(iv(50, 200, stateWaiting, "sync", lock)), iv(200, 210, stateRunning, "", run)}, 0, 210,
			[]want{{0, 50, "off_cpu", true}, {50, 200, "off_cpu", false}, {200, 210, "on_cpu", false}}},
		// One trace ends (the wait open), the next finds the goroutine
		// waiting at the same place: one wait, the handover's time its.
		{"a wait across a handover", []interval{iv(0, 1, stateRunning, "", run), cut(iv(1, 80, stateWaiting, "sync", lock)), found(iv(130, 200, stateWaiting, "sync", lockFound)), iv(200, 201, stateRunning, "", run)}, 0, 201,
			[]want{{0, 1, "on_cpu", false}, {1, 200, "off_cpu", false}, {200, 201, "on_cpu", false}}},
		{"another wait after a handover", []interval{cut(iv(0, 80, stateWaiting, "sync", lock)), found(iv(130, 200, stateWaiting, "sleep", run))}, 0, 200,
			[]want{{0, 80, "off_cpu", false}, {80, 130, "untraced", false}, {130, 200, "off_cpu", false}}},
		// The short trace's stack, and the trace after it, which gives
		// none for a goroutine that wakes in its first generation.
		{"a wait found with no stack after a handover", []interval{cut(iv(0, 80, stateWaiting, "sync", lock)), found(iv(130, 200, stateWaiting, "", nil)), iv(200, 210, stateRunning, "", run)}, 0, 210,
			[]want{{0, 200, "off_cpu", false}, {200, 210, "on_cpu", false}}},
		{"running across a handover", []interval{cut(iv(0, 80, stateRunning, "", run)), found(iv(130, 200, stateRunning, "", run))}, 0, 200,
			[]want{{0, 80, "on_cpu", false}, {80, 130, "untraced", false}, {130, 200, "on_cpu", false}}},
		{"a wait found with no stack at the start", []interval{found(iv(50, 150, stateWaiting, "", nil)), iv(150, 160, stateRunning, "", run)}, 0, 160,
			[]want{{0, 50, "off_cpu", true}, {50, 150, "off_cpu", false}, {150, 160, "on_cpu", false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts := explainParts(&timeline{intervals: tc.ivs}, ms(tc.start), ms(tc.end))
			var got []want
			var sum int64
			for _, p := range parts {
				got = append(got, want{p.start / ms(1), p.end / ms(1), stateNames[p.state], p.before})
				sum += p.end - p.start
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("parts\n got %v\nwant %v", got, tc.want)
			}
			if sum != ms(tc.end-tc.start) {
				t.Errorf("parts add up to %v, want %v", time.Duration(sum), time.Duration(ms(tc.end-tc.start)))
			}
			for _, p := range parts {
				if len(p.frames) == 0 {
					t.Errorf("part %v..%v %s has no stack: the builder would leave it out", p.start/ms(1), p.end/ms(1), stateNames[p.state])
				}
			}
		})
	}
	if parts := explainParts(&timeline{intervals: []interval{iv(500, 600, stateRunning, "", run)}}, 0, ms(100)); parts != nil {
		t.Errorf("a timeline outside the request explains it: %v", parts)
	}
}

// TestReasonFromStack names the wait of a goroutine found waiting, whose
// status has no reason, as the trace names the reason of a wait it sees
// begin.
func TestReasonFromStack(t *testing.T) {
	for _, tc := range []struct {
		leaf []string
		want string
	}{
		{[]string{"runtime.gopark", "runtime.goparkunlock", "runtime.semacquire1", "internal/sync.runtime_SemacquireMutex", "internal/sync.(*Mutex).lockSlow"}, "sync"},
		{[]string{"runtime.gopark", "runtime.semacquire1", "sync.runtime_SemacquireWaitGroup", "sync.(*WaitGroup).Wait"}, "sync"},
		{[]string{"runtime.gopark", "sync.runtime_notifyListWait", "sync.(*Cond).Wait"}, "sync.(*Cond).Wait"},
		{[]string{"runtime.gopark", "runtime.chanrecv", "runtime.chanrecv1"}, "chan receive"},
		{[]string{"runtime.gopark", "runtime.chansend", "runtime.chansend1"}, "chan send"},
		{[]string{"runtime.gopark", "runtime.selectgo"}, "select"},
		{[]string{"runtime.gopark", "time.Sleep"}, "sleep"},
		{[]string{"runtime.gopark", "runtime.netpollblock", "internal/poll.runtime_pollWait", "internal/poll.(*pollDesc).wait"}, "network"},
		{[]string{"runtime.gopark", "main.custom"}, ""},
	} {
		var frames []xtrace.StackFrame
		for _, f := range tc.leaf {
			frames = append(frames, xtrace.StackFrame{Func: f})
		}
		if got := reasonFromStack(frames); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.leaf, got, tc.want)
		}
	}
}

// TestSlowBounds checks the bounds of the watched requests: past
// MaxWatched a request is not watched, past MaxSlow a window keeps the
// slowest, a fast request ends unexplained and uncounted, and a request
// whose goroutine no trace named is dropped, all counted.
func TestSlowBounds(t *testing.T) {
	var stats Stats
	ss := newSlowState(&Config{SlowThreshold: 100 * time.Millisecond, MaxWatched: 3, MaxSlow: 2, Stats: &stats})
	ids := func(i int) string { return fmt.Sprintf("%032x%016x", i, i) }
	t0 := time.Unix(1000, 0)
	for i := 1; i <= 5; i++ {
		ss.apply(watchEvent{ids: ids(i), start: t0})
	}
	if ss.live != 3 || stats.SlowRequestsDropped.Load() != 2 {
		t.Fatalf("%d watched, %d dropped; want 3, 2", ss.live, stats.SlowRequestsDropped.Load())
	}
	run := []xtrace.StackFrame{{Func: "main.handle"}}
	for i, d := range map[int]time.Duration{1: 300 * time.Millisecond, 2: 200 * time.Millisecond, 3: 150 * time.Millisecond} {
		ss.byRoot[ids(i)[32:]].goroutines[1] = &timeline{intervals: []interval{{start: t0.UnixNano(), end: t0.Add(d).UnixNano(), state: stateRunning, frames: run}}}
		ss.apply(watchEvent{ids: ids(i), start: t0, end: t0.Add(d), ended: true})
	}
	// A fast one, and a slow one of no goroutine.
	ss.apply(watchEvent{ids: ids(6), start: t0})
	ss.apply(watchEvent{ids: ids(6), start: t0, end: t0.Add(60 * time.Millisecond), ended: true})
	ss.apply(watchEvent{ids: ids(7), start: t0})
	ss.apply(watchEvent{ids: ids(7), start: t0, end: t0.Add(time.Second), ended: true})
	ss.settle(0, false, t0.Add(time.Second))
	if len(ss.byRoot) != 0 || ss.live != 0 {
		t.Errorf("%d requests still watched, %d live", len(ss.byRoot), ss.live)
	}
	w := newWindow(math.MaxInt, SlowSampleType)
	ss.build(w, t0.Add(time.Minute).UnixNano())
	p := w.build(new(built), t0, t0.Add(time.Minute), 1)
	got := map[string]time.Duration{}
	for _, s := range p.Samples {
		got[label(s, labels.SpanIDKey)] += time.Duration(s.Values[0])
	}
	want := map[string]time.Duration{ids(1)[32:]: 300 * time.Millisecond, ids(2)[32:]: 200 * time.Millisecond}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("explained %v, want the two slowest %v", got, want)
	}
	// 2 not watched, 1 past MaxSlow, 1 with no trace of its goroutine.
	if n := stats.SlowRequestsDropped.Load(); n != 4 || stats.SlowRequestsExplained.Load() != 2 {
		t.Errorf("dropped %d, explained %d; want 4, 2", n, stats.SlowRequestsExplained.Load())
	}
}

// TestLingerFor checks how long a watch trace goes on after its last
// request: while requests turn long often enough that going on costs
// less than the starts it saves, at most watchLinger.
func TestLingerFor(t *testing.T) {
	const kib = 1 << 10
	for _, tc := range []struct {
		rate float64 // bytes a second
		gap  time.Duration
		want time.Duration
	}{
		{0, 0, watchLinger},
		{16 * kib, 0, watchLinger},               // a start is 2 s of it
		{512 * kib, 0, 62500 * time.Microsecond}, // 32 KiB in 62.5 ms
		{64 << 20, 0, 488281 * time.Nanosecond},
		// 128 KiB/s: a start is 250 ms of it.
		{128 * kib, 500 * time.Millisecond, 0},                          // 2 a second: a start is cheaper
		{128 * kib, 250 * time.Millisecond, 0},                          // even
		{128 * kib, 100 * time.Millisecond, 91629073 * time.Nanosecond}, // 10 a second: 100 ms × ln 2.5
		{128 * kib, 10 * time.Millisecond, 32188758 * time.Nanosecond},  // 100 a second: 10 ms × ln 25
		{16 * kib, 500 * time.Millisecond, watchLinger},                 // 500 ms × ln 4, capped
		{0, 100 * time.Millisecond, 91629073 * time.Nanosecond},         // rate not known: even is watchLinger
	} {
		if got := lingerFor(tc.rate, tc.gap); got != tc.want {
			t.Errorf("lingerFor(%v, %v) = %v, want %v", tc.rate, tc.gap, got, tc.want)
		}
	}
}

// TestWatchGap checks the average time between the starts of the
// requests watched, which lingerFor weighs.
func TestWatchGap(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		name   string
		starts []time.Time
		want   time.Duration
	}{
		{"none", nil, 0},
		{"one", []time.Time{ms(0)}, 0},
		{"two", []time.Time{ms(0), ms(500)}, 500 * time.Millisecond},
		{"steady", []time.Time{ms(0), ms(500), ms(1000), ms(1500)}, 500 * time.Millisecond},
		{"faster", []time.Time{ms(0), ms(400), ms(500)}, 325 * time.Millisecond},
		{"out of order", []time.Time{ms(500), ms(0), ms(1000)}, 125 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := newSlowState(&Config{Stats: new(Stats), MaxWatched: 100, SlowThreshold: time.Millisecond})
			for i, start := range tc.starts {
				ss.apply(watchEvent{ids: fmt.Sprintf("%032x%016x", i+1, i+1), start: start})
			}
			if ss.gap != tc.want {
				t.Errorf("gap %v, want %v", ss.gap, tc.want)
			}
		})
	}
}

// TestPrelude keeps what a trace's end cut of a request not watched yet
// (the tracker reports it a moment after it ran long) for the request's
// watch, for two readings' ends at most, and at most maxPrelude requests.
func TestPrelude(t *testing.T) {
	var stats Stats
	ss := newSlowState(&Config{SlowThreshold: 100 * time.Millisecond, MaxWatched: 4, MaxSlow: 4, Stats: &stats})
	ids := func(i int) string { return fmt.Sprintf("%032x%016x", i, i) }
	wait := interval{start: 10, end: 20, state: stateWaiting, reason: "sync", frames: []xtrace.StackFrame{{Func: "main.handle"}}, open: true}
	ss.preludeOf(ids(1)[32:], 7).add(wait)
	ss.preludeOf(ids(2)[32:], 8).add(wait)
	ss.endReading()
	ss.apply(watchEvent{ids: ids(1), start: time.Unix(0, 0)})
	w := ss.byRoot[ids(1)[32:]]
	if tl := w.goroutines[7]; tl == nil || !reflect.DeepEqual(tl.intervals, []interval{wait}) {
		t.Errorf("the watched request starts from %v, want its cut wait", w.goroutines)
	}
	if _, ok := ss.prelude[ids(1)[32:]]; ok {
		t.Error("a prelude taken by its watch is still kept")
	}
	ss.endReading()
	if _, ok := ss.prelude[ids(2)[32:]]; !ok {
		t.Error("a prelude is forgotten at the second reading's end")
	}
	ss.endReading()
	if len(ss.prelude) != 0 {
		t.Errorf("%d preludes kept past two readings' ends", len(ss.prelude))
	}
	for i := range maxPrelude + 10 {
		ss.preludeOf(ids(100 + i)[32:], 1)
	}
	if len(ss.prelude) != maxPrelude || ss.preludeOf(ids(5000)[32:], 1) != nil {
		t.Errorf("%d preludes kept, want at most %d", len(ss.prelude), maxPrelude)
	}
}
