package requests

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRootsInStretches runs scripts of requests, sampling stretches and
// sweeps against a Tracker with Stretches, and checks which roots the
// last window's Requests knows. The words of a script:
//
//	sweep    a sweep
//	on       a stretch begins
//	xN       a sample of the stretch names request N's root
//	tell     the stretch's samples so far are read and told
//	off      the stretch ends, its samples read and told
//	pon      a part begins
//	sN       a sample of the part names request N's root
//	poff     the part ends, and its samples are told
//	pnext    the part ends and the next begins, as the collector does
//	named    the samples of the part that ended are told
//	bsweep   a sweep of the Tracker's own sweeper
//	window   the window ends
//	rN       request N begins under the name GET, labelled with it
//	lN       request N begins with its route, /N, labelled with it
//	oN       request N begins, labelled, and has run long
//	eN       request N ends: one begun with rN or oN renamed GET /N
//
// A stretch that begins or ends while a request runs is told to the
// tracker between two sweeps, as the collector does: the tracker knows
// the time of a request to a sweep. What is told is heard at the next
// sweep. A root kept for both the parts and the stretches, and named by
// neither, counts as unsampled by each.
func TestRootsInStretches(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		labelled bool // Config.LabelledRoots
		none     bool // no Stretches
		parts    bool // Config.Parts
		// known maps a request to the route the last window gives it,
		// "" for none.
		known     map[int]string
		unsampled int64
	}{
		{name: "ended before a stretch", script: "sweep r1 sweep e1 sweep on off window",
			known: map[int]string{1: ""}, unsampled: 1},
		{name: "began after a stretch", script: "on off sweep sweep r1 sweep e1 window",
			known: map[int]string{1: ""}, unsampled: 1},
		{name: "between two stretches", script: "on sweep off sweep r1 sweep e1 sweep on off window",
			known: map[int]string{1: ""}, unsampled: 1},
		{name: "began before, ended during", script: "sweep r1 sweep on x1 sweep e1 sweep off window",
			known: map[int]string{1: "GET /1"}},
		{name: "began during, ended after", script: "on sweep r1 x1 sweep off sweep e1 window",
			known: map[int]string{1: "GET /1"}},
		{name: "began and ended during: the trace has its route, not kept", script: "on sweep r1 x1 sweep e1 sweep off window",
			known: map[int]string{1: ""}},
		{name: "began before, ended during, not named", script: "sweep r1 sweep on sweep e1 sweep off window",
			known: map[int]string{1: ""}, unsampled: 1},
		{name: "a stretch began and ended during its life", script: "sweep r1 sweep on x1 sweep off sweep e1 window",
			known: map[int]string{1: "GET /1"}},
		{name: "began and ended within one sweep period of a stretch", script: "sweep r1 on x1 off e1 window",
			known: map[int]string{1: "GET /1"}},
		{name: "ended after what was read: waits for the next read", script: "sweep r1 sweep on sweep tell e1 sweep sweep x1 off window",
			known: map[int]string{1: "GET /1"}},
		{name: "read past its end, not named: forgotten", script: "sweep r1 sweep on sweep e1 sweep tell sweep x1 off window",
			known: map[int]string{1: ""}, unsampled: 1},
		{name: "taken in by the first sweep: in doubt, kept", script: "r1 sweep e1 sweep on x1 tell window",
			known: map[int]string{1: "GET /1"}},
		{name: "taken in by the first sweep, never told: carried, then forgotten", script: "r1 sweep e1 sweep window window",
			known: map[int]string{1: ""}, unsampled: 1},
		{name: "no Stretches: remembered", script: "sweep r1 sweep e1 window", none: true,
			known: map[int]string{1: "GET /1"}},
		{name: "run long, outside any stretch", script: "sweep o1 sweep e1 sweep on off window",
			known: map[int]string{1: "GET /1"}},
		{name: "labelled roots, outside and inside", script: "sweep l1 sweep e1 l2 sweep on sweep x2 sweep e2 off window", labelled: true,
			known: map[int]string{1: "", 2: "/2"}},
		{name: "mixed", script: "sweep r1 r2 sweep e1 sweep on sweep r3 x2 x3 e2 sweep off sweep e3 r4 sweep e4 window",
			known: map[int]string{1: "", 2: "GET /2", 3: "GET /3", 4: ""}, unsampled: 2},
		{name: "the window before", script: "sweep r1 sweep on x1 e1 sweep off window r2 sweep e2 window",
			known: map[int]string{1: "GET /1", 2: ""}, unsampled: 1},
		{name: "two windows before", script: "sweep r1 sweep on x1 e1 sweep off window window window",
			known: map[int]string{1: ""}},
		{name: "running at the window's end", script: "sweep r1 sweep window",
			known: map[int]string{1: "GET"}},
		{name: "told after the window's end, heard by the next", script: "sweep r1 sweep on sweep e1 sweep window x1 off window",
			known: map[int]string{1: "GET /1"}},

		{name: "part: sampled", script: "sweep pon sweep r1 s1 sweep e1 sweep poff window", parts: true,
			known: map[int]string{1: "GET /1"}},
		{name: "part: not sampled", script: "sweep pon sweep r1 sweep e1 sweep poff window", parts: true,
			known: map[int]string{1: ""}, unsampled: 1},
		{name: "part: sampled in an earlier part, ended in a later", script: "sweep pon sweep r1 s1 poff pon sweep e1 sweep poff window", parts: true,
			known: map[int]string{1: "GET /1"}},
		{name: "part: ended after the last part, settled by the window", script: "sweep pon sweep r1 s1 sweep poff sweep e1 window", parts: true,
			known: map[int]string{1: "GET /1"}},
		{name: "part: swept after its part was told", script: "sweep pon sweep r1 r2 s1 e1 e2 poff pon sweep poff window", parts: true,
			known: map[int]string{1: "GET /1", 2: ""}, unsampled: 1},
		{name: "part and stretch: the part names one, neither the other", script: "sweep r1 r2 sweep on pon sweep s1 sweep e1 e2 sweep poff off window", parts: true,
			known: map[int]string{1: "GET /1", 2: ""}, unsampled: 3},
		{name: "part and stretch: each names one", script: "sweep r1 r2 sweep on pon sweep s1 x2 sweep e1 e2 sweep poff off window", parts: true,
			known: map[int]string{1: "GET /1", 2: "GET /2"}, unsampled: 2},
		{name: "part and stretch: both name it", script: "sweep r1 sweep on pon sweep s1 x1 sweep e1 sweep poff off window", parts: true,
			known: map[int]string{1: "GET /1"}},
		{name: "part: outside every part", script: "sweep pon poff sweep r1 sweep e1 sweep window", parts: true,
			known: map[int]string{1: ""}, unsampled: 1},
		{name: "part: labelled roots are not kept for the parts", script: "sweep pon sweep l1 s1 sweep e1 sweep poff window", parts: true, labelled: true,
			known: map[int]string{1: ""}},
		{name: "part: began after the window's last part, named by the next window's", script: "sweep pon sweep poff pon r1 sweep e1 sweep window s1 poff window", parts: true,
			known: map[int]string{1: "GET /1"}},
		{name: "part: carried into the next window, named by none", script: "sweep pon sweep poff pon r1 sweep e1 sweep window poff window", parts: true,
			known: map[int]string{1: ""}, unsampled: 1},
		{name: "part: began in the next part, swept before it was told", script: "sweep pon sweep r1 s1 e1 sweep pnext r2 e2 bsweep named bsweep s2 poff window", parts: true,
			known: map[int]string{1: "GET /1", 2: "GET /2"}},
		{name: "part: named in the window before", script: "sweep pon sweep r1 s1 sweep poff window pon sweep e1 sweep poff window", parts: true,
			known: map[int]string{1: "GET /1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, parts := new(Stretches), new(Stretches)
			// Long after an hour, so that the sweeper's own sweeps find
			// only "o" requests long.
			cfg := Config{LabelledRoots: tt.labelled, MaxAge: 3 * time.Hour, LongAfter: time.Hour, OnLong: func(*Request) {}, Stretches: s}
			if tt.none {
				cfg.Stretches = nil
			}
			if tt.parts {
				cfg.Parts = parts
			}
			tr := install(t, cfg)
			q := runScript(t, tr, s, parts, tt.script)
			got := map[int]string{}
			for n := range tt.known {
				got[n], _ = q.Route(rootID(n))
			}
			if !maps.Equal(got, tt.known) || q.Unsampled != tt.unsampled {
				t.Errorf("routes %v, unsampled %d; want %v, %d", got, q.Unsampled, tt.known, tt.unsampled)
			}
			if q.Dropped != 0 {
				t.Errorf("dropped %d", q.Dropped)
			}
		})
	}
}

