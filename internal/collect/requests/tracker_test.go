package requests

import (
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// ids returns the ids of a request whose root span id is the 16 hex
// digits of n.
func ids(n int) string {
	return fmt.Sprintf("%032x%016x", n, n)
}

func rootID(n int) string { return fmt.Sprintf("%016x", n) }

// install installs a Tracker for the test.
func install(t *testing.T, cfg Config) *Tracker {
	t.Helper()
	tr := New(cfg)
	if err := tr.Install(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Stop)
	return tr
}

// step is what happens to a request in a window.
type step struct {
	n     int // the request's number, its root span id
	name  string
	begin bool
	// startRoute is the route Begin is given, route one given later.
	startRoute string
	rename     string
	route      string
	end        bool
}

func TestCountsAndRoutes(t *testing.T) {
	tests := []struct {
		name      string
		maxRoutes int
		windows   [][]step
		// counts and roots are what each window returns; roots maps a
		// request's number to the route Route returns, "" for
		// unknown.
		counts     []map[string]int64
		roots      []map[int]string
		overflowed []int64
	}{
		{
			name: "name, renamed, routed",
			windows: [][]step{{
				{n: 1, begin: true, name: "GET", end: true},
				{n: 2, begin: true, name: "GET", rename: "GET /users", end: true},
				{n: 3, begin: true, name: "GET", route: "/users/{id}", end: true},
				{n: 4, begin: true, name: "GET", route: "/users/{id}", rename: "GET /users/7", end: true},
			}},
			counts:     []map[string]int64{{"GET": 1, "GET /users": 1, "/users/{id}": 2}},
			roots:      []map[int]string{{1: "GET", 2: "GET /users", 3: "/users/{id}", 4: "/users/{id}", 5: ""}},
			overflowed: []int64{0},
		},
		{
			name: "counted in the window it ends in, known for two",
			windows: [][]step{
				{{n: 1, begin: true, name: "a"}, {n: 2, begin: true, name: "b", end: true}},
				{{n: 1, route: "/a", end: true}, {n: 3, begin: true, name: "c", end: true}},
				{{n: 4, begin: true, name: "d"}},
				{},
			},
			counts: []map[string]int64{
				{"a": 0, "b": 1},          // a runs at the window's end
				{"/a": 1, "c": 1, "b": 0}, // b: a root ended in the window before
				{"d": 0, "/a": 0, "c": 0},
				{"d": 0},
			},
			roots: []map[int]string{
				{1: "a", 2: "b"},
				{1: "/a", 2: "b", 3: "c"},
				{1: "/a", 2: "", 3: "c", 4: "d"},
				{1: "", 3: "", 4: "d"},
			},
			overflowed: []int64{0, 0, 0, 0},
		},
		{
			name: "long names cut",
			windows: [][]step{{
				{n: 1, begin: true, name: strings.Repeat("a", 300), end: true},
				{n: 2, begin: true, name: strings.Repeat("a", 256), end: true},
				{n: 3, begin: true, name: strings.Repeat("é", 200), end: true},
			}},
			counts: []map[string]int64{{
				strings.Repeat("a", 256) + "…(300 bytes)": 1,
				strings.Repeat("a", 256):                  1,
				strings.Repeat("é", 128) + "…(400 bytes)": 1,
			}},
			roots:      []map[int]string{{2: strings.Repeat("a", 256)}},
			overflowed: []int64{0},
		},
		{
			name:      "bounded",
			maxRoutes: 2,
			windows: [][]step{
				{
					{n: 1, begin: true, name: "a", end: true},
					{n: 2, begin: true, name: "b", end: true},
					{n: 3, begin: true, name: "c", end: true},
					{n: 4, begin: true, name: "a", end: true},
					{n: 5, begin: true, name: "d", end: true},
					{n: 6, begin: true, name: "_other", end: true},
					{n: 7, begin: true, name: "e"},
				},
				{{n: 8, begin: true, name: "c", end: true}},
			},
			counts: []map[string]int64{
				{"a": 2, "b": 1, "_other": 3},
				{"c": 1, "e": 0, "_other": 0},
			},
			roots: []map[int]string{
				{1: "a", 2: "b", 3: "_other", 4: "a", 5: "_other", 7: "_other"},
				// a and b ended in the window before, in which c did not fit.
				{1: "_other", 3: "_other", 7: "e", 8: "c"},
			},
			overflowed: []int64{3, 0},
		},
		{
			// A route given at the start is the request's route; a
			// rename does not change it, a route given later does.
			name: "route at start",
			windows: [][]step{{
				{n: 1, begin: true, name: "GET", startRoute: "/users/{id}", end: true},
				{n: 2, begin: true, name: "GET", startRoute: "/users/{id}"},
				{n: 2, route: "/orders", end: true},
				{n: 3, begin: true, name: "GET", startRoute: "/users/{id}"},
				{n: 3, rename: "GET /users/{id}", end: true},
			}},
			counts:     []map[string]int64{{"/users/{id}": 2, "/orders": 1}},
			roots:      []map[int]string{{1: "/users/{id}", 2: "/orders", 3: "/users/{id}"}},
			overflowed: []int64{0},
		},
		{
			// More routes than admit remembers, an empty one among
			// them, each seen again after the window is full.
			name:      "recent routes",
			maxRoutes: 3,
			windows: [][]step{{
				{n: 1, begin: true, name: "a", end: true},
				{n: 2, begin: true, name: "", end: true},
				{n: 3, begin: true, name: "b", end: true},
				{n: 4, begin: true, name: "", end: true},
				{n: 5, begin: true, name: "c", end: true},
				{n: 6, begin: true, name: "d", end: true},
				{n: 7, begin: true, name: "e", end: true},
				{n: 8, begin: true, name: "a", end: true},
				{n: 9, begin: true, name: "b", end: true},
				{n: 10, begin: true, name: "c", end: true},
				{n: 11, begin: true, name: "", end: true},
			}},
			counts:     []map[string]int64{{"a": 2, "": 3, "b": 2, "_other": 4}},
			roots:      []map[int]string{{1: "a", 3: "b", 5: "_other", 8: "a", 9: "b", 10: "_other"}},
			overflowed: []int64{4},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// LabelledRoots: every root is remembered (TestRootsRemembered
			// checks which are without it).
			tr := install(t, Config{MaxRoutes: tt.maxRoutes, LabelledRoots: true})
			reqs := map[int]*Request{}
			start := time.Now()
			for w, steps := range tt.windows {
				for _, s := range steps {
					if s.begin {
						reqs[s.n] = Begin(ids(s.n), s.name, s.startRoute, start)
					}
					r := reqs[s.n]
					if s.route != "" {
						r.SetHTTPRoute(s.route)
					}
					if s.rename != "" {
						r.SetName(s.rename)
					}
					if s.end {
						r.End(start.Add(time.Millisecond))
					}
					// Begin's shards are swept in no particular
					// order: the routes are admitted in the steps'.
					tr.Sweep(start.Add(time.Millisecond))
				}
				q := tr.Window(start.Add(time.Duration(w+1) * time.Second))
				if !maps.Equal(q.Counts, tt.counts[w]) {
					t.Errorf("window %d: counts %v, want %v", w, q.Counts, tt.counts[w])
				}
				if q.Overflowed != tt.overflowed[w] {
					t.Errorf("window %d: overflowed %d, want %d", w, q.Overflowed, tt.overflowed[w])
				}
				for n, want := range tt.roots[w] {
					got, ok := q.Route(rootID(n))
					if got != want || ok != (want != "") {
						t.Errorf("window %d: route of root %d is %q, %v; want %q", w, n, got, ok, want)
					}
				}
			}
		})
	}
}

