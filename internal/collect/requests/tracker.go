package requests

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pprofotel/profiler/internal/validutf8"
)

// RouteKey is the sample attribute, and the pprof label, that carries
// the route of a sample's request. It is a valid Prometheus and
// Pyroscope label name, so that a query can select it
// ({route="/users/{id}"}), and pprof's -tagfocus=route=... reads it.
const RouteKey = "route"

// Overflow is the route of the requests of a window whose own route
// did not fit in it: the window already had MaxRoutes others.
const Overflow = "_other"

// Defaults of Config.
const (
	// DefaultMaxRoutes is the number of distinct routes a window
	// carries unless configured otherwise. A service's routes are tens,
	// rarely more than a hundred; span names with ids in them are
	// unbounded, and the bound keeps them from multiplying the samples
	// (each distinct route is a distinct sample per stack).
	DefaultMaxRoutes = 100
	// DefaultMaxRequests bounds the requests running at once that the
	// Tracker follows: beyond it, the sweep ages out the oldest.
	DefaultMaxRequests = 1 << 16
	// DefaultMaxAge is how long a request runs before the sweep ages it
	// out: a span that never ends (a leak, a stream that lives as long as
	// the process) is no longer followed, nor counted when it ends.
	DefaultMaxAge = time.Hour
	// DefaultMaxRoots bounds the root span ids a window remembers the
	// route of, for the samples whose labels cannot tell it (see
	// Tracker), in each of the two windows kept: 10 bytes a root. Those
	// kept for the stretches' samples have room of their own, half as
	// many again, and the last renamed roots that ended, for the
	// goroutine profiles, a quarter as many.
	DefaultMaxRoots = 1 << 19
	// DefaultSettle is how long a window's end waits, at most, for the
	// requests its samples name that still run under the name they
	// started with: instrumentation that learns the route at the end
	// (otelhttp over a ServeMux) renames the span just before ending it.
	DefaultSettle = time.Second
)

// sweepEvery bounds the time between two sweeps while requests are
// tracked; LongAfter can shorten it, to a floor of minSweep.
const (
	sweepEvery = 100 * time.Millisecond
	minSweep   = 10 * time.Millisecond
)

// Config configures a Tracker.
type Config struct {
	// MaxRoutes is the most distinct routes a window carries; the
	// requests of others are counted under Overflow. 0 takes
	// DefaultMaxRoutes.
	MaxRoutes int
	// MaxRequests bounds the running requests followed at once; 0 takes
	// DefaultMaxRequests.
	MaxRequests int
	// MaxAge is how long a request is followed before it is aged out; 0
	// takes DefaultMaxAge.
	MaxAge time.Duration
	// MaxRoots bounds the root span ids a window maps to their route,
	// those kept for the CPU profile's parts and those reported to
	// OnLong, MaxRoots/2 more those kept for the stretches' samples, and
	// MaxRoots/4 the last renamed roots that ended, for the goroutine
	// profiles (Requests.SnapshotRoute); 0 takes DefaultMaxRoots.
	MaxRoots int
	// LabelledRoots has the window keep for the stretches' samples also
	// the roots whose labels carry their route: for a profile whose
	// samples carry the root's id but may lack a route label (the
	// off-CPU profile's come from the execution trace).
	LabelledRoots bool
	// Stretches, when set, tells when the profile other than the CPU
	// profile whose samples name roots records, and which roots they
	// named (Stretches.Named): a root whose life overlapped a stretch
	// is kept until its samples are read, then remembered if they named
	// it. Nil remembers those roots whatever their time.
	Stretches *Stretches
	// Parts, when set, tells when the CPU profile records, in parts
	// that the collector reads as each ends, and which roots their
	// samples named: a root routed anew after it started whose life
	// overlapped a part is kept until the part is read, then remembered
	// if a sample of the window named it. Nil leaves the CPU profile to
	// Stretches.
	Parts *Stretches
	// LongAfter is how long a request runs before OnLong is called for
	// it. OnLong is called once per request, from the Tracker's sweep
	// (never on the request's goroutine), at most a sweep period late.
	LongAfter time.Duration
	OnLong    func(*Request)
	// OnEnd is called, from the sweep, for a request that OnLong was
	// called for, once it has ended. OnLong and OnEnd must return
	// quickly and must not call the Tracker.
	OnEnd func(*Request)
}