// runScript runs the words of script (see TestRootsInStretches) against
// tr, whose Stretches are s and parts, and returns the last window's
// Requests.
func runScript(t *testing.T, tr *Tracker, s, parts *Stretches, script string) Requests {
	now := time.Now()
	reqs := map[int]*Request{}
	var q Requests
	var sampled, inStretch []string
	var partEnd time.Time
	for _, word := range strings.Fields(script) {
		switch word {
		case "sweep", "bsweep":
			tr.Sweep(now)
		case "on":
			s.Begin()
		case "tell":
			s.Named(inStretch, time.Now())
			inStretch = nil
		case "off":
			s.End()
			s.Named(inStretch, time.Now())
			inStretch = nil
		case "pon":
			parts.Begin()
		case "poff":
			parts.End()
			parts.Named(sampled, time.Now())
			sampled = nil
		case "pnext":
			partEnd = time.Now()
			parts.End()
			parts.Begin()
		case "named":
			parts.Named(sampled, partEnd)
			sampled = nil
		case "window":
			q = tr.Window(now)
		default:
			n, err := strconv.Atoi(word[1:])
			if err != nil {
				t.Fatalf("bad word %q", word)
			}
			switch word[0] {
			case 's':
				sampled = append(sampled, rootID(n))
				continue
			case 'x':
				inStretch = append(inStretch, rootID(n))
				continue
			case 'r':
				reqs[n] = Begin(ids(n), "GET", "", now)
			case 'l':
				reqs[n] = Begin(ids(n), "GET", fmt.Sprint("/", n), now)
			case 'o':
				// Begun two hours ago: the next sweep reports
				// it to OnLong.
				reqs[n] = Begin(ids(n), "GET", "", now.Add(-2*time.Hour))
			case 'e':
				if reqs[n].Route() == "GET" {
					reqs[n].SetName(fmt.Sprint("GET /", n))
				}
				reqs[n].End(now)
				continue
			default:
				t.Fatalf("bad word %q", word)
			}
			reqs[n].Labelled()
		}
	}
	return q
}