func TestRouteOfBadID(t *testing.T) {
	tr := install(t, Config{LabelledRoots: true})
	Begin(ids(1), "a", "", time.Now()).End(time.Now())
	q := tr.Window(time.Now())
	for _, id := range []string{"", "1", rootID(1) + "0", "000000000000000g", "000000000000000G"} {
		if e, ok := q.Route(id); ok {
			t.Errorf("Route(%q) = %q, true", id, e)
		}
	}
	if e, ok := q.Route(rootID(1)); !ok || e != "a" {
		t.Errorf("Route of root 1 = %q, %v", e, ok)
	}
}

// TestAgedOut begins requests that never end, then requests that do:
// those beyond MaxRequests, and those older than MaxAge, are aged out and
// counted as such, and never keep a later request from being counted.
func TestAgedOut(t *testing.T) {
	tests := []struct {
		name          string
		cfg           Config
		never, ending int
		// sweep sweeps after the requests that never end; later is how
		// long after them the others begin.
		sweep   bool
		later   time.Duration
		agedOut int64
	}{
		{"beyond MaxRequests, one sweep", Config{}, 100_000, 10_000, false, 0, 100_000 - DefaultMaxRequests},
		{"beyond MaxRequests, swept between", Config{}, 100_000, 10_000, true, 0, 100_000 - DefaultMaxRequests},
		{"older than MaxAge", Config{MaxAge: time.Second}, 100_000, 10_000, true, time.Second, 100_000},
		{"small bounds", Config{MaxRequests: 3, MaxAge: time.Minute}, 5, 4, true, 30 * time.Second, 2},
		{"small bounds, aged", Config{MaxRequests: 3, MaxAge: time.Minute}, 5, 4, true, time.Minute, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := install(t, tt.cfg)
				start := time.Now()
				for n := range tt.never {
					Begin(ids(n+1), "stream", "", start)
				}
				if tt.sweep {
					tr.Sweep(start)
				}
				time.Sleep(tt.later)
				for n := range tt.ending {
					Begin(ids(tt.never+n+1), "/work", "", time.Now()).End(time.Now())
				}
				q := tr.Window(time.Now())
				if got := q.Counts["/work"]; got != int64(tt.ending) {
					t.Errorf("%d of %d requests counted", got, tt.ending)
				}
				if q.AgedOut != tt.agedOut {
					t.Errorf("%d aged out, want %d", q.AgedOut, tt.agedOut)
				}
				if q.Counts["stream"] != 0 {
					t.Errorf("%d requests that never ended counted", q.Counts["stream"])
				}
				if q := tr.Window(time.Now()); q.AgedOut != 0 {
					t.Errorf("%d aged out again in the next window", q.AgedOut)
				}
			})
		})
	}
}

