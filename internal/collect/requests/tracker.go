package requests

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pprofotel/profiler/internal/validutf8"
)

// EndpointKey is the sample attribute, and the pprof label, that carries
// the endpoint of a sample's request. It is a valid Prometheus and
// Pyroscope label name, so that a query can select it
// ({endpoint="/users/{id}"}), and pprof's -tagfocus=endpoint=... reads it.
const EndpointKey = "endpoint"

// Overflow is the endpoint of the requests of a window whose own endpoint
// did not fit in it: the window already had MaxEndpoints others.
const Overflow = "_other"

// Defaults of Config.
const (
	// DefaultMaxEndpoints is the number of distinct endpoints a window
	// carries unless configured otherwise. A service's routes are tens,
	// rarely more than a hundred; span names with ids in them are
	// unbounded, and the bound keeps them from multiplying the samples
	// (each distinct endpoint is a distinct sample per stack).
	DefaultMaxEndpoints = 100
	// DefaultMaxRequests bounds both the requests tracked at once (running,
	// or ended and not yet swept) and the root span ids a window remembers
	// the endpoint of: a Request is 96 bytes, a root 16 (1 MiB at most
	// per window, two windows kept).
	DefaultMaxRequests = 1 << 16
)

// sweepEvery bounds the time between two sweeps while requests are
// tracked; LongAfter can shorten it, to a floor of minSweep.
const (
	sweepEvery = 100 * time.Millisecond
	minSweep   = 10 * time.Millisecond
)

