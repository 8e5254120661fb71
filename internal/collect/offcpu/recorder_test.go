package offcpu

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"runtime/trace"
	"slices"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/collect/requests"
	"github.com/pprofotel/profiler/internal/testutil/polltest"
	"github.com/pprofotel/profiler/internal/testutil/waittest"
	"github.com/pprofotel/profiler/labels"
)

// waited sums, by reason, the values of the samples whose stack holds fn.
func waited(p *pprofdecode.Profile, fn string) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, s := range p.Samples {
		in := false
		for _, l := range s.Locations {
			for _, ln := range p.Locations[l].Lines {
				in = in || strings.HasSuffix(p.Functions[ln.Function].Name, "."+fn)
			}
		}
		if in {
			out[label(s, ReasonKey)] += time.Duration(s.Values[0])
		}
	}
	return out
}

func label(s pprofdecode.Sample, key string) string {
	for _, l := range s.Labels {
		if l.Key == key {
			return l.Str
		}
	}
	return ""
}

func TestRecorderAttributesWaitsToStackReasonAndSpan(t *testing.T) {
	defer SetDutyCycle(100)()
	const ids = "0af7651916cd43dd8448eb211c80319c" + "b7ad6b7169203331"
	const root = "00f067aa0ba902b7"
	start := time.Now()
	r := Start(start, Config{})
	trace.Log(t.Context(), labels.TraceLogCategory, ids+root)
	took := map[string]time.Duration{}
	for _, w := range []struct {
		fn    string
		block func(time.Duration)
		d     time.Duration
	}{
		{"OnChannel", waittest.OnChannel, 300 * time.Millisecond},
		{"OnMutex", waittest.OnMutex, 200 * time.Millisecond},
		{"InSleep", waittest.InSleep, 100 * time.Millisecond},
	} {
		t0 := time.Now()
		w.block(w.d)
		took[w.fn] = time.Since(t0)
	}
	trace.Log(t.Context(), labels.TraceLogCategory, "")
	end := time.Now()
	p, err := r.Collect(end, true)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		fn, reason string
		want       time.Duration
	}{
		{"OnChannel", "chan receive", 300 * time.Millisecond},
		{"OnMutex", "sync", 200 * time.Millisecond},
		{"InSleep", "sleep", 100 * time.Millisecond},
	} {
		got := waited(p, tc.fn)
		// The wait lasts until the goroutine runs again, so on a busy
		// machine it includes the wait for a CPU after the wake-up: the
		// reference is how long the call took, at least the nominal time.
		ref := took[tc.fn]
		if ref < tc.want {
			t.Fatalf("%s took %v, less than the %v it waits", tc.fn, ref, tc.want)
		}
		if d := got[tc.reason]; d < ref*95/100 || d > ref*105/100 {
			t.Errorf("%s: waited %v in %q (all: %v), want %v ± 5%% (the call took %v)", tc.fn, d, tc.reason, got, tc.want, ref)
		}
	}
	for _, s := range p.Samples {
		for _, e := range s.Events {
			if e.TimeNanos < start.UnixNano() || e.TimeNanos >= end.UnixNano() {
				t.Errorf("wait at %d outside the window [%d, %d)", e.TimeNanos, start.UnixNano(), end.UnixNano())
			}
		}
		if fnIn(p, s, "InSleep") || fnIn(p, s, "OnChannel") || fnIn(p, s, "OnMutex") {
			if got := label(s, labels.TraceIDKey) + label(s, labels.SpanIDKey) + label(s, labels.LocalRootSpanIDKey); got != ids+root {
				t.Errorf("wait %q linked to %q, want %q", label(s, ReasonKey), got, ids+root)
			}
		}
	}
}

