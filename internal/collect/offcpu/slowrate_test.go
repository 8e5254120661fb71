package offcpu

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	xtrace "golang.org/x/exp/trace"

	"github.com/pprofotel/profiler/labels"
)

// TestChooseKeepsEveryRoute checks which explanations a window keeps
// past MaxSlow: the slowest minPerRoute of every route (as the
// request ended) first, then the slowest of the others; the rest counted
// dropped.
func TestChooseKeepsEveryRoute(t *testing.T) {
	for _, tc := range []struct {
		name    string
		maxSlow int
		counts  map[string]int // explanations per route
		want    map[string]int // kept per route
	}{
		{"under the bound, all", 100, map[string]int{"/a": 50, "/b": 3}, map[string]int{"/a": 50, "/b": 3}},
		{"a flood and two quiet ones", 25, map[string]int{"/a": 100, "/b": 3, "/c": 15}, map[string]int{"/a": 12, "/b": 3, "/c": 10}},
		{"more routes than room", 20, map[string]int{"/a": 30, "/b": 30, "/c": 30}, map[string]int{"/a": 10, "/b": 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stats Stats
			ss := newSlowState(&Config{MaxSlow: tc.maxSlow, Stats: &stats})
			total, i := 0, 0
			// /a's requests are the slowest, /c's the fastest.
			for _, ep := range []string{"/a", "/b", "/c"} {
				for j := range tc.counts[ep] {
					i++
					base := map[string]time.Duration{"/a": 3 * time.Second, "/b": 2 * time.Second, "/c": time.Second}[ep]
					ss.explained = append(ss.explained, explanation{ids: fmt.Sprintf("%048x", i), route: ep, dur: base - time.Duration(j)*time.Millisecond})
					total++
				}
			}
			ss.choose()
			got := map[string]int{}
			for _, e := range ss.explained {
				got[e.route]++
			}
			for ep, n := range tc.want {
				if got[ep] != n {
					t.Errorf("%s: kept %d, want %d (kept %v)", ep, got[ep], n, got)
				}
			}
			if len(ss.explained) != min(total, tc.maxSlow) {
				t.Errorf("kept %d, want %d", len(ss.explained), min(total, tc.maxSlow))
			}
			if d := stats.SlowRequestsDropped.Load(); d != int64(total-len(ss.explained)) {
				t.Errorf("dropped %d, want %d", d, total-len(ss.explained))
			}
			// Of each route, the slowest are kept.
			for k := 1; k < len(ss.explained); k++ {
				a, b := ss.explained[k-1], ss.explained[k]
				if a.route == b.route && a.dur < b.dur {
					t.Errorf("%s: %v kept before %v", a.route, a.dur, b.dur)
				}
			}
		})
	}
}

