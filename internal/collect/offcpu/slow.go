package offcpu

import (
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/labelkey"
	"github.com/pprofotel/profiler/internal/otlpattr"
)

// Defaults of the slow-request explanations (docs/slow-requests.md has the
// figures they come from).
const (
	// DefaultSlowThreshold is the least duration of a request explained as
	// slow.
	DefaultSlowThreshold = collect.DefaultSlowThreshold
	// DefaultMaxWatched bounds the requests watched at once; a request
	// that turns long while as many are watched is not.
	DefaultMaxWatched = 16
	// DefaultMaxSlow bounds the requests a window explains: the slowest
	// minPerRoute of each route, then the slowest (choose). At a
	// few hundred bytes of OTLP each, a full window's explanations weigh
	// about as much as its off-CPU profile.
	DefaultMaxSlow = 1000
	// DefaultSlowTraceRate is the trace, in bytes a second on average,
	// that the recorder reads for slow requests beyond its duty cycle;
	// DefaultSlowTraceBurst is how much of it may be spent at once.
	DefaultSlowTraceRate  = 128 << 10
	DefaultSlowTraceBurst = 2 << 20
	// maxIntervals bounds the intervals kept of one goroutine of a
	// watched request; maxPending those kept of goroutines whose span is
	// not known yet, in all.
	maxIntervals = 4096
	maxPending   = 32768
	// maxWatchAge drops a watched request whose end never came.
	maxWatchAge = 10 * time.Minute
	// foldGap is the longest gap between two intervals, or at the ends,
	// taken as part of the interval before: the time between two traces
	// of a session, or between a span's end record and its End.
	foldGap = int64(2 * time.Millisecond)
	// startPause is how far into a goroutine's timeline its state as the
	// trace found it is looked for.
	startPause = int64(10 * time.Millisecond)
)

// The slow-request profile's sample type and attributes.
var SlowSampleType = pprofdecode.ValueType{Type: "wall", Unit: "nanoseconds"}

const (
	// StateKey is the label that says what the request's goroutine did:
	// one of stateNames.
	StateKey = otlpattr.GoroutineState
	// BeforeTraceKey marks, with the value "true", the part of a request
	// before the tracer started, attributed to the state the trace found
	// its goroutine in at the start.
	BeforeTraceKey = otlpattr.BeforeTrace
)

// gstate is what a goroutine does, as the slow-request profile tells it.
type gstate uint8

const (
	stateNone gstate = iota
	stateRunning
	stateWaiting
	stateRunnable
	// stateUntraced is a part of a request that no trace covered.
	stateUntraced
)

// stateNames are the values of StateKey.
var stateNames = [...]string{"", "on_cpu", "off_cpu", "runnable", "untraced"}

// interval is a stretch of time a goroutine spent in one state, in
// Unix nanoseconds. found marks one whose state a trace found the
// goroutine in as it began (its status at the trace's start), open one
// that a trace's end cut: the goroutine's state went on.
type interval struct {
	start, end  int64
	state       gstate
	reason      string
	frames      []trace.StackFrame
	found, open bool
}

func (iv *interval) sameKind(o *interval) bool {
	return iv.state == o.state && iv.reason == o.reason && slices.Equal(iv.frames, o.frames)
}

// timeline is the intervals of one goroutine, in order.
type timeline struct {
	intervals []interval
	// cut is set when intervals were left out past maxIntervals.
	cut bool
}

// add appends iv, joined to the last interval when of the same kind and
// adjacent; it reports false when the timeline is full.
func (t *timeline) add(iv interval) bool {
	if n := len(t.intervals); n > 0 {
		last := &t.intervals[n-1]
		if last.end == iv.start && last.sameKind(&iv) {
			last.end, last.open = iv.end, iv.open
			return true
		}
	}
	if len(t.intervals) >= maxIntervals {
		t.cut = true
		return false
	}
	t.intervals = append(t.intervals, iv)
	return true
}