// withDefaults returns cfg with its zero bounds set to the defaults.
func (cfg Config) withDefaults() Config {
	if cfg.MaxRoutes <= 0 {
		cfg.MaxRoutes = DefaultMaxRoutes
	}
	if cfg.MaxRequests <= 0 {
		cfg.MaxRequests = DefaultMaxRequests
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.MaxRoots <= 0 {
		cfg.MaxRoots = DefaultMaxRoots
	}
	return cfg
}

// sweepPeriod returns the time between two sweeps under cfg.
func (cfg Config) sweepPeriod() time.Duration {
	if cfg.OnLong != nil && cfg.LongAfter > 0 {
		return min(max(cfg.LongAfter/2, minSweep), sweepEvery)
	}
	return sweepEvery
}

// installed is the Tracker Begin reports to: process-wide, as the
// runtime's profiles are.
var installed atomic.Pointer[Tracker]

// ErrInstalled is returned by Install when another Tracker is installed.
var ErrInstalled = errors.New("requests: another tracker is installed")

// Tracker follows the requests of the process: it counts those that end
// in each window by route, remembers the route of root span ids for
// the window's samples, and watches the running ones for OnLong.
//
// The label wrapper puts a request's route as it starts (its route,
// else its name) in the labels of its goroutines, so a sample names its
// route without the Tracker. The Tracker remembers the roots reported to
// OnLong, and the roots whose labels carried a route other than the one
// they end with (renamed, or routed after their labels took their name)
// that samples name: a renamed root whose life overlapped a part of the
// CPU profile (Parts), or a stretch (Stretches) and with LabelledRoots any
// root that did, is kept pending until the part's or the stretch's
// samples are read and told (Stretches.Named), then remembered if they
// named it. The parts' roots, pending or remembered, and those reported
// to OnLong take up to MaxRoots a window; PartDue asks for a part's end
// once those pending fill half the room left. The stretches' take up to
// MaxRoots/2 more, so that they never shorten the time a part has to end
// before its pending roots overflow.
//
// A goroutine that a request started and that outlives it is found by
// the goroutine profiles taken as windows end, under the name its
// request started with. A window keeps its last MaxRoots/4 renamed roots
// for them, and Carry has the next window remember those they named,
// for as long as the goroutines live and there is room. SnapshotDue asks
// for a goroutine profile within the window once half of those kept are
// new, and Snapshot remembers the roots it named among them.
//
// The request path appends a request to the list of its P and stores its
// end; a sweep, run by the Tracker's own goroutine while requests are
// tracked and by Window, does the rest.
type Tracker struct {
	shards   *shards
	sweeping atomic.Bool // the sweeper goroutine runs

	// mu guards the sweeper's start and end.
	mu      sync.Mutex
	stopped bool
	wake    chan struct{} // closed by Stop
	exited  chan struct{} // closed by the sweeper when it returns
	period  atomic.Int64  // between sweeps, in nanoseconds
	// due asks the sweeper for a sweep now: a shard filled (freshBound).
	// running is the requests the last sweep left running.
	due     chan struct{}
	running atomic.Int64

	// sweepMu serialises sweeps and guards the rest.
	sweepMu sync.Mutex
	cfg     Config
	live    []*Request
	agedOut int64
	win     *windowState
	// prev is the window before, whose roots the samples of the current
	// one may still name.
	prev *windowState
	// mark is the marks taken before the last sweep took in the
	// requests begun: the requests the next sweep takes in began after
	// them.
	mark marks
	// snapshotDue is set by a sweep once the window's last renamed roots
	// took in half their room since the last snapshot (SnapshotDue).
	snapshotDue atomic.Bool
	// outlived holds, sorted, the roots of requests that ended that the
	// last Carry was given: goroutines outlived them.
	outlived []uint64
	// partDue is set by a sweep that left pending half the room the
	// window's remembered roots leave.
	partDue atomic.Bool
}

// windowState is what a sweep gathers for the current window. Routes
// are kept as indexes into names, so that the roots hold no pointer for
// the garbage collector to follow: they are the Tracker's largest memory.
type windowState struct {
	names  []string          // the window's routes
	index  map[string]uint16 // names' indexes
	counts []int64           // requests ended, by route index
	// routes counts names but Overflow.
	routes int
	// recent remembers the last routes admitted, as the requests gave
	// them, with their index: a service's requests have a handful of
	// routes and names, the same strings again and again (a route is the
	// router's pattern, a name most often a constant), which compare
	// equal at once by their pointer; admitting one anew means cutting
	// it to MaxRouteLen, checking its UTF-8 and hashing it.
	recent    [4]admitted
	recentLen int // of recent, filled in turn
	// roots holds the roots that ended, with their route: appended by
	// the sweeps in the order they ended, sorted by span id when the
	// window ends. A slice, not a map: a sweep appends without hashing,
	// growing a table or missing the cache.
	roots roots
	// ended holds the last MaxRoots/4 renamed roots that ended in the
	// window, as the sweeps took them in (each sweep takes every P's in
	// turn), in a ring whose next slot is endedNext: the goroutine
	// profiles taken as the window ends name those whose goroutines
	// outlived them (Carry).
	ended     roots
	endedNext int
	// endedNew counts the roots ended took in since the window began or
	// the last Snapshot.
	endedNew int
	// parts and stretches hold the roots kept for the verdict of
	// Config.Parts and Config.Stretches, and what they named.
	parts, stretches source
	overflowed       int64
	rootsFull        int64
	// unsampled counts the roots whose route changed after they
	// started that no stretch or part overlapped, and the roots a
	// source kept and forgot, its samples not naming them.
	unsampled int64
}

// maxRemembered bounds the roots a window remembers: MaxRoots, and the
// stretches' room beside it.
func (c *Config) maxRemembered() int { return c.MaxRoots + c.MaxRoots/2 }

// held returns the roots w holds against MaxRoots: all but the
// stretches'.
func (w *windowState) held() int {
	return w.roots.len() - w.stretches.remembered + w.parts.pending.len()
}

// stretchesHeld returns the roots w holds for the stretches, against
// MaxRoots/2.
func (w *windowState) stretchesHeld() int {
	return w.stretches.remembered + w.stretches.pending.len()
}

// admitted is a route as a request gave it, and the index admit
// gave it.
type admitted struct {
	route string
	index uint16
}

// New returns a Tracker; Begin reports to it once it is installed.
func New(cfg Config) *Tracker {
	cfg = cfg.withDefaults()
	t := &Tracker{
		cfg:    cfg,
		shards: newShards(),
		wake:   make(chan struct{}),
		due:    make(chan struct{}, 1),
		win:    new(windowState),
		prev:   new(windowState),
		mark:   marks{markOpen, markOpen},
	}
	t.period.Store(int64(cfg.sweepPeriod()))
	return t
}

// Configure gives t a new configuration from the next sweep on. The
// requests it follows, and the current window's, are kept: a profiler
// hands its Tracker from one collector to the next.
func (t *Tracker) Configure(cfg Config) {
	cfg = cfg.withDefaults()
	t.sweepMu.Lock()
	// Marks taken of another Stretches tell nothing of this one's: the
	// requests begun so far overlap a stretch.
	if cfg.Stretches != t.cfg.Stretches {
		t.mark.stretches = markOpen
		for _, r := range t.live {
			r.since.stretches = markOpen
		}
	}
	if cfg.Parts != t.cfg.Parts {
		t.mark.parts = markOpen
		for _, r := range t.live {
			r.since.parts = markOpen
		}
	}
	// What the old ones told is heard, before they are no longer.
	t.hear()
	mine := installed.Load() == t
	if mine {
		t.listen(false)
	}
	t.cfg = cfg
	if mine {
		t.listen(true)
	}
	t.sweepMu.Unlock()
	t.period.Store(int64(cfg.sweepPeriod()))
}

// listen has the Stretches of t's configuration keep what they are told
// for t, or not. t.sweepMu is held, or t not yet shared.
func (t *Tracker) listen(on bool) {
	t.cfg.Stretches.listen(on)
	t.cfg.Parts.listen(on)
}

// Install makes t the Tracker Begin reports to, until Stop. Only one
// Tracker is installed at a time.
func (t *Tracker) Install() error {
	if !installed.CompareAndSwap(nil, t) {
		return ErrInstalled
	}
	t.sweepMu.Lock()
	t.listen(true)
	t.sweepMu.Unlock()
	return nil
}

// Stop uninstalls t and waits for its sweeper to end. Requests begun
// before are no longer followed; Window may still be called.
func (t *Tracker) Stop() {
	if installed.CompareAndSwap(t, nil) {
		t.sweepMu.Lock()
		t.listen(false)
		t.sweepMu.Unlock()
	}
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return
	}
	t.stopped = true
	close(t.wake)
	exited := t.exited
	t.mu.Unlock()
	if exited != nil {
		<-exited
	}
}