// TestConfigureStretches hands a Tracker's requests to another
// Stretches, as a profiler hands its Tracker to a new collector: the
// requests begun under the first are kept for the second's samples
// whatever stretches it tells of, their marks meaning nothing to it.
func TestConfigureStretches(t *testing.T) {
	first, second := new(Stretches), new(Stretches)
	tr := install(t, Config{Stretches: first})
	now := time.Now()
	tr.Sweep(now)
	early := Begin(ids(1), "GET", "", now)
	early.Labelled()
	tr.Sweep(now)
	second.Begin() // second's count differs from first's from now on
	second.End()
	tr.Configure(Config{Stretches: second})
	late := Begin(ids(2), "GET", "", now)
	late.Labelled()
	tr.Sweep(now)
	tr.Sweep(now)
	for _, r := range []*Request{early, late} {
		r.SetName("GET /x")
		r.End(now)
	}
	tr.Sweep(now)
	second.Named([]string{rootID(1), rootID(2)}, time.Now())
	q := tr.Window(now)
	for n := 1; n <= 2; n++ {
		if e, ok := q.Route(rootID(n)); !ok || e != "GET /x" {
			t.Errorf("route of request %d: %q, %v; want GET /x", n, e, ok)
		}
	}
	// Settled on the second: a request begun and ended outside its
	// stretches is not remembered.
	r := Begin(ids(3), "GET", "", now)
	r.Labelled()
	tr.Sweep(now)
	r.SetName("GET /x")
	r.End(now)
	if q := tr.Window(now); q.Unsampled != 1 {
		t.Errorf("unsampled %d, want 1", q.Unsampled)
	}
}