// watch is a request the recorder watches: a local root span that ran
// long.
type watch struct {
	ids   string // trace id and span id, 48 hex digits
	start time.Time
	end   time.Time
	ended bool
	// goroutines are the timelines of the goroutines seen in the
	// request; end is the one that left it (its End), when seen.
	goroutines map[trace.GoID]*timeline
	endG       trace.GoID
	hasEndG    bool
	// seq numbers the watches in the order they began.
	seq int
	// route is the request's route as the tracker knew it when it
	// was watched, final as it ended.
	route, final string
}

// slowState is the recorder's watched requests and explanations. It is
// owned by the recorder's goroutine.
type slowState struct {
	threshold  time.Duration
	maxWatched int
	maxSlow    int
	stats      *Stats

	byRoot map[string]*watch // by root span id, 16 hex digits
	// gen changes whenever byRoot does, so that a goroutine's cached
	// watch is looked up again.
	gen  int
	live int
	// seq is the number of the last watch begun.
	seq int
	// gap is the time between the starts of two requests watched one
	// after the other, a moving average (0 until two were); lastStart is
	// the latest start of a request watched, zero before the first.
	gap       time.Duration
	gaps      int
	lastStart time.Time
	// byRoute counts the window's explanations by the route their
	// requests had when watched; liveBy the live watches likewise.
	byRoute map[string]int
	liveBy  map[string]int
	// explained are the window's slow requests, explained.
	explained []explanation
	// prelude are the intervals a trace's end cut of goroutines in
	// requests not watched yet (the tracker reports a request once it
	// ran long, a moment later): a request watched after the trace ended
	// starts from them. They are kept for two readings' ends (ends counts
	// them), at most maxPrelude goroutines.
	prelude map[string]*prelude
	ends    int
}

// prelude is what a reading's end cut of the goroutines of one request
// not watched yet.
type prelude struct {
	end        int
	goroutines map[trace.GoID]*timeline
}

// maxPrelude bounds the goroutines whose cut intervals are kept for
// requests not watched yet.
const maxPrelude = 1024

// preludeOf returns the timeline to keep goroutine id's cut interval in,
// for the request of root not watched yet; nil past maxPrelude.
func (ss *slowState) preludeOf(root string, id trace.GoID) *timeline {
	p := ss.prelude[root]
	if p == nil {
		if len(ss.prelude) >= maxPrelude {
			return nil
		}
		p = &prelude{goroutines: make(map[trace.GoID]*timeline)}
		ss.prelude[root] = p
	}
	p.end = ss.ends
	tl := p.goroutines[id]
	if tl == nil {
		tl = new(timeline)
		p.goroutines[id] = tl
	}
	return tl
}

// endReading forgets the preludes older than the reading before the one
// that ends.
func (ss *slowState) endReading() {
	ss.ends++
	for root, p := range ss.prelude {
		if ss.ends-p.end > 2 {
			delete(ss.prelude, root)
		}
	}
}

func newSlowState(cfg *Config) *slowState {
	return &slowState{
		threshold:  cfg.SlowThreshold,
		maxWatched: cfg.MaxWatched,
		maxSlow:    cfg.MaxSlow,
		stats:      cfg.Stats,
		byRoot:     make(map[string]*watch),
		prelude:    make(map[string]*prelude),
		byRoute:    make(map[string]int),
		liveBy:     make(map[string]int),
	}
}

// watchEvent is a request turning long, or a watched one ending, as the
// request tracker reports it.
type watchEvent struct {
	ids        string
	route      string
	start, end time.Time
	ended      bool
}

// apply takes in a tracker's report.
func (ss *slowState) apply(e watchEvent) {
	if len(e.ids) != 48 {
		return
	}
	root := e.ids[32:]
	w := ss.byRoot[root]
	if !e.ended {
		if w != nil {
			return
		}
		if !ss.mayWatch(e.route) {
			ss.stats.SlowRequestsDropped.Add(1)
			return
		}
		ss.seq++
		ss.meanGap(e.start)
		w := &watch{ids: e.ids, route: e.route, start: e.start, goroutines: make(map[trace.GoID]*timeline), seq: ss.seq}
		if p := ss.prelude[root]; p != nil {
			w.goroutines = p.goroutines
			delete(ss.prelude, root)
		}
		ss.byRoot[root] = w
		ss.live++
		ss.liveBy[w.route]++
		ss.gen++
		return
	}
	if w == nil || w.ended {
		return
	}
	w.ended, w.start, w.end = true, e.start, e.end
	ss.unlive(w)
	if w.route == "" {
		w.route = e.route
	}
	w.final = e.route
}