// Config configures a Tracker.
type Config struct {
	// MaxEndpoints is the most distinct endpoints a window carries; the
	// requests of others are counted under Overflow. 0 takes
	// DefaultMaxEndpoints.
	MaxEndpoints int
	// MaxRequests bounds the requests tracked at once and the root span
	// ids a window maps to their endpoint. 0 takes DefaultMaxRequests.
	MaxRequests int
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

// installed is the Tracker Begin reports to: process-wide, as the
// runtime's profiles are.
var installed atomic.Pointer[Tracker]

// ErrInstalled is returned by Install when another Tracker is installed.
var ErrInstalled = errors.New("requests: another tracker is installed")

// Tracker follows the requests of the process: it counts those that end
// in each window by endpoint, remembers the endpoint of each root span id
// for the window's samples, and watches the running ones for OnLong. The
// request path only appends a request to a list and stores its end; a
// sweep, run by the Tracker's own goroutine while requests are tracked and
// by Window, does the rest.
type Tracker struct {
	cfg   Config
	sweep time.Duration

	// mu guards what Begin touches.
	mu       sync.Mutex
	fresh    []*Request // begun since the last sweep
	tracked  int        // len(fresh) + len(live)
	dropped  int64      // requests not tracked: MaxRequests were
	sweeping bool       // the sweeper goroutine runs
	stopped  bool
	wake     chan struct{} // closed by Stop
	exited   chan struct{} // closed by the sweeper when it returns

	// sweepMu serialises sweeps and guards the rest.
	sweepMu sync.Mutex
	spare   []*Request
	live    []*Request
	win     windowState
	// prev is the window before, whose roots the samples of the current
	// one may still name.
	prev windowState
}

// windowState is what a sweep gathers for the current window. Endpoints
// are kept as indexes into names, so that the roots hold no pointer for
// the garbage collector to follow: they are the Tracker's largest memory.
type windowState struct {
	names  []string          // the window's endpoints
	index  map[string]uint16 // names' indexes
	counts []int64           // requests ended, by endpoint index
	// endpoints counts names but Overflow.
	endpoints int
	// recent remembers the last endpoints admitted, as the requests gave
	// them, with their index: a service's requests have a handful of
	// routes and names, the same strings again and again (a route is the
	// router's pattern, a name most often a constant), which compare
	// equal at once by their pointer; admitting one anew means cutting
	// it to MaxEndpointLen, checking its UTF-8 and hashing it.
	recent    [4]admitted
	recentLen int // of recent, filled in turn
	// roots holds the roots that ended, with their endpoint: appended by
	// the sweeps in the order they ended, sorted by span id when the
	// window ends. An append costs a sweep a few nanoseconds a request; a
	// map insert cost it about 300 (a table of up to MaxRequests entries,
	// grown and missed in the cache), most of the tracker's time.
	roots      []root
	overflowed int64
	rootsFull  int64
}

// admitted is an endpoint as a request gave it, and the index admit
// gave it.
type admitted struct {
	endpoint string
	index    uint16
}

// root is a local root span that ended: its span id, as a number, and the
// index of its endpoint in its window's names.
type root struct {
	id       uint64
	endpoint uint16
}

// sortedRoots is a window's roots sorted by span id, for endpointOf.
type sortedRoots []root

// endpointOf returns the endpoint index of the root with span id id.
func (rs sortedRoots) endpointOf(id uint64) (uint16, bool) {
	i, ok := slices.BinarySearchFunc(rs, id, func(r root, id uint64) int { return cmp.Compare(r.id, id) })
	if !ok {
		return 0, false
	}
	return rs[i].endpoint, true
}

// New returns a Tracker; Begin reports to it once it is installed.
func New(cfg Config) *Tracker {
	if cfg.MaxEndpoints <= 0 {
		cfg.MaxEndpoints = DefaultMaxEndpoints
	}
	if cfg.MaxRequests <= 0 {
		cfg.MaxRequests = DefaultMaxRequests
	}
	t := &Tracker{cfg: cfg, sweep: sweepEvery, wake: make(chan struct{})}
	if cfg.OnLong != nil && cfg.LongAfter > 0 {
		t.sweep = min(max(cfg.LongAfter/2, minSweep), sweepEvery)
	}
	t.win.reset()
	return t
}

// reset empties w for the next window. Its maps are made when first
// needed, so that a window without requests allocates nothing.
func (w *windowState) reset() {
	*w = windowState{}
}

// Install makes t the Tracker Begin reports to, until Stop. Only one
// Tracker is installed at a time.
func (t *Tracker) Install() error {
	if !installed.CompareAndSwap(nil, t) {
		return ErrInstalled
	}
	return nil
}

// Stop uninstalls t and waits for its sweeper to end. Requests begun
// before are no longer followed; Window may still be called.
func (t *Tracker) Stop() {
	installed.CompareAndSwap(t, nil)
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

func (t *Tracker) begin(ids, name string, start time.Time) *Request {
	r := &Request{ids: ids, name: name, start: start}
	t.mu.Lock()
	if t.tracked >= t.cfg.MaxRequests {
		t.dropped++
		t.mu.Unlock()
		return nil
	}
	t.fresh = append(t.fresh, r)
	t.tracked++
	if !t.sweeping && !t.stopped {
		t.sweeping = true
		t.exited = make(chan struct{})
		go t.sweeper(t.exited)
	}
	t.mu.Unlock()
	return r
}

// sweeper sweeps every sweep period while requests are tracked, and ends
// once none has been for a whole period, or at Stop.
func (t *Tracker) sweeper(exited chan struct{}) {
	defer close(exited)
	tick := time.NewTicker(t.sweep)
	defer tick.Stop()
	idle := false
	for {
		select {
		case <-t.wake:
			return
		case now := <-tick.C:
			t.sweepNow(now)
		}
		t.mu.Lock()
		if t.tracked == 0 {
			if idle {
				t.sweeping = false
				t.mu.Unlock()
				return
			}
			idle = true
		} else {
			idle = false
		}
		t.mu.Unlock()
	}
}

// Sweep does at now what the sweeper's next sweep would: the requests
// that ended are counted and reported to OnEnd, those that have run
// LongAfter to OnLong. The collector calls it before its recorders end a
// window, so that a request ended before the window's end is reported to
// them within it, not a sweep period later.
func (t *Tracker) Sweep(now time.Time) { t.sweepNow(now) }

// sweepNow takes in the requests begun since the last sweep, counts those
// that ended, and calls OnLong for those that have run LongAfter.
func (t *Tracker) sweepNow(now time.Time) {
	t.sweepMu.Lock()
	defer t.sweepMu.Unlock()

	t.mu.Lock()
	fresh := t.fresh
	t.fresh = t.spare[:0]
	t.mu.Unlock()
	t.live = append(t.live, fresh...)
	clear(fresh)
	t.spare = fresh[:0]

	kept := t.live[:0]
	ended := 0
	for _, r := range t.live {
		if r.took.Load() != 0 {
			t.ended(r)
			ended++
			continue
		}
		if !r.long && t.cfg.OnLong != nil && t.cfg.LongAfter > 0 && now.Sub(r.start) >= t.cfg.LongAfter {
			r.long = true
			t.cfg.OnLong(r)
		}
		kept = append(kept, r)
	}
	clear(t.live[len(kept):])
	t.live = kept

	t.mu.Lock()
	t.tracked -= ended
	t.mu.Unlock()
}

// ended counts r, which ended, in the current window.
func (t *Tracker) ended(r *Request) {
	e := t.win.admit(r.Endpoint(), t.cfg.MaxEndpoints)
	t.win.counts[e]++
	if t.win.names[e] == Overflow {
		t.win.overflowed++
	}
	if id, ok := rootKey(r.RootID()); ok {
		if t.win.roots == nil {
			// As many as the window before had, to spare the copies
			// of growing: windows are alike.
			t.win.roots = make([]root, 0, max(len(t.prev.roots), 64))
		}
		if len(t.win.roots) < t.cfg.MaxRequests {
			t.win.roots = append(t.win.roots, root{id: id, endpoint: e})
		} else {
			t.win.rootsFull++
		}
	}
	if r.long && t.cfg.OnEnd != nil {
		t.cfg.OnEnd(r)
	}
}

// MaxEndpointLen is the longest endpoint sent, in bytes: a longer span
// name is cut at a character boundary before it and marked with its length
// (validutf8.Clip). Routes are far shorter; a span name is whatever the
// application made it.
const MaxEndpointLen = 256

// admit returns the index of e when the window has room for it, that of
// Overflow otherwise. A window has at most limit endpoints, and Overflow.
func (w *windowState) admit(e string, limit int) uint16 {
	for _, a := range w.recent[:min(w.recentLen, len(w.recent))] {
		if a.endpoint == e {
			return a.index
		}
	}
	i := w.admitNew(e, limit)
	// Within a window, an endpoint is admitted the same way every time:
	// the window only gains endpoints, and once full it stays so.
	w.recent[w.recentLen%len(w.recent)] = admitted{endpoint: e, index: i}
	w.recentLen++
	return i
}

// admitNew is admit for an endpoint not among recent.
func (w *windowState) admitNew(e string, limit int) uint16 {
	e = validutf8.Clip(e, MaxEndpointLen)
	if i, ok := w.index[e]; ok {
		return i
	}
	if e == Overflow || w.endpoints >= limit {
		e = Overflow
		if i, ok := w.index[e]; ok {
			return i
		}
	} else {
		w.endpoints++
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

// Requests is what a Tracker saw of one window's requests.
type Requests struct {
	// Counts holds the requests that ended in the window, by endpoint:
	// at most MaxEndpoints endpoints, and Overflow. Its keys are the
	// window's endpoints; one seen only on requests still running at the
	// window's end counts 0.
	Counts map[string]int64
	// Overflowed counts the window's requests counted under Overflow.
	Overflowed int64
	// Dropped counts the requests of the window not followed at all,
	// MaxRequests being tracked when they began, and the root span ids
	// whose endpoint the window could not remember, MaxRequests being
	// remembered already: their samples carry no endpoint.
	Dropped int64

	// roots holds the roots that ended in the window, with the index of
	// their endpoint in names, prevRoots those that ended in the window
	// before, with theirs in prevNames; liveRoots maps the span id of one
	// running at the window's end to its endpoint's index in names.
	roots, prevRoots sortedRoots
	liveRoots        map[uint64]uint16
	names, prevNames []string
}

// Endpoint returns the endpoint of the local root span with hex span id
// rootID, and false when the window does not know it.
func (q *Requests) Endpoint(rootID string) (string, bool) {
	k, ok := rootKey(rootID)
	if !ok {
		return "", false
	}
	if i, ok := q.liveRoots[k]; ok {
		return q.names[i], true
	}
	if i, ok := q.roots.endpointOf(k); ok {
		return q.names[i], true
	}
	if i, ok := q.prevRoots.endpointOf(k); ok {
		// One of the window's endpoints, unless it did not fit.
		if e := q.prevNames[i]; q.Counts != nil {
			if _, in := q.Counts[e]; in {
				return e, true
			}
		}
		return Overflow, true
	}
	return "", false
}

// Window sweeps, ends the current window at now and returns what it saw.
// A request that ended by now is counted in this window or in an earlier
// one, exactly once. What it returns is not changed afterwards.
func (t *Tracker) Window(now time.Time) Requests {
	t.sweepNow(now)
	t.sweepMu.Lock()
	defer t.sweepMu.Unlock()

	w := t.win
	t.win.reset()
	// Sorted once, by the collector's goroutine as it ends the window
	// (a few milliseconds for MaxRequests roots), before anything reads
	// them: the next window's Requests reads them too, as prevRoots.
	slices.SortFunc(w.roots, func(a, b root) int { return cmp.Compare(a.id, b.id) })
	var live map[uint64]uint16
	if len(t.live) > 0 {
		live = make(map[uint64]uint16, len(t.live))
	}
	for _, r := range t.live {
		id, ok := rootKey(r.RootID())
		if !ok {
			continue
		}
		if len(live) >= t.cfg.MaxRequests {
			w.rootsFull++
			continue
		}
		live[id] = w.admit(r.Endpoint(), t.cfg.MaxEndpoints)
	}
	// The roots that ended in the window before keep their endpoint when
	// there is room for it.
	for i, e := range t.prev.names {
		if t.prev.counts[i] > 0 {
			w.admit(e, t.cfg.MaxEndpoints)
		}
	}
	t.mu.Lock()
	dropped := t.dropped
	t.dropped = 0
	t.mu.Unlock()
	q := Requests{
		Overflowed: w.overflowed,
		Dropped:    dropped + w.rootsFull,
		roots:      w.roots,
		liveRoots:  live,
		names:      w.names,
		prevRoots:  t.prev.roots,
		prevNames:  t.prev.names,
	}
	if len(w.names) > 0 {
		q.Counts = make(map[string]int64, len(w.names))
		for i, e := range w.names {
			q.Counts[e] = w.counts[i]
		}
	}
	t.prev = w
	return q
}