// TestRootsRemembered checks which roots a window remembers: those whose
// route is not the one their labels carry, up to MaxRoots, and, with
// LabelledRoots, the others while the window holds fewer than half of
// MaxRoots.
func TestRootsRemembered(t *testing.T) {
	tests := []struct {
		name            string
		labelled        bool
		renamed, others int
		// knownRenamed and knownOthers count the roots remembered of
		// each kind; dropped counts the renamed ones not remembered.
		// Begin's shards are swept in no particular order, so which
		// of a kind are remembered when not all are is not checked.
		knownRenamed, knownOthers int
		dropped                   int64
	}{
		{"none", true, 0, 0, 0, 0, 0},
		{"renamed only", true, 6, 0, 4, 0, 2},
		{"others beyond half", true, 0, 6, 0, 2, 0},
		{"others then renamed", true, 2, 3, 2, 2, 0},
		{"others not remembered", false, 2, 3, 2, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := install(t, Config{MaxRoots: 4, LabelledRoots: tt.labelled})
			start := time.Now()
			for n := 1; n <= tt.others; n++ {
				Begin(ids(n), "/a", "", start).End(start)
			}
			// Sweep the others first, as requests that ended earlier
			// would be.
			tr.Sweep(start)
			for n := tt.others + 1; n <= tt.others+tt.renamed; n++ {
				r := Begin(ids(n), "GET", "", start)
				r.SetName("GET /b")
				r.End(start)
			}
			q := tr.Window(start)
			known := func(from, to int) int {
				k := 0
				for i := from; i <= to; i++ {
					if _, ok := q.Route(rootID(i)); ok {
						k++
					}
				}
				return k
			}
			others, renamed := known(1, tt.others), known(tt.others+1, tt.others+tt.renamed)
			if others != tt.knownOthers || renamed != tt.knownRenamed || q.Dropped != tt.dropped {
				t.Errorf("remembered %d others and %d renamed, dropped %d; want %d, %d, %d",
					others, renamed, q.Dropped, tt.knownOthers, tt.knownRenamed, tt.dropped)
			}
		})
	}
}

func TestLongRequests(t *testing.T) {
	var mu sync.Mutex
	var long, ended []string
	tr := install(t, Config{
		MaxAge:    3 * time.Hour,
		LongAfter: time.Second,
		OnLong:    func(r *Request) { mu.Lock(); long = append(long, r.Route()); mu.Unlock() },
		OnEnd: func(r *Request) {
			end, ok := r.Ended()
			mu.Lock()
			ended = append(ended, fmt.Sprintf("%s %v %v", r.Route(), end.Sub(r.Start()), ok))
			mu.Unlock()
		},
	})
	// Started an hour ago, so that the sweeper's sweeps see them long
	// too: OnLong must be called once whoever sweeps.
	start := time.Now().Add(-time.Hour)
	slow := Begin(ids(1), "slow", "", start)
	fast := Begin(ids(2), "fast", "", time.Now())
	tr.Window(time.Now())
	tr.Window(time.Now())
	slow.End(start.Add(90 * time.Minute))
	slow.End(start.Add(2 * time.Hour)) // only the first End counts
	fast.End(time.Now())
	q := tr.Window(time.Now())
	mu.Lock()
	defer mu.Unlock()
	if len(long) != 1 || long[0] != "slow" {
		t.Errorf("OnLong for %v, want [slow]", long)
	}
	if len(ended) != 1 || ended[0] != "slow 1h30m0s true" {
		t.Errorf("OnEnd for %v, want [slow 1h30m0s true]", ended)
	}
	if q.Counts["slow"] != 1 || q.Counts["fast"] != 1 {
		t.Errorf("counts %v", q.Counts)
	}
}