// meanGap takes the start of a request watched into gap.
func (ss *slowState) meanGap(start time.Time) {
	if !ss.lastStart.IsZero() {
		g := max(start.Sub(ss.lastStart), 0)
		if ss.gaps++; ss.gaps == 1 {
			ss.gap = g
		} else {
			ss.gap = (3*ss.gap + g) / 4
		}
	}
	if start.After(ss.lastStart) {
		ss.lastStart = start
	}
}

// mayWatch reports whether a request of route (as known when it turned
// long) may be watched: while fewer than maxWatched are, or, up to twice
// that, when none of its route is, so that one route's slow
// requests, or requests slowed by a busy CPU, do not keep another's
// from being watched.
func (ss *slowState) mayWatch(route string) bool {
	return ss.live < ss.maxWatched || ss.live < 2*ss.maxWatched && ss.liveBy[route] == 0
}

// unlive counts w, watched, as no longer live.
func (ss *slowState) unlive(w *watch) {
	ss.live--
	if ss.liveBy[w.route]--; ss.liveBy[w.route] <= 0 {
		delete(ss.liveBy, w.route)
	}
}

// liveUpTo reports whether a watch numbered seq or lower, or one whose
// route has fewer than minPerRoute explanations in the window yet,
// still lives.
func (ss *slowState) liveUpTo(seq int) bool {
	for _, w := range ss.byRoot {
		if !w.ended && (w.seq <= seq || ss.owed(w)) {
			return true
		}
	}
	return false
}

// liveOwed reports whether a watched request lives whose route has
// fewer than minPerRoute explanations in the window yet.
func (ss *slowState) liveOwed() bool { return ss.liveUpTo(0) }

// owed reports whether w's route has fewer than minPerRoute
// explanations in the window yet.
func (ss *slowState) owed(w *watch) bool { return ss.byRoute[w.route] < minPerRoute }

// minPerRoute is how many slow requests of every route a window
// explains before the slowest of all are chosen, when it can.
const minPerRoute = 10

// watching reports whether any request is watched: the reading then keeps
// the goroutines' timelines.
func (ss *slowState) watching() bool { return ss != nil && len(ss.byRoot) > 0 }

// settle explains the ended requests whose end the trace has been read
// past (reach, Unix nanoseconds), or all ended ones when no trace runs,
// and forgets them; a watched request that never ended is dropped after
// maxWatchAge.
func (ss *slowState) settle(reach int64, tracing bool, now time.Time) {
	for root, w := range ss.byRoot {
		switch {
		case w.ended && (!tracing || w.end.UnixNano() <= reach):
			if w.end.Sub(w.start) >= ss.threshold {
				ss.explain(w)
			}
		case !w.ended && now.Sub(w.start) > maxWatchAge:
			ss.unlive(w)
			ss.stats.SlowRequestsDropped.Add(1)
		default:
			continue
		}
		delete(ss.byRoot, root)
		ss.gen++
	}
}

// explanation is one slow request's wall time, part by part.
type explanation struct {
	ids   string
	route string
	dur   time.Duration
	parts []part
	// watched is the request's route when it was watched (byRoute's).
	watched string
}

// end is when the explained request ended, Unix nanoseconds.
func (e *explanation) end() int64 { return e.parts[len(e.parts)-1].end }

// part is an interval of an explanation; before marks the part before
// the trace began.
type part struct {
	interval
	before bool
}