func (t *Tracker) begin(ids, name, route string, start time.Time) *Request {
	r := &Request{ids: ids, name: name, httpRoute: route, start: start}
	r.labelled = r.route()
	if t.shards.add(r) {
		select {
		case t.due <- struct{}{}:
		default:
		}
	}
	if !t.sweeping.Load() {
		t.startSweeper()
	}
	return r
}

// startSweeper starts the sweeper unless it runs or t is stopped.
func (t *Tracker) startSweeper() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped || t.sweeping.Load() {
		return
	}
	t.sweeping.Store(true)
	t.exited = make(chan struct{})
	go t.sweeper(t.exited)
}

// sweeper sweeps every sweep period while requests are tracked, and ends
// once none has been for a whole period, or at Stop.
func (t *Tracker) sweeper(exited chan struct{}) {
	defer close(exited)
	period := time.Duration(t.period.Load())
	tick := time.NewTicker(period)
	defer tick.Stop()
	idle := false
	var last time.Time
	for {
		select {
		case <-t.wake:
			return
		case <-t.due:
			if now := time.Now(); t.early(now, last) {
				t.Sweep(now)
				last = now
			}
		case now := <-tick.C:
			last = now
			if t.Sweep(now) {
				idle = false
			} else if idle && t.idle() {
				return
			} else {
				idle = true
			}
		}
		if p := time.Duration(t.period.Load()); p != period {
			period = p
			tick.Reset(p)
		}
	}
}