// TestRecorderLeavesOutTheRuntimesGoroutines collects garbage while a
// stretch runs: the garbage collector's workers, the sweeper and the
// tracer's goroutines wait, yield and are preempted, and none of it is
// the application's; the application's own waits are kept, also those it
// spends in the runtime.
func TestRecorderLeavesOutTheRuntimesGoroutines(t *testing.T) {
	defer SetDutyCycle(100)()
	r := Start(time.Now(), Config{})
	for range 5 {
		runtime.GC()
		waittest.InSleep(time.Millisecond)
	}
	p, err := r.Collect(time.Now(), true)
	if err != nil {
		t.Fatal(err)
	}
	// The goroutines' own functions, as fnIn matches them.
	runtimes := []string{
		"gcBgMarkWorker", "bgsweep", "bgscavenge",
		"(*traceAdvancerState).start.func1",
		"(*traceMultiplexer).startLocked.func1",
	}
	for _, s := range p.Samples {
		for _, fn := range runtimes {
			if fnIn(p, s, fn) {
				t.Errorf("kept a %q wait of %s, one of the runtime's own goroutines", label(s, ReasonKey), fn)
			}
		}
	}
	if got := waited(p, "InSleep")["sleep"]; got < 5*time.Millisecond {
		t.Errorf("the application's sleeps: %v, want at least 5ms", got)
	}
	if got := waited(p, "GC"); len(got) == 0 {
		t.Error("no wait of the application in runtime.GC")
	}
}

// TestRecorderTakesRoutesFromTheLog checks that a wait carries the route
// the label wrapper's last record gave its request: the one given at the
// span's start, or the one given since, also to the waits kept before it,
// as a window gives every sample of a request its last route. Another
// request's waits keep theirs.
func TestRecorderTakesRoutesFromTheLog(t *testing.T) {
	defer SetDutyCycle(100)()
	const span = "0af7651916cd43dd8448eb211c80319c" + "b7ad6b7169203331" + "00f067aa0ba902b7"
	const other = "1af7651916cd43dd8448eb211c80319c" + "c7ad6b7169203331" + "c7ad6b7169203331"
	r := Start(time.Now(), Config{})
	trace.Log(t.Context(), labels.TraceLogCategory, other+";;GET")
	waittest.InSleep(20 * time.Millisecond)
	trace.Log(t.Context(), labels.TraceLogCategory, span+";"+other+";GET")
	waittest.OnChannel(20 * time.Millisecond)
	trace.Log(t.Context(), labels.TraceLogCategory, span+";"+span+";/users/{id};v2")
	waittest.OnMutex(20 * time.Millisecond)
	trace.Log(t.Context(), labels.TraceLogCategory, ";"+span)
	p, err := r.Collect(time.Now(), true)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ fn, route string }{
		{"InSleep", "GET"},
		{"OnChannel", "/users/{id};v2"},
		{"OnMutex", "/users/{id};v2"},
	} {
		var n int
		for _, s := range p.Samples {
			if !fnIn(p, s, tc.fn) {
				continue
			}
			n++
			if got := label(s, labels.RouteKey); got != tc.route {
				t.Errorf("wait in %s: route %q, want %q", tc.fn, got, tc.route)
			}
		}
		if n == 0 {
			t.Errorf("no wait in %s", tc.fn)
		}
	}
}

func fnIn(p *pprofdecode.Profile, s pprofdecode.Sample, fn string) bool {
	for _, l := range s.Locations {
		for _, ln := range p.Locations[l].Lines {
			if strings.HasSuffix(p.Functions[ln.Function].Name, "."+fn) {
				return true
			}
		}
	}
	return false
}