// explain builds w's explanation from its goroutine's timeline: the one
// that ended its span, else the one seen longest.
func (ss *slowState) explain(w *watch) {
	tl := w.goroutines[w.endG]
	if !w.hasEndG {
		var best int64
		for _, t := range w.goroutines {
			var d int64
			for _, iv := range t.intervals {
				d += iv.end - iv.start
			}
			if d > best {
				tl, best = t, d
			}
		}
	}
	parts := explainParts(tl, w.start.UnixNano(), w.end.UnixNano())
	if parts == nil || foundLate(parts, ss.threshold) {
		ss.stats.SlowRequestsDropped.Add(1)
		return
	}
	ss.byRoute[w.route]++
	ss.explained = append(ss.explained, explanation{ids: w.ids, route: w.final, dur: w.end.Sub(w.start), parts: parts, watched: w.route})
	if len(ss.explained) >= 2*ss.maxSlow {
		// The window keeps no more than it could send.
		ss.choose()
	}
}

// foundLate reports whether the trace found the goroutine of a request
// too late for the state it found to stand for the time before (parts'
// first part, marked before): past the threshold, and past twice what
// the traces then saw of the request (its parts but the untraced), so
// that they saw less than a third of it. The tracker reports a request
// at half the threshold, and its trace starts then; one that started
// later (the budget spent, the recorder busy reading the last trace, a
// loaded machine) may find the goroutine only as the request ends, past
// what made it slow: woken from its wait, running to its span's end,
// whose stack would stand for the whole wait.
func foundLate(parts []part, threshold time.Duration) bool {
	if !parts[0].before {
		return false
	}
	var seen int64
	for _, p := range parts[1:] {
		if p.state != stateUntraced {
			seen += p.end - p.start
		}
	}
	before := parts[0].end - parts[0].start
	return before > int64(threshold) && before > 2*seen
}

// explainParts lays tl over [start, end): the part before the first
// interval is the first interval's state, marked as before the trace; a
// gap longer than foldGap is untraced, a shorter one joins the interval
// before, and so does one between a wait a trace's end cut and the same
// wait the next trace found open (continues). A part with no stack (a
// state the trace gave none for) takes the stack of the part before it,
// else of the one after. The parts add up to end - start. nil when tl
// holds nothing in the range, or no stack at all.
func explainParts(tl *timeline, start, end int64) []part {
	if tl == nil {
		return nil
	}
	ivs := slices.Clone(tl.intervals)
	slices.SortFunc(ivs, func(a, b interval) int { return int(min(max(a.start-b.start, -1), 1)) })
	first := beforeState(ivs, start)
	if first < 0 {
		return nil
	}
	var parts []part
	at := start
	for _, iv := range ivs {
		iv.start, iv.end = max(iv.start, at), min(iv.end, end)
		if iv.end <= iv.start {
			continue
		}
		if len(parts) == 0 {
			if iv.start-at <= foldGap {
				iv.start = at
			} else {
				parts = append(parts, firstPart(ivs[first], iv, at))
			}
		} else if last := &parts[len(parts)-1]; continues(&last.interval, &iv) {
			// One wait, seen by two traces: the time between them is
			// that wait's.
			last.end, last.open = iv.end, iv.open
			at = iv.end
			continue
		} else if gap := iv.start - at; gap > foldGap {
			parts = append(parts, part{interval: interval{start: at, end: iv.start, state: stateUntraced, frames: last.frames}})
		} else if gap > 0 {
			last.end = iv.start
		}
		parts = append(parts, part{interval: iv})
		at = iv.end
	}
	if len(parts) == 0 {
		return nil
	}
	if !lendStacks(parts) {
		return nil
	}
	if gap := end - at; gap > foldGap {
		last := parts[len(parts)-1]
		parts = append(parts, part{interval: interval{start: at, end: end, state: stateUntraced, frames: last.frames}})
	} else if gap > 0 {
		parts[len(parts)-1].end = end
	}
	return parts
}