func TestInstall(t *testing.T) {
	if r := Begin(ids(1), "a", "", time.Now()); r != nil {
		t.Fatalf("Begin with no tracker installed returned %v", r)
	}
	a, b := New(Config{}), New(Config{})
	if err := a.Install(); err != nil {
		t.Fatal(err)
	}
	if err := b.Install(); err != ErrInstalled {
		t.Errorf("second Install: %v, want ErrInstalled", err)
	}
	b.Stop() // not installed: leaves a
	if Begin(ids(1), "a", "", time.Now()) == nil {
		t.Error("a was uninstalled by b's Stop")
	}
	a.Stop()
	a.Stop()
	if r := Begin(ids(2), "a", "", time.Now()); r != nil {
		t.Errorf("Begin after Stop returned %v", r)
	}
	if err := b.Install(); err != nil {
		t.Errorf("Install after the first stopped: %v", err)
	}
	b.Stop()
}

func TestSweeperEndsWhenIdle(t *testing.T) {
	tr := install(t, Config{})
	r := Begin(ids(1), "a", "", time.Now())
	tr.mu.Lock()
	exited, sweeping := tr.exited, tr.sweeping.Load()
	tr.mu.Unlock()
	if !sweeping {
		t.Fatal("no sweeper while a request runs")
	}
	r.End(time.Now())
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the sweeper still runs 10s after the last request ended")
	}
	// The sweeper it counted.
	if q := tr.Window(time.Now()); q.Counts["a"] != 1 {
		t.Errorf("counts %v", q.Counts)
	}
	// A new request starts it again.
	Begin(ids(2), "b", "", time.Now())
	sweeping = tr.sweeping.Load()
	if !sweeping {
		t.Error("no sweeper for a new request")
	}
}

func TestNilRequest(t *testing.T) {
	var r *Request
	r.SetName("a")
	r.SetHTTPRoute("/a")
	r.End(time.Now())
	if _, ok := r.Ended(); ok || r.Route() != "" || r.IDs() != "" || r.RootID() != "" || !r.Start().IsZero() {
		t.Error("a nil request is not empty")
	}
}

// TestConcurrent begins and ends requests from several goroutines while
// windows end: every request is counted once.
func TestConcurrent(t *testing.T) {
	tr := install(t, Config{})
	const goroutines, each = 8, 2000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				n := g*each + i + 1
				r := Begin(ids(n), fmt.Sprint("e", n%3), "", time.Now())
				r.SetHTTPRoute(fmt.Sprint("/", n%3))
				r.End(time.Now())
			}
		})
	}
	total := map[string]int64{}
	add := func(q Requests) {
		for e, c := range q.Counts {
			if c != 0 { // a route of running requests only
				total[e] += c
			}
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for stop := false; !stop; {
		select {
		case <-done:
			stop = true
		default:
		}
		add(tr.Window(time.Now()))
	}
	add(tr.Window(time.Now()))
	want := map[string]int64{"/0": 5333, "/1": 5334, "/2": 5333}
	if !maps.Equal(total, want) {
		t.Errorf("counts %v, want %v", total, want)
	}
}

// TestFullShardSweptEarly checks that a shard filling up has the
// sweeper sweep before its period ends, so that the requests that ended
// are not kept for the garbage collector to mark until then; but not
// while so many requests run that a sweep would go through more of them
// than it takes in.
func TestFullShardSweptEarly(t *testing.T) {
	for _, tt := range []struct {
		name    string
		running int // requests left running before, as a bound's share
		counted bool
	}{
		{"few running", 0, true},
		{"many running", 2, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := install(t, Config{})
				bound := freshBound * len(tr.shards.all)
				start := time.Now()
				for n := range tt.running * bound {
					Begin(ids(n+1), "stream", "", start)
				}
				tr.Sweep(start)
				// Enough for one shard at least to reach freshBound.
				for n := range bound {
					Begin(ids(tt.running*bound+n+1), "/work", "", start).End(start)
				}
				synctest.Wait() // the sweeper sweeps, or waits for its tick
				tr.sweepMu.Lock()
				_, ok := tr.win.index["/work"]
				tr.sweepMu.Unlock()
				if ok != tt.counted {
					t.Errorf("requests counted before the sweep period ended: %v, want %v", ok, tt.counted)
				}
				if q := tr.Window(time.Now()); q.Counts["/work"] != int64(bound) {
					t.Errorf("%d of %d requests counted", q.Counts["/work"], bound)
				}
			})
		})
	}
}