// TestSkipsWhenTheTracerIsInUse checks that a recorder leaves the
// execution tracer to an application that runs it with trace.Start: the
// stretch is skipped, counted and logged once, the window comes without
// waits, and the other trace goes on undisturbed.
func TestSkipsWhenTheTracerIsInUse(t *testing.T) {
	if trace.IsEnabled() {
		t.Fatal("the execution tracer is already on; the test cannot start its own")
	}
	var app bytes.Buffer
	if err := trace.Start(&app); err != nil {
		t.Fatal(err)
	}
	defer trace.Stop()
	defer SetDutyCycle(100)()
	var logs bytes.Buffer
	var stats Stats
	r := Start(time.Now(), Config{Stats: &stats, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	waittest.InSleep(50 * time.Millisecond)
	p, err := r.Collect(time.Now(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Samples) != 0 {
		t.Errorf("%d waits recorded while the tracer was someone else's", len(p.Samples))
	}
	if n := stats.Skipped.Load(); n < 1 {
		t.Errorf("Skipped = %d, want at least 1", n)
	}
	if n := strings.Count(logs.String(), "off-CPU profile skipped"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, logs.String())
	}
	if !trace.IsEnabled() {
		t.Error("the other trace was stopped")
	}
}

// TestSpanBegunBeforeTheStretch links the waits of a goroutine whose span
// began before the trace did: they wait, pending, for the goroutine's
// first span change, which names the span it leaves. A goroutine that
// changes span never stays unlinked.
func TestSpanBegunBeforeTheStretch(t *testing.T) {
	defer SetDutyCycle(100)()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	tracer := labels.WrapTracerProvider(tp).Tracer("offcpu-test")

	ctx, outer := tracer.Start(context.Background(), "begun before") // no trace yet: nothing logged
	r := Start(time.Now(), Config{})
	waittest.OnChannel(60 * time.Millisecond) // pending until the next span change
	_, inner := tracer.Start(ctx, "inner")    // logs inner;outer
	waittest.InSleep(40 * time.Millisecond)
	inner.End()                             // logs outer;inner
	waittest.OnMutex(20 * time.Millisecond) // outer again
	outer.End()                             // logs ;outer
	p, err := r.Collect(time.Now(), true)
	if err != nil {
		t.Fatal(err)
	}
	// Both spans are in the request outer is the local root of.
	ids := func(s oteltrace.Span) string {
		sc := s.SpanContext()
		return sc.TraceID().String() + sc.SpanID().String() + outer.SpanContext().SpanID().String()
	}
	for _, tc := range []struct {
		fn, reason string
		span       oteltrace.Span
	}{
		{"OnChannel", "chan receive", outer},
		{"InSleep", "sleep", inner},
		{"OnMutex", "sync", outer},
	} {
		n := 0
		for _, s := range p.Samples {
			if !fnIn(p, s, tc.fn) || label(s, ReasonKey) != tc.reason {
				continue
			}
			n++
			if got := label(s, labels.TraceIDKey) + label(s, labels.SpanIDKey) + label(s, labels.LocalRootSpanIDKey); got != ids(tc.span) {
				t.Errorf("%s wait linked to %q, want %q", tc.fn, got, ids(tc.span))
			}
		}
		if n == 0 {
			t.Errorf("no %s wait recorded", tc.fn)
		}
	}
}

// TestApplicationFlightRecorderNeverFails runs, beside a recorder at a
// 100 % duty cycle, an application that starts and stops its own flight
// recorder again and again, snapshotting it in between, and one whose
// flight recorder runs all along: every Start and WriteTo succeeds, since
// the recorder does not take the one flight recorder the runtime allows,
// and the recorder records beside the application's.
func TestApplicationFlightRecorderNeverFails(t *testing.T) {
	const rounds = 200
	for _, tt := range []struct {
		name string
		// run is the application; it returns the calls that failed, and
		// its flight recorder if it leaves it running.
		run func() (failures []error, running *trace.FlightRecorder)
	}{
		{"started and stopped again and again", func() (failures []error, _ *trace.FlightRecorder) {
			for i := range rounds {
				fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MaxBytes: 1 << 20})
				if err := fr.Start(); err != nil {
					failures = append(failures, fmt.Errorf("Start %d: %w", i, err))
					continue
				}
				waittest.InSleep(time.Millisecond)
				if i%10 == 0 {
					if _, err := fr.WriteTo(io.Discard); err != nil {
						failures = append(failures, fmt.Errorf("WriteTo %d: %w", i, err))
					}
				}
				fr.Stop()
			}
			return failures, nil
		}},
		{"running past the recorder's end", func() (failures []error, _ *trace.FlightRecorder) {
			fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MaxBytes: 1 << 20})
			if err := fr.Start(); err != nil {
				return []error{err}, nil
			}
			for i := range rounds {
				waittest.InSleep(time.Millisecond)
				if i%50 == 0 {
					if _, err := fr.WriteTo(io.Discard); err != nil {
						failures = append(failures, fmt.Errorf("WriteTo %d: %w", i, err))
					}
				}
			}
			return failures, fr
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer SetDutyCycle(100)()
			var stats Stats
			// Every Start, Stop and WriteTo of the application's flight
			// recorder ends a generation, about 400 in all, 3 MB of
			// trace: the budget is ten times that, so that no stretch
			// is cut and every sleep is read whole.
			r := Start(time.Now(), Config{Stats: &stats, MaxTraceBytes: 32 << 20})
			failures, fr := tt.run()
			p, err := r.Collect(time.Now(), true)
			if err != nil {
				t.Fatal(err)
			}
			if fr != nil {
				// The recorder stopped its trace; the application's
				// flight recorder runs on.
				if !fr.Enabled() || !trace.IsEnabled() {
					t.Error("the application's flight recorder stopped with the recorder")
				}
				if _, err := fr.WriteTo(io.Discard); err != nil {
					failures = append(failures, fmt.Errorf("WriteTo after the recorder stopped: %w", err))
				}
				fr.Stop()
			}
			if len(failures) > 0 {
				t.Errorf("%d flight recorder calls of the application failed, first: %v", len(failures), failures[0])
			}
			if n := stats.Skipped.Load(); n != 0 {
				t.Errorf("Skipped = %d: the recorder gave way to a flight recorder it can trace beside", n)
			}
			if n := stats.Truncated.Load(); n != 0 {
				t.Errorf("Truncated = %d: a stretch was cut within a budget ten times the trace", n)
			}
			// Each sleep lasts at least a millisecond; the trace sees it
			// from the goroutine's park, a few microseconds in.
			if got, want := waited(p, "InSleep")["sleep"], rounds*time.Millisecond*9/10; got < want {
				t.Errorf("recorded %v of sleep beside the application's flight recorder, want at least %v", got, want)
			}
		})
	}
}