// beforeState returns the index in ivs, sorted by start, of the interval
// whose state stands for the time before the trace, or -1 when every
// interval ended by start. The state a trace found the goroutine in
// stands for the time before it: the first one not runnable within its
// first moments, since starting the tracer stops the world and leaves
// every goroutine that ran runnable. Intervals that ended before the
// request began (a goroutine's earlier work, kept while its span was not
// known) say nothing of it.
func beforeState(ivs []interval, start int64) int {
	lo := 0
	for lo < len(ivs) && ivs[lo].end <= start {
		lo++
	}
	if lo == len(ivs) {
		return -1
	}
	for i := lo; i < len(ivs) && ivs[i].start-ivs[lo].start <= startPause; i++ {
		if ivs[i].state != stateRunnable {
			return i
		}
	}
	return lo
}

// firstPart returns the part of a request from at, its start, to iv, the
// first interval its goroutine's timeline has of it. When a trace found
// the goroutine as it began (iv.found), the trace began then: the part
// is before the trace, in the state the trace found, f's (see
// beforeState). Otherwise a trace ran and saw the goroutine before iv
// under no span of the request: the span's start was taken, and its
// labels put on the goroutine, in that time, and the goroutine entered
// iv from another state: waiting for a CPU (runnable) when iv runs,
// running otherwise.
func firstPart(f, iv interval, at int64) part {
	if iv.found {
		return part{interval: interval{start: at, end: iv.start, state: f.state, reason: f.reason, frames: f.frames}, before: true}
	}
	st := stateRunning
	if iv.state == stateRunning {
		st = stateRunnable
	}
	return part{interval: interval{start: at, end: iv.start, state: st, frames: iv.frames}}
}

// lendStacks gives each part with no stack the stack of the nearest part
// before it that has one, else after: the builder sends no sample without
// a stack. It reports false when no part has a stack.
func lendStacks(parts []part) bool {
	for i := range parts {
		if len(parts[i].frames) > 0 {
			continue
		}
		for j := i - 1; j >= 0 && len(parts[i].frames) == 0; j-- {
			parts[i].frames = parts[j].frames
		}
		for j := i + 1; j < len(parts) && len(parts[i].frames) == 0; j++ {
			parts[i].frames = parts[j].frames
		}
		if len(parts[i].frames) == 0 {
			return false
		}
	}
	return true
}

// continues reports whether next is the wait a that a trace's end cut,
// found open by the trace after: the goroutine was waiting at the end of
// one trace and at the start of the next, for the same reason at the same
// place (the frames below the runtime's), or with no stack: the runtime
// gives the stack of a goroutine found waiting only at the end of the
// trace's first generation (go.dev/issue/65634), which is why the short
// trace before each trace is there, and what it found is the wait the
// goroutine is still in (unless it blocked again in the moment between
// the two traces). The wait then went on between the two traces.
func continues(a, next *interval) bool {
	if !a.open || !next.found || a.state != stateWaiting || next.state != stateWaiting {
		return false
	}
	if len(next.frames) == 0 {
		return next.reason == ""
	}
	return next.reason == a.reason && samePlace(a.frames, next.frames)
}

// samePlace reports whether two stacks, leaf first, are of one place: the
// shorter is the end of the longer, by function and line. The stack of a
// goroutine seen blocking and that of one found blocked differ in the
// leaf frames, the runtime's and its internal packages'.
func samePlace(x, y []trace.StackFrame) bool {
	if len(x) > len(y) {
		x, y = y, x
	}
	if len(x) == 0 {
		return false
	}
	return slices.EqualFunc(x, y[len(y)-len(x):], func(a, b trace.StackFrame) bool {
		return a.Func == b.Func && a.Line == b.Line
	})
}