// TestFinishingInDebt checks when a trace run for watched requests goes
// on as far as the budget is concerned: while it holds, and once spent
// for the requests watched until then and those whose route is owed
// explanations, within the debt bound.
func TestFinishingInDebt(t *testing.T) {
	ids := func(i int) string { return fmt.Sprintf("%032x%016x", i, i) }
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		name string
		// tokens is the budget; explainedA the window's explanations of
		// /a so far; before and after are /a's requests watched before
		// and after the budget ran out that still live.
		tokens        float64
		explainedA    int
		before, after int
		want          bool
	}{
		{"budget left", 1, minPerRoute, 0, 0, true},
		{"spent, one watched before lives", 0, minPerRoute, 1, 0, true},
		{"spent, only later ones live", 0, minPerRoute, 0, 2, false},
		{"spent, later ones of a route owed", 0, minPerRoute - 1, 0, 2, true},
		{"spent, nothing lives", 0, 0, 0, 0, false},
		{"past the debt bound", -float64(DefaultSlowTraceBurst) * maxDebt, 0, 1, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{SlowThreshold: DefaultSlowThreshold, MaxWatched: 16, MaxSlow: 1000, SlowTraceBurst: DefaultSlowTraceBurst, SlowTraceRate: DefaultSlowTraceRate, Stats: new(Stats)}
			r := &Recorder{cfg: cfg, slow: newSlowState(&cfg), tokens: tc.tokens, refilled: time.Now().Add(time.Hour)}
			r.slow.byRoute["/a"] = tc.explainedA
			n := 0
			for range tc.before {
				n++
				r.slow.apply(watchEvent{ids: ids(n), route: "/a", start: t0})
			}
			spentAt := -1
			if tc.tokens <= 0 {
				// The budget runs out here.
				r.finishing(&spentAt)
			}
			for range tc.after {
				n++
				r.slow.apply(watchEvent{ids: ids(n), route: "/a", start: t0})
			}
			if got := r.finishing(&spentAt); got != tc.want {
				t.Errorf("finishing = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSlowRequestsAtHighRate serves slow requests at about 40 a second
// on three routes for a second and a half (a root span each, waiting
// 300 ms on a contended mutex; about ten live at any moment), under a
// recorder at the default settings that rests between duty stretches:
// one trace at a time serves them all. Every route gets at least
// min(n, 10) of its slow requests explained as they were (at least 80 %
// of the duration the mutex wait under the handler, linked to the span),
// and at least 80 % of all are.
func TestSlowRequestsAtHighRate(t *testing.T) {
	defer SetDutyCycle(1)()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	tracer := labels.WrapTracerProvider(tp).Tracer("slow-test")
	var stats Stats
	r := Start(time.Now(), Config{Stats: &stats})
	routes := []string{"/a", "/b", "/c"}
	var (
		mu   sync.Mutex
		byEP = map[string][]served{}
		wg   sync.WaitGroup
	)
	for i := range 60 {
		ep := routes[i%len(routes)]
		wg.Go(func() {
			start := time.Now()
			_, span := tracer.Start(context.Background(), "GET "+ep)
			sc := span.SpanContext()
			ids := sc.TraceID().String() + sc.SpanID().String()
			watched := make(chan struct{})
			go func() {
				time.Sleep(DefaultSlowThreshold / 2)
				r.Watch(ids, ep, start)
				close(watched)
			}()
			handleLock(300 * time.Millisecond)
			span.End()
			end := time.Now()
			<-watched
			r.Ended(ids, ep, start, end)
			mu.Lock()
			byEP[ep] = append(byEP[ep], served{ids: ids, start: start, end: end})
			mu.Unlock()
		})
		time.Sleep(25 * time.Millisecond)
	}
	wg.Wait()
	if _, err := r.Collect(time.Now(), true); err != nil {
		t.Fatal(err)
	}
	p := r.Slow()
	total, ok := 0, 0
	for _, ep := range routes {
		n := 0
		for _, s := range byEP[ep] {
			d := s.end.Sub(s.start)
			all, matching, _ := explained(p, s.ids, "off_cpu", "sync", "handleLock")
			if all >= d*90/100 && all <= d*110/100 && matching >= d*80/100 {
				n++
			}
		}
		t.Logf("%s: %d of %d slow requests explained", ep, n, len(byEP[ep]))
		if want := min(len(byEP[ep]), minPerRoute); n < want {
			t.Errorf("%s: %d of %d slow requests explained, want at least %d", ep, n, len(byEP[ep]), want)
		}
		total += len(byEP[ep])
		ok += n
	}
	if ok < total*80/100 {
		t.Errorf("%d of %d slow requests explained, want at least 80 %%; Stats: %d explained, %d dropped", ok, total, stats.SlowRequestsExplained.Load(), stats.SlowRequestsDropped.Load())
	}
}

// TestExplainedBoundedInTheWindow checks that a window holds at most
// twice MaxSlow explanations while it runs, whatever the rate of slow
// requests, and still sends the slowest.
func TestExplainedBoundedInTheWindow(t *testing.T) {
	var stats Stats
	ss := newSlowState(&Config{SlowThreshold: 100 * time.Millisecond, MaxWatched: 16, MaxSlow: 3, Stats: &stats})
	ids := func(i int) string { return fmt.Sprintf("%032x%016x", i, i) }
	t0 := time.Unix(1000, 0)
	run := []xtrace.StackFrame{{Func: "main.handle"}}
	most := 0
	for i := 1; i <= 100; i++ {
		d := time.Duration(100+i) * time.Millisecond
		ss.apply(watchEvent{ids: ids(i), route: "/a", start: t0})
		ss.byRoot[ids(i)[32:]].goroutines[1] = &timeline{intervals: []interval{{start: t0.UnixNano(), end: t0.Add(d).UnixNano(), state: stateRunning, frames: run}}}
		ss.apply(watchEvent{ids: ids(i), route: "/a", start: t0, end: t0.Add(d), ended: true})
		ss.settle(0, false, t0.Add(time.Second))
		most = max(most, len(ss.explained))
	}
	if most > 6 {
		t.Errorf("the window held %d explanations, want at most 2 × MaxSlow = 6", most)
	}
	ss.choose()
	for i, e := range ss.explained {
		if want := time.Duration(200-i) * time.Millisecond; e.dur != want {
			t.Errorf("explanation %d lasted %v, want %v (the slowest)", i, e.dur, want)
		}
	}
	if d := stats.SlowRequestsDropped.Load(); d != 97 {
		t.Errorf("dropped %d, want 97", d)
	}
}

// TestWatchSlotsPerRoute checks that a request turning long while
// MaxWatched are watched is watched all the same, up to twice that, when
// none of its route is: requests of one route (or slowed by a busy
// CPU) do not keep another's from being watched.
func TestWatchSlotsPerRoute(t *testing.T) {
	var stats Stats
	ss := newSlowState(&Config{SlowThreshold: 100 * time.Millisecond, MaxWatched: 2, MaxSlow: 10, Stats: &stats})
	t0 := time.Unix(1000, 0)
	for i, tc := range []struct {
		route   string
		watched bool
	}{
		{"/a", true}, {"/a", true}, {"/a", false}, {"/b", true}, {"/b", false}, {"/c", true}, {"/d", false},
	} {
		ids := fmt.Sprintf("%032x%016x", i+1, i+1)
		ss.apply(watchEvent{ids: ids, route: tc.route, start: t0})
		if got := ss.byRoot[ids[32:]] != nil; got != tc.watched {
			t.Errorf("request %d of %s watched: %v, want %v", i+1, tc.route, got, tc.watched)
		}
	}
	if ss.live != 4 || stats.SlowRequestsDropped.Load() != 3 {
		t.Errorf("%d watched, %d dropped; want 4, 3", ss.live, stats.SlowRequestsDropped.Load())
	}
	// /a's first ends: a /d is watched again only once fewer than twice
	// MaxWatched are.
	ss.apply(watchEvent{ids: fmt.Sprintf("%032x%016x", 1, 1), route: "/a", start: t0, end: t0.Add(time.Second), ended: true})
	ss.apply(watchEvent{ids: fmt.Sprintf("%032x%016x", 8, 8), route: "/d", start: t0})
	if ss.live != 4 || ss.liveBy["/a"] != 1 || ss.liveBy["/d"] != 1 {
		t.Errorf("%d watched, by route %v; want 4, /a 1 and /d 1", ss.live, ss.liveBy)
	}
}