// early reports whether a shard that filled is swept at now, the last
// sweep having been at last: at most every minSweep, and only while few
// requests run, since a sweep goes through every one of them.
func (t *Tracker) early(now, last time.Time) bool {
	return now.Sub(last) >= minSweep && t.running.Load() <= freshBound*int64(len(t.shards.all))
}

// idle marks the sweeper as ended and reports true, unless a request
// began meanwhile (Begin appends before it reads sweeping, the sweeper
// clears sweeping before it looks).
func (t *Tracker) idle() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweeping.Store(false)
	for i := range t.shards.all {
		s := &t.shards.all[i]
		s.mu.Lock()
		n := len(s.fresh)
		s.mu.Unlock()
		if n > 0 {
			t.sweeping.Store(true)
			return false
		}
	}
	return true
}

// Sweep does at now what the sweeper's next sweep would: the requests
// that ended are counted and reported to OnEnd, those that have run
// LongAfter to OnLong, and what the Stretches told is heard. The
// collector calls it before its recorders end a window, so that a
// request ended before the window's end is reported to them within it,
// not a sweep period later; before a part ends, so that the roots
// pending for it are those that ended by then; and once it told a part's
// roots, so that PartDue knows them. It reports whether any request is
// followed.
func (t *Tracker) Sweep(now time.Time) bool {
	t.sweepMu.Lock()
	defer t.sweepMu.Unlock()
	return t.sweep(now)
}

// sweep hears the Stretches, takes in the requests begun since the last
// sweep, counts those that ended, calls OnLong for those that have run
// LongAfter, and ages out those that ran MaxAge or exceed MaxRequests,
// the oldest first. It reports whether any request is followed.
// t.sweepMu is held.
func (t *Tracker) sweep(now time.Time) bool {
	t.hear()
	// Taken before the requests are taken in, so that those the next
	// sweep takes in began after it.
	mark := marks{t.cfg.Stretches.mark(), t.cfg.Parts.mark()}
	for i := range t.shards.all {
		s := &t.shards.all[i]
		s.mu.Lock()
		fresh := s.fresh
		s.fresh = s.spare[:0]
		s.mu.Unlock()
		for _, r := range fresh {
			r.since = t.mark
		}
		t.live = append(t.live, fresh...)
		clear(fresh)
		s.spare = fresh[:0]
	}
	t.mark = mark

	running := t.live[:0]
	for _, r := range t.live {
		if r.took.Load() != 0 {
			t.ended(r)
			continue
		}
		running = append(running, r)
	}
	// The roots kept pending ended by now.
	seen := time.Now().UnixNano()
	t.win.parts.sweptBy(seen)
	t.win.stretches.sweptBy(seen)
	clear(t.live[len(running):])
	cfg := &t.cfg
	excess := len(running) - cfg.MaxRequests
	kept := running[:0]
	for i, r := range running {
		if i < excess || now.Sub(r.start) >= cfg.MaxAge {
			t.agedOut++
			continue
		}
		if !r.long && cfg.OnLong != nil && cfg.LongAfter > 0 && now.Sub(r.start) >= cfg.LongAfter {
			r.long = true
			cfg.OnLong(r)
		}
		kept = append(kept, r)
	}
	clear(t.live[len(kept):])
	t.live = kept
	t.running.Store(int64(len(kept)))
	t.notePartDue()
	return len(kept) > 0
}