// build builds maxSlow of the explanations of the requests that ended
// by until (Unix nanoseconds), the window's end, into w (choose), and
// forgets them; the others are counted as dropped. The explanations of
// requests that ended after until, taken in before the window's
// collection reached the recorder (busy reading a trace as the window
// ended), are kept for the next window, whose time they are in.
func (ss *slowState) build(w *window, until int64) {
	later := ss.takeLater(until)
	ss.choose()
	clear(ss.byRoute)
	var key []byte
	for _, e := range ss.explained {
		for _, p := range e.parts {
			locs := w.locationsOf(slices.Values(p.frames))
			attrs := stateNames[p.state] + ";" + p.reason
			if p.before {
				attrs += ";before"
			}
			k := w.kindOf(&key, locs, attrs, e.ids, func() []pprofdecode.Label {
				lbls := []pprofdecode.Label{{Key: StateKey, Str: stateNames[p.state]}}
				if p.reason != "" {
					lbls = append(lbls, pprofdecode.Label{Key: ReasonKey, Str: p.reason})
				}
				if p.before {
					lbls = append(lbls, pprofdecode.Label{Key: BeforeTraceKey, Str: "true"})
				}
				// The request's own span is its root: the collector
				// turns the root's id into the request's route.
				return append(lbls,
					pprofdecode.Label{Key: labelkey.LocalRootSpanID, Str: e.ids[32:]},
					pprofdecode.Label{Key: labelkey.SpanID, Str: e.ids[32:]},
					pprofdecode.Label{Key: labelkey.TraceID, Str: e.ids[:32]})
			})
			w.events = append(w.events, event{kind: k, start: p.start, dur: p.end - p.start})
		}
	}
	ss.stats.SlowRequestsExplained.Add(int64(len(ss.explained)))
	clear(ss.explained)
	ss.explained = append(ss.explained[:0], later...)
	for _, e := range later {
		ss.byRoute[e.watched]++
	}
}

// takeLater removes from the window's explanations, and returns, those
// of the requests that ended after until.
func (ss *slowState) takeLater(until int64) []explanation {
	var later []explanation
	ss.explained = slices.DeleteFunc(ss.explained, func(e explanation) bool {
		if e.end() > until {
			later = append(later, e)
			return true
		}
		return false
	})
	return later
}

// choose keeps maxSlow of the window's explanations, slowest first:
// the slowest minPerRoute of each route (as the request ended),
// then the slowest of the others. The others are counted as dropped.
func (ss *slowState) choose() {
	slices.SortStableFunc(ss.explained, func(a, b explanation) int { return int(min(max(b.dur-a.dur, -1), 1)) })
	n := len(ss.explained)
	if n <= ss.maxSlow {
		return
	}
	per := make(map[string]int)
	keep := make([]bool, n)
	kept := 0
	for i, e := range ss.explained {
		if kept < ss.maxSlow && per[e.route] < minPerRoute {
			keep[i] = true
			per[e.route]++
			kept++
		}
	}
	for i := range ss.explained {
		if kept < ss.maxSlow && !keep[i] {
			keep[i] = true
			kept++
		}
	}
	i := 0
	ss.explained = slices.DeleteFunc(ss.explained, func(explanation) bool { i++; return !keep[i-1] })
	ss.stats.SlowRequestsDropped.Add(int64(n - ss.maxSlow))
}

// reasonFromStack names the wait of a goroutine found waiting when the
// trace began, whose status carries its stack but no reason, as the trace
// names the reason of a wait it sees begin: from the runtime function
// the goroutine parked in.
func reasonFromStack(frames []trace.StackFrame) string {
	for _, f := range frames {
		fn := f.Func
		switch {
		case strings.HasSuffix(fn, "runtime_SemacquireMutex"), strings.HasSuffix(fn, "runtime_SemacquireRWMutex"),
			strings.HasSuffix(fn, "runtime_SemacquireRWMutexR"), strings.HasSuffix(fn, "runtime_SemacquireWaitGroup"),
			strings.HasSuffix(fn, "sync.runtime_Semacquire"):
			return "sync"
		case strings.HasSuffix(fn, "runtime_notifyListWait"):
			return "sync.(*Cond).Wait"
		case fn == "runtime.chanrecv":
			return "chan receive"
		case fn == "runtime.chansend":
			return "chan send"
		case fn == "runtime.selectgo":
			return "select"
		case fn == "time.Sleep":
			return "sleep"
		case strings.HasSuffix(fn, "runtime_pollWait"):
			return "network"
		}
	}
	return ""
}