// TestApplicationsStrayStopLeavesItsTraceOn has an application whose
// trace.Start fails while a stretch runs and that calls trace.Stop anyway,
// ending the stretch's trace, while its flight recorder runs: the
// recorder's own stop must not then end the runtime's trace under that
// flight recorder, and the application's next trace.Start succeeds.
func TestApplicationsStrayStopLeavesItsTraceOn(t *testing.T) {
	defer SetDutyCycle(100)()
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MaxBytes: 1 << 20})
	if err := fr.Start(); err != nil {
		t.Fatal(err)
	}
	defer fr.Stop()
	var stats Stats
	r := Start(time.Now(), Config{Stats: &stats})
	if err := trace.Start(io.Discard); err == nil {
		t.Fatal("the application's trace.Start succeeded while a stretch ran")
	}
	trace.Stop() // the application's, ending the recorder's subscription
	if _, err := r.Collect(time.Now(), true); err != nil {
		t.Fatal(err)
	}
	if !trace.IsEnabled() {
		t.Error("the runtime's trace stopped under the application's flight recorder")
	}
	if err := trace.Start(io.Discard); err != nil {
		t.Errorf("trace.Start after the recorder stopped: %v", err)
	} else {
		trace.Stop()
	}
	if !trace.IsEnabled() {
		t.Error("the runtime's trace stopped under the application's flight recorder")
	}
}