// Hear takes in what the Stretches told since the last sweep, as a sweep
// would, without taking in or counting requests: the collector calls it
// once it told a part's roots, so that PartDue knows the part's verdict.
func (t *Tracker) Hear() {
	t.sweepMu.Lock()
	defer t.sweepMu.Unlock()
	t.hear()
	t.notePartDue()
}

// notePartDue sets PartDue from the roots pending for the parts.
// t.sweepMu is held.
func (t *Tracker) notePartDue() {
	pending := t.win.parts.pending.len()
	t.partDue.Store(pending > 0 && pending >= (t.cfg.MaxRoots-t.win.held()+pending)/2)
	t.snapshotDue.Store(t.win.endedNew > 0 && t.win.endedNew >= t.cfg.MaxRoots/8)
}

// hear takes in what the Stretches told since the last sweep, and gives
// their verdict on the roots pending that ended by the time they read to.
// t.sweepMu is held.
func (t *Tracker) hear() {
	t.hearSource(&t.win.parts, t.cfg.Parts)
	t.hearSource(&t.win.stretches, t.cfg.Stretches)
}

// hearSource is hear for the source s that of tells of.
func (t *Tracker) hearSource(s *source, of *Stretches) {
	named, through, lost := of.take()
	t.win.rootsFull += lost
	s.hear(named, through)
	t.decide(t.win, s, s.due(), nil, nil)
}

// ended counts r, which ended, in the current window, and remembers its
// root's route (remember, keepEnded).
func (t *Tracker) ended(r *Request) {
	w := t.win
	route, renamed := r.outcome()
	e := w.admit(route, t.cfg.MaxRoutes)
	w.counts[e]++
	if w.names[e] == Overflow {
		w.overflowed++
	}
	if renamed || r.long || t.cfg.LabelledRoots {
		if id, ok := rootKey(r.RootID()); ok {
			if renamed {
				w.keepEnded(id, e, t.cfg.MaxRoots/4)
			}
			t.remember(w, r, id, e, renamed)
		}
	}
	if r.long && t.cfg.OnEnd != nil {
		t.cfg.OnEnd(r)
	}
}

// keepEnded keeps root id, which ended at route index e, among the last
// n that did in w.
func (w *windowState) keepEnded(id uint64, e uint16, n int) {
	w.endedNew++
	if w.ended.len() < n {
		w.ended.add(id, e, n)
	} else if n > 0 {
		i := w.endedNext % n
		w.ended.ids[i], w.ended.routes[i] = id, e
		w.endedNext = i + 1
	}
}

// remember keeps the root of r, span id id, which ended at route index
// e, for the samples that name it:
//   - one reported to OnLong: its explanation names it; it is remembered,
//     within MaxRoots;
//   - one whose route is not the one its labels carried (renamed), and
//     with LabelledRoots any other, whose life overlapped a stretch and
//     did not lie within one: kept pending for the stretches' verdict,
//     within MaxRoots/2; remembered at once, within MaxRoots (the
//     labelled ones within half of it), without Stretches;
//   - a renamed one whose life overlapped a part: kept pending for the
//     parts' verdict, within MaxRoots.
//
// No sample names the others.
func (t *Tracker) remember(w *windowState, r *Request, id uint64, e uint16, renamed bool) {
	cfg := &t.cfg
	// As many as the window before had, to spare the copies of growing:
	// windows are alike.
	w.roots.reserve(min(max(t.prev.roots.len(), 64), cfg.maxRemembered()))
	// A request whose whole life lay within one stretch gave the
	// stretch's trace its route as it began, was routed and ended renamed
	// (package labels), which its waits take: it needs no lookup.
	within := cfg.Stretches.within(r.since.stretches)
	inStretch := cfg.Stretches.overlaps(r.since.stretches) && !within && (renamed || cfg.LabelledRoots)
	inPart := cfg.Parts != nil && cfg.Parts.overlaps(r.since.parts) && renamed
	held := w.held()
	kept := false
	if r.long || inStretch && cfg.Stretches == nil {
		kept = held < cfg.MaxRoots && (renamed || r.long || held < cfg.MaxRoots/2)
		if kept {
			w.roots.add(id, e, cfg.maxRemembered())
		}
	} else {
		if inStretch && w.stretchesHeld() < cfg.MaxRoots/2 {
			w.stretches.pending.add(id, e, cfg.MaxRoots/2)
			kept = true
		}
		if inPart && held < cfg.MaxRoots {
			w.parts.pending.add(id, e, cfg.MaxRoots)
			kept = true
		}
	}
	switch {
	case kept || !renamed:
	case inStretch || inPart || r.long:
		w.rootsFull++
	case within:
		// Its samples carry its route.
	default:
		w.unsampled++
	}
}