// framesOf returns the frames of stk, leaf first, one slice per stack of
// the reading.
func (s *reading) framesOf(stk trace.Stack) []trace.StackFrame {
	if stk == trace.NoStack {
		return nil
	}
	f, ok := s.frames[stk]
	if !ok {
		f = slices.Collect(stk.Frames())
		s.frames[stk] = f
	}
	return f
}

// target returns the timeline g's intervals go to: its watched request's,
// pending while its span is not known, or nil.
func (s *reading) target(g *goroutine, id trace.GoID) *timeline {
	if g.known {
		if g.wgen != s.slow.gen {
			g.wgen, g.wt = s.slow.gen, nil
			if g.root != "" {
				g.wt = s.slow.byRoot[g.root]
			}
		}
		if g.wt == nil {
			return nil
		}
		tl := g.wt.goroutines[id]
		if tl == nil {
			tl = new(timeline)
			g.wt.goroutines[id] = tl
		}
		return tl
	}
	if g.pend == nil {
		if g.unclaimed || s.pending >= maxPending {
			return nil
		}
		g.pend = new(timeline)
	}
	return g.pend
}

// maxSamples bounds the CPU samples kept of one running interval.
const maxSamples = 256

// cpuSample keeps the stack of a CPU profile sample of goroutine id, for
// its running interval.
func (s *reading) cpuSample(id trace.GoID, stk trace.Stack) {
	if g := s.goroutines[id]; g != nil && g.st == stateRunning && len(g.samples) < maxSamples {
		g.samples = append(g.samples, stk)
	}
}

// closeInterval ends g's current interval at t (Unix nanoseconds). A
// running one is on the stacks of the CPU profile's samples taken in it,
// in equal shares, in order, when the CPU profile ran; else on stk, the
// stack where it stopped. It is kept when a request watches the
// goroutine, or may.
func (s *reading) closeInterval(g *goroutine, id trace.GoID, t int64, stk trace.Stack, open bool) {
	samples := g.samples
	g.samples = g.samples[:0]
	found := g.found
	g.found = false
	if t == g.since && open && found {
		// Found as the trace ended: the short trace's end writes the
		// state of every goroutine that did not run, the last events
		// it holds. It is what the next trace goes on from (continues),
		// kept a nanosecond long.
		t++
	}
	if g.st == stateNone || t <= g.since {
		return
	}
	var tl *timeline
	if s.slow.watching() || open && !g.known {
		// Kept while a request is watched, and at a trace's end for a
		// goroutine whose span is not known yet: the next trace finds
		// it again, maybe in a request watched by then.
		tl = s.target(g, id)
	}
	if tl == nil && open && g.known && g.root != "" && s.slow.byRoot[g.root] == nil {
		tl = s.slow.preludeOf(g.root, id)
	}
	if tl != nil && tl == g.pend && s.pending >= maxPending {
		// Left out, before its stack is looked up: the goroutine's
		// timeline goes on past a gap, untraced, should a request
		// claim it.
		tl.cut, tl = true, nil
	}
	{
		if tl != nil {
			n := len(tl.intervals)
			if g.st == stateRunning && len(samples) > 0 {
				from, step := g.since, (t-g.since)/int64(len(samples))
				for i, smp := range samples {
					to := from + step
					if i == len(samples)-1 {
						to = t
					}
					tl.add(interval{start: from, end: to, state: stateRunning, frames: s.framesOf(smp), found: found && i == 0, open: open && i == len(samples)-1})
					from = to
				}
			} else {
				if g.st != stateRunning {
					stk = g.sstk
				}
				frames := s.framesOf(stk)
				reason := g.sreason
				if g.st == stateWaiting && reason == "" {
					reason = reasonFromStack(frames)
				}
				tl.add(interval{start: g.since, end: t, state: g.st, reason: reason, frames: frames, found: found, open: open})
			}
			if !g.known && tl == g.pend {
				s.pending += len(tl.intervals) - n
			}
		}
	}
	g.since = t
}