// TestSkipsAboveMaxTracedGoroutines checks the off-CPU cap: with more
// goroutines than the limit no stretch starts the tracer; the stretches
// are counted as skipped and logged once, and the window has no waits.
func TestSkipsAboveMaxTracedGoroutines(t *testing.T) {
	defer SetDutyCycle(100)()
	var logs bytes.Buffer
	var stats Stats
	r := Start(time.Now(), Config{Stats: &stats, MaxTracedGoroutines: 1, Cycle: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if trace.IsEnabled() {
		t.Error("the tracer runs, with more goroutines than the limit")
	}
	// Two cycles at least, however late the timers fire.
	polltest.Until(t, "two stretches skipped", func() bool { return stats.Skipped.Load() >= 2 })
	p, err := r.Collect(time.Now(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Samples) != 0 {
		t.Errorf("%d waits recorded over the goroutine limit", len(p.Samples))
	}
	if n := stats.Skipped.Load(); n < 2 {
		t.Errorf("Skipped = %d, want at least 2", n)
	}
	if n := strings.Count(logs.String(), "goroutines, more than the 1 whose trace it reads"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, logs.String())
	}
}

// TestDutyCycleGoesOnWhileRequestsAreWatched keeps a watched request
// live for the whole run, so that every trace could go on for it: the
// stretch extended past its length and the watch traces of its rests
// must still leave the duty cycle its stretches. The waits of a workload
// that begins three cycles after the request turned long are recorded.
func TestDutyCycleGoesOnWhileRequestsAreWatched(t *testing.T) {
	defer SetDutyCycle(50)()
	const cycle = 2 * minCycle
	r := Start(time.Now(), Config{Cycle: cycle})
	r.Watch(fmt.Sprintf("%032x%016x", 1, 1), "/watched", time.Now().Add(-time.Second))
	waittest.OnChannel(3 * cycle)
	// The workload: waits in time.Sleep for ten cycles, a stretch
	// each.
	slept := time.Duration(0)
	for slept < 10*cycle {
		start := time.Now()
		waittest.InSleep(time.Millisecond)
		slept += time.Since(start)
	}
	p, err := r.Collect(time.Now(), true)
	if err != nil {
		t.Fatal(err)
	}
	// Scaled to the window from half its time: about what was slept,
	// less the time the goroutine waited for a CPU after each sleep.
	got := waited(p, "InSleep")["sleep"]
	t.Logf("%v of sleep recorded (scaled to the window) for %v slept", got, slept)
	if got < slept/4 || got > slept*3/2 {
		t.Errorf("%v of sleep recorded for %v slept: the watched request kept the duty cycle from recording", got, slept)
	}
}

// TestGoOnStopsForTheDutyCycle checks goOn's decision for a trace run on
// for a live watched request: it goes on until the duty cycle's next
// stretch is due, and then stops for it.
func TestGoOnStopsForTheDutyCycle(t *testing.T) {
	start := time.Unix(1000, 0)
	ms := func(n int) time.Time { return start.Add(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		name    string
		st      stretch
		dutyDue time.Time
		now     time.Time
		goOn    bool
	}{
		{"duty stretch, extended in its rest", stretch{start: start, length: 10 * time.Millisecond, rest: 90 * time.Millisecond}, ms(100), ms(50), true},
		{"duty stretch, next due", stretch{start: start, length: 10 * time.Millisecond, rest: 90 * time.Millisecond}, ms(100), ms(100), false},
		{"watch trace in a rest", stretch{start: start, length: watchStep, watch: true}, ms(500), ms(400), true},
		{"watch trace, next due", stretch{start: start, length: watchStep, watch: true}, ms(500), ms(500), false},
		{"nothing due (100 %)", stretch{start: start, length: watchStep, watch: true}, time.Time{}, ms(5000), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{SlowThreshold: DefaultSlowThreshold, MaxWatched: 1, MaxSlow: 1, SlowTraceRate: DefaultSlowTraceRate, SlowTraceBurst: DefaultSlowTraceBurst, Stats: new(Stats)}
			r := &Recorder{cfg: cfg, slow: newSlowState(&cfg), tokens: float64(cfg.SlowTraceBurst), refilled: time.Now(), dutyDue: tc.dutyDue}
			r.slow.apply(watchEvent{ids: fmt.Sprintf("%032x%016x", 1, 1), start: start})
			if r.slow.live != 1 {
				t.Fatalf("%d requests live, want 1", r.slow.live)
			}
			rd := newWindow(10, SampleType).newReading(start)
			tc.st.sink = newTraceSink(1<<20, 1<<20, [2][]byte{})
			rec := &recording{st: tc.st, rd: rd, end: tc.st.start.Add(tc.st.length), spentAt: -1}
			if got := r.goOn(rec, false, tc.now); got != tc.goOn || rec.due == tc.goOn {
				t.Errorf("goOn = %v, due = %v; want %v, %v", got, rec.due, tc.goOn, !tc.goOn)
			}
		})
	}
}

// TestRecorderNamesItsRoots runs requests renamed as they end, as otelhttp
// over a ServeMux names them, every other one waiting under its span,
// beside a tracker that the recorder's Stretches tell. Of those begun
// before the stretch, the tracker remembers the roots that the waits
// name, and only those, and gives the waits the requests' final routes;
// those begun and ended within the stretch are not remembered, their
// waits taking the final route from the trace.
func TestRecorderNamesItsRoots(t *testing.T) {
	defer SetDutyCycle(100)()
	s, tr, tracer := trackedTracer(t)

	const n = 20
	routes := map[string]string{} // by root span id
	within := map[string]bool{}   // begun after the stretch began
	var waited []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	// serve runs request i on a goroutine of its own, which carries its
	// labels: it begins, tells its root, waits for go, then waits under
	// its span if i is even, is renamed and ends. Requests from n on
	// begin after the stretch did.
	serve := func(i int, began chan<- struct{}, goOn <-chan struct{}) {
		defer wg.Done()
		_, span := tracer.Start(context.Background(), "GET")
		root := span.SpanContext().SpanID().String()
		mu.Lock()
		routes[root] = fmt.Sprint("GET /", i)
		within[root] = i >= n
		if i%2 == 0 {
			waited = append(waited, root)
		}
		mu.Unlock()
		began <- struct{}{}
		<-goOn
		if i%2 == 0 {
			waittest.OnChannel(5 * time.Millisecond)
		}
		span.SetName(fmt.Sprint("GET /", i))
		span.End()
	}
	tr.Sweep(time.Now())
	began, goOn := make(chan struct{}), make(chan struct{})
	for i := range n {
		wg.Add(1)
		go serve(i, began, goOn)
		<-began
	}
	tr.Sweep(time.Now()) // takes them in, begun before any stretch
	r := Start(time.Now(), Config{Stretches: s})
	close(goOn)
	wg.Wait()
	// The tracker knows the time of a request to a sweep: one after the
	// stretch began marks those begun since as begun within it.
	tr.Sweep(time.Now())
	for i := n; i < 2*n; i++ {
		wg.Add(1)
		go serve(i, began, goOn)
		<-began
	}
	wg.Wait()
	tr.Sweep(time.Now()) // finds them ended while the stretch runs
	p, err := r.Collect(time.Now(), true)
	if err != nil {
		t.Fatal(err)
	}
	q := tr.Window(time.Now())

	named := map[string]bool{}
	for _, smp := range p.Samples {
		root := label(smp, labels.LocalRootSpanIDKey)
		named[root] = named[root] || root != ""
		if !fnIn(p, smp, "OnChannel") {
			continue
		}
		got, ok := q.Route(root)
		if within[root] {
			// The trace gave the wait its route; that the tracker
			// does not remember the root is checked below.
			got, ok = label(smp, labels.RouteKey), true
		}
		if !ok || got != routes[root] {
			t.Errorf("a wait of root %q (within the stretch %v): route %q, %v; want %q", root, within[root], got, ok, routes[root])
		}
	}
	for _, root := range waited {
		if !named[root] {
			t.Errorf("no wait names root %s, which waited", root)
		}
	}
	for root := range routes {
		if _, ok := q.Route(root); ok != (named[root] && !within[root]) {
			t.Errorf("root %s: remembered %v, named by a wait %v, within the stretch %v", root, ok, named[root], within[root])
		}
	}
}

// TestWatchTraceNamesNoRoots runs a duty stretch and a watch trace over
// two requests renamed as they end, beside a tracker with room for one
// root of the stretches: the duty stretch, whose waits name roots, keeps
// one for its verdict and drops the other; the watch trace, which keeps
// no waits, keeps neither, and the Stretches never count it as running.
func TestWatchTraceNamesNoRoots(t *testing.T) {
	for _, tt := range []struct {
		watch              bool
		dropped, unsampled int64
	}{{false, 1, 0}, {true, 0, 2}} {
		t.Run(fmt.Sprint("watch=", tt.watch), func(t *testing.T) {
			s := new(requests.Stretches)
			tr := requests.New(requests.Config{MaxRoutes: 10, MaxRoots: 2, Stretches: s})
			if err := tr.Install(); err != nil {
				t.Fatal(err)
			}
			defer tr.Stop()
			r := &Recorder{cfg: Config{MaxTraceBytes: DefaultMaxTraceBytes, Stretches: s}}
			now := time.Now()
			tr.Sweep(now)
			var reqs []*requests.Request
			for i := range 2 {
				reqs = append(reqs, requests.Begin(fmt.Sprintf("%032x%016x", i+1, i+1), "GET", "", now))
				reqs[i].Labelled()
			}
			tr.Sweep(now)
			st := stretch{watch: tt.watch}
			r.traceStretch(&st)
			if st.sink == nil {
				t.Fatal("no trace started")
			}
			for i, q := range reqs {
				q.SetName(fmt.Sprint("GET /", i))
				q.End(now)
			}
			tr.Sweep(now)
			stopTrace()
			st.sink.endNaming()
			// The stretch's root, never told, is carried into the next
			// window.
			if q := tr.Window(now); q.Dropped != tt.dropped || q.Unsampled != tt.unsampled {
				t.Errorf("dropped %d, unsampled %d; want %d, %d", q.Dropped, q.Unsampled, tt.dropped, tt.unsampled)
			}
		})
	}
}

// TestRequestsGoroutinesTakeItsLastRoute runs a request renamed as it
// ends, whose goroutines wait past its end: one it started, one that one
// started, one that began a span of its own under the request, and one
// still waiting when the stretch ends. Every wait takes the request's
// last route, although each was kept after the trace gave it.
func TestRequestsGoroutinesTakeItsLastRoute(t *testing.T) {
	defer SetDutyCycle(100)()
	s, _, tracer := trackedTracer(t)

	r := Start(time.Now(), Config{Stretches: s})
	woken, held := make(chan struct{}), make(chan struct{})
	defer close(held)
	var wg sync.WaitGroup
	wg.Add(4)
	started := make(chan struct{}, 4)
	ctx, span := tracer.Start(context.Background(), "GET")
	go func() {
		defer wg.Done()
		started <- struct{}{}
		childWaits(woken)
	}()
	go func() {
		defer wg.Done()
		go func() {
			defer wg.Done()
			started <- struct{}{}
			grandchildWaits(woken)
		}()
	}()
	go func() {
		defer wg.Done()
		_, own := tracer.Start(ctx, "lookup")
		started <- struct{}{}
		spanWaits(woken)
		own.End()
	}()
	go func() {
		started <- struct{}{}
		heldWaits(held)
	}()
	for range 4 {
		<-started
	}
	polltest.Until(t, "each goroutine at its wait", func() bool {
		return blockedIn("childWaits", "grandchildWaits", "spanWaits", "heldWaits")
	})
	span.SetName("GET /users/{id}")
	span.End()
	close(woken)
	wg.Wait()
	p, err := r.Collect(time.Now(), true)
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range []string{"childWaits", "grandchildWaits", "spanWaits", "heldWaits"} {
		var n int
		for _, smp := range p.Samples {
			if !fnIn(p, smp, fn) {
				continue
			}
			n++
			if got := label(smp, labels.RouteKey); got != "GET /users/{id}" {
				t.Errorf("a wait in %s: route %q, want %q", fn, got, "GET /users/{id}")
			}
		}
		if n == 0 {
			t.Errorf("no wait in %s", fn)
		}
	}
}

//go:noinline
func childWaits(c <-chan struct{}) { <-c }

//go:noinline
func grandchildWaits(c <-chan struct{}) { <-c }

//go:noinline
func spanWaits(c <-chan struct{}) { <-c }

//go:noinline
func heldWaits(c <-chan struct{}) { <-c }

// blockedIn reports whether, for each of fns, a goroutine is blocked on a
// channel in it.
func blockedIn(fns ...string) bool {
	buf := make([]byte, 1<<20)
	all := string(buf[:runtime.Stack(buf, true)])
	for _, fn := range fns {
		if !slices.ContainsFunc(strings.Split(all, "\n\n"), func(g string) bool {
			return strings.Contains(g, "[chan receive]") && strings.Contains(g, "."+fn+"(")
		}) {
			return false
		}
	}
	return true
}

// trackedTracer installs, for the test, a request tracker told by the
// Stretches it returns, and returns a tracer whose spans it follows.
func trackedTracer(t *testing.T) (*requests.Stretches, *requests.Tracker, oteltrace.Tracer) {
	t.Helper()
	s := new(requests.Stretches)
	tr := requests.New(requests.Config{MaxRoutes: 100, Stretches: s})
	if err := tr.Install(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Stop)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return s, tr, labels.WrapTracerProvider(tp).Tracer("offcpu-test")
}