// decide gives the source's verdict on the first n roots s keeps pending
// in w: those it named are remembered, the others forgotten. When the
// window ends, next is given and n is all of them: the others are carried
// into next's source into, but for those carried into w already, which
// are forgotten.
func (t *Tracker) decide(w *windowState, s *source, n int, next *windowState, into *source) {
	if n == 0 {
		return
	}
	for i, id := range s.pending.ids[:n] {
		e := s.pending.routes[i]
		switch {
		case s.names(id):
			w.roots.add(id, e, t.cfg.maxRemembered())
			s.remembered++
		case next != nil && i >= s.carried:
			into.pending.add(id, next.admit(w.names[e], t.cfg.MaxRoutes), n)
		default:
			w.unsampled++
		}
	}
	if into != nil && into.pending.len() > 0 {
		// All ended by the last sweep's look.
		into.carried = into.pending.len()
		into.swept = []sweptRoots{{n: into.carried, at: s.swept[len(s.swept)-1].at}}
	}
	s.drop(n)
}

// PartDue reports whether the roots kept pending for the parts' verdict
// filled half the room that the window's other roots leave of MaxRoots
// (the stretches' have room of their own), at the last sweep: the
// collector then ends the CPU profile's part.
func (t *Tracker) PartDue() bool { return t.partDue.Load() }

// MaxRouteLen is the longest route sent, in bytes: a longer span
// name is cut at a character boundary before it and marked with its length
// (validutf8.Clip). Routes are far shorter; a span name is whatever the
// application made it.
const MaxRouteLen = 256

// admit returns the index of e when the window has room for it, that of
// Overflow otherwise. A window has at most limit routes, and Overflow.
func (w *windowState) admit(e string, limit int) uint16 {
	for _, a := range w.recent[:min(w.recentLen, len(w.recent))] {
		if a.route == e {
			return a.index
		}
	}
	i := w.admitNew(e, limit)
	// Within a window, a route is admitted the same way every time:
	// the window only gains routes, and once full it stays so.
	w.recent[w.recentLen%len(w.recent)] = admitted{route: e, index: i}
	w.recentLen++
	return i
}

// admitNew is admit for a route not among recent.
func (w *windowState) admitNew(e string, limit int) uint16 {
	e = validutf8.Clip(e, MaxRouteLen)
	if i, ok := w.index[e]; ok {
		return i
	}
	if e == Overflow || w.routes >= limit {
		e = Overflow
		if i, ok := w.index[e]; ok {
			return i
		}
	} else {
		w.routes++
	}
	if w.index == nil {
		w.index = make(map[string]uint16)
	}
	i := uint16(len(w.names))
	w.index[e] = i
	w.names = append(w.names, e)
	w.counts = append(w.counts, 0)
	return i
}

// rootKey decodes a span id's 16 hex digits.
func rootKey(id string) (uint64, bool) {
	var k [8]byte
	if len(id) != 2*len(k) {
		return 0, false
	}
	if _, err := hex.Decode(k[:], []byte(id)); err != nil {
		return 0, false
	}
	return binary.BigEndian.Uint64(k[:]), true
}

