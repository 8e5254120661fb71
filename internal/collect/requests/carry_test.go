package requests

import (
	"testing"
	"time"
)

// TestEndedAndCarried checks the last renamed roots a window keeps for
// the goroutine profiles (SnapshotRoute), and Carry, beside a CPU profile and a trace
// that never record, so that no root is remembered otherwise: of three
// renamed roots ended with room for two, the window gives the last two
// their final route and forgets the first; a root not renamed is left to
// its labels. A root carried is remembered by the window after, and the
// one after that as its window before; one not carried again is then
// forgotten. A running request and a malformed id are not carried, nor
// counted as ended.
func TestEndedAndCarried(t *testing.T) {
	tr := install(t, Config{MaxRoots: 8, Parts: new(Stretches), Stretches: new(Stretches)}) // the last 2 renamed roots
	now := time.Now()
	// A sweep takes the requests of each P in turn: one sweep each keeps
	// their order.
	for n := 1; n <= 3; n++ {
		r := Begin(ids(n), "GET", "", now)
		r.SetName("GET /" + rootID(n))
		r.End(now)
		tr.Sweep(now)
	}
	Begin(ids(4), "/kept", "", now).End(now)
	running := Begin(ids(5), "GET", "", now)
	defer running.End(now)
	q := tr.Window(now)
	route := func(n int) string { return "GET /" + rootID(n) }
	check := func(window string, q *Requests, want map[int]string) {
		t.Helper()
		for n := 1; n <= 4; n++ {
			got, ok := q.SnapshotRoute(rootID(n))
			if w, known := want[n]; ok != known || got != w {
				t.Errorf("%s: route of root %d %q, %v; want %q, %v", window, n, got, ok, w, known)
			}
		}
	}
	check("the window they ended in", &q, map[int]string{2: route(2), 3: route(3)})

	if n := tr.Carry(&q, []string{rootID(2), rootID(5), "not an id"}); n != 1 {
		t.Errorf("Carry counts %d roots of requests that ended, want 1", n)
	}
	q = tr.Window(now)
	check("the window after", &q, map[int]string{2: route(2)})
	if e, ok := q.Route(rootID(5)); !ok || e != "GET" {
		t.Errorf("the running request: route %q, %v; want %q, true", e, ok, "GET")
	}
	q = tr.Window(now)
	check("two windows after", &q, map[int]string{2: route(2)}) // as the window before's
	q = tr.Window(now)
	check("three windows after", &q, nil)
}

// TestCarriedWithinMaxRoots checks that Carry keeps no more than the
// window's MaxRoots: with the window after already full, both roots
// carried are dropped, and counted.
func TestCarriedWithinMaxRoots(t *testing.T) {
	tr := install(t, Config{MaxRoots: 8}) // remembers every renamed root
	now := time.Now()
	end := func(from, to int) {
		for n := from; n <= to; n++ {
			r := Begin(ids(n), "GET", "", now)
			r.SetName("GET /x")
			r.End(now)
		}
		tr.Sweep(now)
	}
	end(1, 2)
	q := tr.Window(now)
	end(3, 10) // fills the next window's 8
	tr.Carry(&q, []string{rootID(1), rootID(2)})
	q = tr.Window(now)
	if q.Dropped != 2 {
		t.Errorf("2 roots carried into a full window: %d dropped, want 2", q.Dropped)
	}
}

// TestSnapshot checks SnapshotDue and Snapshot: with room for the last
// four renamed roots, two that ended since the window began make a
// goroutine profile due; the roots it names among them are remembered
// through the window's end, after others took their place, and the due
// is cleared until two more end.
func TestSnapshot(t *testing.T) {
	tr := install(t, Config{MaxRoots: 16, Parts: new(Stretches), Stretches: new(Stretches)})
	now := time.Now()
	end := func(from, to int) {
		for n := from; n <= to; n++ {
			r := Begin(ids(n), "GET", "", now)
			r.SetName("GET /" + rootID(n))
			r.End(now)
			tr.Sweep(now) // in order: see TestEndedAndCarried
		}
	}
	end(1, 1)
	if tr.SnapshotDue() {
		t.Error("a snapshot due after one renamed root of four")
	}
	end(2, 2)
	if !tr.SnapshotDue() {
		t.Error("no snapshot due after two renamed roots of four")
	}
	tr.Snapshot([]string{rootID(1), "not an id"})
	if tr.SnapshotDue() {
		t.Error("a snapshot due right after one")
	}
	end(3, 10)
	q := tr.Window(now)
	for n, want := range map[int]bool{1: true, 2: false, 10: true} {
		if e, ok := q.SnapshotRoute(rootID(n)); ok != want || ok && e != "GET /"+rootID(n) {
			t.Errorf("root %d: route %q, %v; want known %v", n, e, ok, want)
		}
	}
}

// TestCarryCountsNewlyOutlived checks what Carry returns: the roots of
// requests that ended, known or not, that the Carry before was not given.
func TestCarryCountsNewlyOutlived(t *testing.T) {
	tr := install(t, Config{MaxRoots: 16})
	now := time.Now()
	for n := 1; n <= 3; n++ {
		r := Begin(ids(n), "GET", "", now)
		r.SetName("GET /x")
		r.End(now)
	}
	for i, tt := range []struct {
		roots []int
		want  int
	}{
		{[]int{1, 2}, 2},
		{[]int{1, 2}, 0},
		{[]int{2, 3}, 1},
		{[]int{2, 3, 99}, 1}, // 99: a root no window knows
		{[]int{2, 3, 99}, 0},
	} {
		q := tr.Window(now)
		var roots []string
		for _, n := range tt.roots {
			roots = append(roots, rootID(n))
		}
		if got := tr.Carry(&q, roots); got != tt.want {
			t.Errorf("window %d: Carry(%v) = %d, want %d", i, tt.roots, got, tt.want)
		}
	}
}