// TestPartDue fills the roots a Tracker keeps pending for its parts:
// PartDue is set once they fill half of MaxRoots, the part's samples told
// empty them, and past MaxRoots they are dropped, counted. The renamed
// roots kept for a stretch, up to MaxRoots/2, take room of their own.
func TestPartDue(t *testing.T) {
	tests := []struct {
		inStretch    int // renamed roots ended in a stretch first
		renamed      int // then renamed roots ended in the part only
		due          bool
		kept, unseen int64 // of the latter: remembered, not sampled
		dropped      int64
	}{
		{renamed: 3, due: false, kept: 2, unseen: 1},
		{renamed: 4, due: true, kept: 2, unseen: 2},
		{renamed: 8, due: true, kept: 2, unseen: 6},
		{renamed: 11, due: true, kept: 2, unseen: 6, dropped: 3},
		{inStretch: 4, renamed: 3, due: false, kept: 2, unseen: 1},
		{inStretch: 4, renamed: 4, due: true, kept: 2, unseen: 2},
		{inStretch: 4, renamed: 9, due: true, kept: 2, unseen: 6, dropped: 1},
		{inStretch: 6, renamed: 3, due: false, kept: 2, unseen: 1, dropped: 2},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.inStretch, "+", tt.renamed), func(t *testing.T) {
			stretches, parts := new(Stretches), new(Stretches)
			tr := install(t, Config{MaxRoots: 8, MaxAge: 3 * time.Hour, Stretches: stretches, Parts: parts})
			now := time.Now()
			end := func(from, to int) {
				for n := from; n <= to; n++ {
					r := Begin(ids(n), "GET", "", now)
					r.SetName(fmt.Sprint("GET /", n))
					r.End(now)
				}
				tr.Sweep(now)
			}
			tr.Sweep(now)
			// Begun before the stretch, ended in it.
			var early []*Request
			for n := 101; n <= 100+tt.inStretch; n++ {
				early = append(early, Begin(ids(n), "GET", "", now))
			}
			tr.Sweep(now)
			stretches.Begin()
			tr.Sweep(now)
			for i, r := range early {
				r.SetName(fmt.Sprint("GET /", 101+i))
				r.End(now)
			}
			tr.Sweep(now)
			stretches.End()
			var inStretch []string
			for n := 101; n <= 100+tt.inStretch; n++ {
				inStretch = append(inStretch, rootID(n))
			}
			stretches.Named(inStretch, time.Now())
			parts.Begin()
			tr.Sweep(now)
			end(1, tt.renamed)
			if got := tr.PartDue(); got != tt.due {
				t.Errorf("PartDue %v, want %v", got, tt.due)
			}
			parts.End()
			parts.Named([]string{rootID(1), rootID(2), "not an id"}, time.Now())
			tr.Sweep(now)
			if tr.PartDue() {
				t.Error("PartDue once the part was told")
			}
			q := tr.Window(now)
			var kept int64
			for n := 1; n <= tt.renamed; n++ {
				if _, ok := q.Route(rootID(n)); ok {
					kept++
				}
			}
			if kept != tt.kept || q.Unsampled != tt.unseen || q.Dropped != tt.dropped {
				t.Errorf("kept %d, unsampled %d, dropped %d; want %d, %d, %d",
					kept, q.Unsampled, q.Dropped, tt.kept, tt.unseen, tt.dropped)
			}
		})
	}
}

// TestMergeSorted merges sorted ids without repeats into others.
func TestMergeSorted(t *testing.T) {
	tests := []struct{ a, b, want []uint64 }{
		{nil, nil, nil},
		{nil, []uint64{1, 3}, []uint64{1, 3}},
		{[]uint64{1, 3}, nil, []uint64{1, 3}},
		{[]uint64{1, 4, 9}, []uint64{2, 4, 10}, []uint64{1, 2, 4, 9, 10}},
		{[]uint64{5, 6}, []uint64{1, 2}, []uint64{1, 2, 5, 6}},
		{[]uint64{1, 2}, []uint64{1, 2}, []uint64{1, 2}},
	}
	for _, tt := range tests {
		if got := mergeSorted(slices.Clone(tt.a), tt.b); !slices.Equal(got, tt.want) {
			t.Errorf("mergeSorted(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