// Requests is what a Tracker saw of one window's requests. Its methods
// are for one goroutine, before the Tracker's next Window.
type Requests struct {
	// Counts holds the requests that ended in the window, by route:
	// at most MaxRoutes routes, and Overflow. Its keys are the
	// window's routes; one seen only on requests still running at the
	// window's end, or only in samples' labels, counts 0.
	Counts map[string]int64
	// Overflowed counts the window's requests counted under Overflow.
	Overflowed int64
	// Dropped counts the roots of the window whose route changed after
	// they started and that the window could not keep, the room of the
	// parts (MaxRoots) or of the stretches (MaxRoots/2) being full, and
	// the roots that Stretches.Named could not take in (maxTold): their
	// samples may carry the route they started with.
	Dropped int64
	// Unsampled counts the roots of the window whose route changed after
	// they started and whose life overlapped no stretch (Config.Stretches)
	// and no part (Config.Parts), and, for each of the two, the roots it
	// kept and forgot, its samples not naming them: no sample names
	// them.
	Unsampled int64
	// AgedOut counts the requests the window's sweeps stopped following,
	// MaxAge old or more than MaxRequests running: they are not counted
	// when they end.
	AgedOut int64

	// w is the window's state, whose names the samples' routes are
	// admitted to; roots its roots, ended its last renamed ones,
	// prevRoots those that ended in the window before, with their
	// routes' indexes in prevNames; live maps the span id of one running
	// at the window's end to it.
	w                       *windowState
	maxRoutes               int
	roots, ended, prevRoots roots
	prevNames               []string
	live                    map[uint64]*Request
}

// Route returns the route of the local root span with hex span id
// rootID, and false when the window does not know it. A request running
// at the window's end is given its route now, which it keeps once it
// ended.
func (q *Requests) Route(rootID string) (string, bool) {
	k, ok := rootKey(rootID)
	if !ok {
		return "", false
	}
	return q.routeOf(k)
}

// routeOf is Route for the span id k.
func (q *Requests) routeOf(k uint64) (string, bool) {
	if q.w == nil {
		return "", false
	}
	if r, ok := q.live[k]; ok {
		e, _ := r.outcome()
		return q.Admit(e), true
	}
	if i, ok := q.roots.routeOf(k); ok {
		return q.w.names[i], true
	}
	if i, ok := q.prevRoots.routeOf(k); ok {
		return q.Admit(q.prevNames[i]), true
	}
	return "", false
}

// snapshotRouteOf is SnapshotRoute for the span id k.
func (q *Requests) snapshotRouteOf(k uint64) (string, bool) {
	if e, ok := q.routeOf(k); ok {
		return e, true
	}
	if i, ok := q.ended.routeOf(k); ok {
		return q.w.names[i], true
	}
	return "", false
}

// SnapshotRoute is Route for a sample of a goroutine profile taken as
// the window ends, whose goroutine may have outlived its request: it
// knows the last renamed roots that ended in the window as well.
func (q *Requests) SnapshotRoute(rootID string) (string, bool) {
	k, ok := rootKey(rootID)
	if !ok {
		return "", false
	}
	return q.snapshotRouteOf(k)
}

// SnapshotDue reports whether, at the last sweep, the window's last
// renamed roots that ended had taken in half their room since the window
// began or the last Snapshot: a goroutine profile taken now can still
// name any of those that ended since, before they give way to others.
func (t *Tracker) SnapshotDue() bool { return t.snapshotDue.Load() }

// Snapshot has the window remember, within MaxRoots, the routes of the
// roots among rootIDs, those a goroutine profile just taken named, that
// are among its last renamed roots that ended: their goroutines outlived
// them, and the profiles taken as the window ends may name them after
// they gave way to others.
func (t *Tracker) Snapshot(rootIDs []string) {
	named := make(map[uint64]bool, len(rootIDs))
	for _, id := range rootIDs {
		if k, ok := rootKey(id); ok {
			named[k] = true
		}
	}
	t.sweepMu.Lock()
	defer t.sweepMu.Unlock()
	w := t.win
	for i, k := range w.ended.ids {
		switch {
		case !named[k]:
		case w.held() >= t.cfg.MaxRoots:
			w.rootsFull++
		default:
			w.roots.add(k, w.ended.routes[i], t.cfg.maxRemembered())
		}
	}
	w.endedNew = 0
	t.snapshotDue.Store(false)
}