// slowTransition follows g's state for the slow-request timelines. It
// runs on every transition, statuses included, so that a request watched
// later finds its goroutine's state. A status restates the state of a
// goroutine known since the trace's start (a new generation's); one that
// was not is the state the trace found it in, and its interval is marked
// found.
func (s *reading) slowTransition(ev *trace.Event, st *trace.StateTransition, id trace.GoID, t trace.Time) {
	from, to := st.Goroutine()
	wall := s.wall(t)
	g := s.goroutines[id]
	if g == nil {
		// Followed whether or not a request is watched yet: one that
		// turns long later, or whose report comes after the trace's
		// start, finds its goroutine's state, with the stack the
		// status gave.
		g = s.goroutine(id)
	}
	if from == trace.GoUndetermined && g.st != stateNone {
		// A generation restates what is known: a goroutine runnable
		// after running was stopped with the world as the trace began.
		return
	}
	// The goroutine's own stack, when it made the transition itself;
	// an unblocking is the unblocker's event.
	stk := trace.NoStack
	if from == trace.GoRunning || from == trace.GoSyscall || from == trace.GoUndetermined {
		stk = st.Stack
		if stk == trace.NoStack && from != trace.GoUndetermined {
			stk = ev.Stack()
		}
	}
	if g.st == stateRunning && stk == trace.NoStack && (to == trace.GoRunnable || to == trace.GoRunning) {
		// Stopped where the trace does not say (the world stopped to
		// start it): the running goes on until a stop that does.
		return
	}
	s.closeInterval(g, id, wall, stk, false)
	g.since = wall
	// A goroutine the reading did not know yet, whose state this is as
	// the trace found it.
	g.found = from == trace.GoUndetermined
	switch to {
	case trace.GoRunning:
		g.st, g.sreason, g.sstk = stateRunning, "", trace.NoStack
	case trace.GoWaiting:
		g.st, g.sreason, g.sstk = stateWaiting, st.Reason, stk
	case trace.GoSyscall:
		g.st, g.sreason, g.sstk = stateWaiting, ReasonSyscall, stk
	case trace.GoRunnable:
		// Woken: ready to run again where it waited. Preempted: where it
		// stopped.
		if from != trace.GoWaiting {
			g.sstk = stk
		}
		g.st, g.sreason = stateRunnable, ""
	default:
		g.st = stateNone
	}
}

// slowSpanSwitch ends g's interval at a span record (the running goroutine
// wrote it; stk is where) and moves what it kept while its span was not
// known to the request the record says it was in. A record leaving a
// request's root for another marks the goroutine that ended it.
func (s *reading) slowSpanSwitch(g *goroutine, id trace.GoID, now, before string, t trace.Time, stk trace.Stack) {
	_, _, nowRoot, _, _ := splitSpan(now)
	_, _, beforeRoot, _, _ := splitSpan(before)
	s.closeInterval(g, id, s.wall(t), stk, false)
	w := s.slow.byRoot[beforeRoot]
	if !g.known && g.pend != nil {
		// What was kept goes to the request the record says the
		// goroutine was in, or waits for its report.
		var tl *timeline
		if w != nil {
			tl = w.goroutines[id]
			if tl == nil {
				tl = new(timeline)
				w.goroutines[id] = tl
			}
		} else if beforeRoot != "" {
			tl = s.slow.preludeOf(beforeRoot, id)
		}
		if tl != nil {
			tl.intervals = append(tl.intervals, g.pend.intervals...)
			tl.cut = tl.cut || g.pend.cut
		}
		s.pending -= len(g.pend.intervals)
		g.pend = nil
	}
	if w != nil && nowRoot != beforeRoot {
		w.endG, w.hasEndG = id, true
	}
	g.root, g.wgen = nowRoot, -1
}

// finishSlow ends every goroutine's interval at the reading's last event,
// marked open (the trace's end cut it, the state went on), and forgets the
// states: the next trace finds them again.
func (s *reading) finishSlow() {
	if s.slow == nil {
		return
	}
	s.slow.endReading()
	end := s.wall(s.last)
	for id, g := range s.goroutines {
		s.closeInterval(g, id, end, trace.NoStack, true)
		g.st = stateNone
	}
}