// Carry has the window after q's remember the routes q gives the roots
// rootIDs that ended: the goroutine profiles name them again while the
// goroutines their requests started live on, and a goroutine's labels
// carry the name its request started with. Within MaxRoots; the others
// are counted in the next window's Dropped. It returns the number of
// rootIDs of requests that ended, known to q or not, that the Carry
// before did not name: requests that goroutines outlived since.
func (t *Tracker) Carry(q *Requests, rootIDs []string) (fresh int) {
	t.sweepMu.Lock()
	defer t.sweepMu.Unlock()
	w := t.win
	outlived := make([]uint64, 0, len(rootIDs))
	for _, id := range rootIDs {
		k, ok := rootKey(id)
		if _, live := q.live[k]; !ok || live {
			continue
		}
		outlived = append(outlived, k)
		if _, seen := slices.BinarySearch(t.outlived, k); !seen {
			fresh++
		}
		e, ok := q.snapshotRouteOf(k)
		switch {
		case !ok:
		case w.held() >= t.cfg.MaxRoots:
			w.rootsFull++
		default:
			w.roots.add(k, w.admit(e, t.cfg.MaxRoutes), t.cfg.maxRemembered())
		}
	}
	slices.Sort(outlived)
	t.outlived = outlived
	return fresh
}

// Admit returns route e as the window sends it: cut to MaxRouteLen
// and valid UTF-8, or Overflow when the window has MaxRoutes others.
// A route admitted is among Counts' keys. Without a Tracker, e is
// returned as is.
func (q *Requests) Admit(e string) string {
	if q.w == nil {
		return e
	}
	n := len(q.w.names)
	i := q.w.admit(e, q.maxRoutes)
	name := q.w.names[i]
	if len(q.w.names) > n && q.Counts != nil {
		q.Counts[name] = 0
	}
	return name
}

// Unsettled reports whether the local root span with hex span id rootID
// ran at the window's end, still runs and still has the name it started
// with, and no route: a span instrumentation may yet rename.
func (q *Requests) Unsettled(rootID string) bool {
	k, ok := rootKey(rootID)
	if !ok {
		return false
	}
	r, ok := q.live[k]
	return ok && r.unsettled()
}

// Settle waits, for at most wait, until none of the root span ids given
// is Unsettled, and reports whether none is. It polls: what it waits for
// is the end of requests, which the request path must not pay to signal.
func (q *Requests) Settle(rootIDs []string, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		rootIDs = slices.DeleteFunc(rootIDs, func(id string) bool { return !q.Unsettled(id) })
		if len(rootIDs) == 0 {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(left, settlePoll))
	}
}

// settlePoll is the period at which Settle looks at the requests.
const settlePoll = 5 * time.Millisecond

// Window sweeps, ends the current window at now and returns what it saw.
// A request that ended by now is counted in this window or in an earlier
// one, exactly once.
func (t *Tracker) Window(now time.Time) Requests {
	t.sweepMu.Lock()
	defer t.sweepMu.Unlock()
	t.sweep(now)

	w := t.win
	t.win = &windowState{parts: w.parts.next(), stretches: w.stretches.next()}
	t.decide(w, &w.parts, w.parts.pending.len(), t.win, &t.win.parts)
	t.decide(w, &w.stretches, w.stretches.pending.len(), t.win, &t.win.stretches)
	// The window kept as the one before needs only its roots and names.
	w.parts, w.stretches = source{}, source{}
	// Sorted once, by the collector's goroutine as it ends the window,
	// before anything reads them: the next window's Requests reads them
	// too, as prevRoots. A root both sources named is remembered twice.
	w.roots.sort()
	w.roots.compact()
	w.ended.sort()
	var live map[uint64]*Request
	if len(t.live) > 0 {
		live = make(map[uint64]*Request, len(t.live))
	}
	for _, r := range t.live {
		if id, ok := rootKey(r.RootID()); ok {
			live[id] = r
			// Admitted in the order they started, as their samples were
			// taken: a request's route may still change (Route).
			w.admit(r.Route(), t.cfg.MaxRoutes)
		}
	}
	// The roots that ended in the window before keep their route when
	// there is room for it.
	for i, e := range t.prev.names {
		if t.prev.counts[i] > 0 {
			w.admit(e, t.cfg.MaxRoutes)
		}
	}
	q := Requests{
		Overflowed: w.overflowed,
		Dropped:    w.rootsFull,
		Unsampled:  w.unsampled,
		AgedOut:    t.agedOut,
		w:          w,
		maxRoutes:  t.cfg.MaxRoutes,
		roots:      w.roots,
		ended:      w.ended,
		live:       live,
		prevRoots:  t.prev.roots,
		prevNames:  t.prev.names,
	}
	t.agedOut = 0
	w.ended = roots{}
	q.Counts = make(map[string]int64, len(w.names))
	for i, e := range w.names {
		q.Counts[e] = w.counts[i]
	}
	t.prev = w
	return q
}
