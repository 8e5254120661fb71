package requests

import (
	"sync"
	"sync/atomic"
	"time"
)

// Request is one local root span: a span with no parent span in this
// process. The label wrapper creates it at the span's Start and tells it
// of the span's new name or route and of its End; the Tracker reads it.
// Every method is safe on a nil Request, which does nothing: Begin returns
// nil while no Tracker is installed.
type Request struct {
	ids   string
	start time.Time

	// mu guards name and route, which the span's owner may change while
	// the Tracker reads them.
	mu              sync.Mutex
	name, httpRoute string
	// labelled is the route the span's labels carry, set by Begin and
	// Labelled.
	labelled string

	// took is the request's duration in nanoseconds plus one, 0 while it
	// runs: one atomic store ends it.
	took atomic.Int64

	// Owned by the Tracker's sweep (sweepMu).
	long bool // OnLong was called for it

	// relabelled, guarded by mu, is set once Labelled gave the labels a
	// route other than the one they carried since Begin (samples taken
	// before carry the older one). Beside long, so as to take no more
	// memory.
	relabelled bool
	// since holds the marks of the Tracker's Stretches and Parts
	// (Stretches.mark) taken before the request began: a stretch
	// overlapped its life if one ran then or began since.
	since marks
}

// Begin starts a request for the local root span whose trace and span ids
// are ids (the trace id's 32 hex digits followed by the span id's 16),
// started at start under name, with route the http.route its start
// attributes give ("" if none). The caller puts the request's route in
// its labels: route, or name when route is "". Begin returns nil, at the
// cost of one atomic load, while no Tracker is installed.
func Begin(ids, name, route string, start time.Time) *Request {
	t := installed.Load()
	if t == nil {
		return nil
	}
	return t.begin(ids, name, route, start)
}

// Tracking reports whether a Tracker is installed: whether Begin would
// start a request.
func Tracking() bool {
	return installed.Load() != nil
}

// IDs returns the request's trace id and span id, in hex, one after the
// other.
func (r *Request) IDs() string {
	if r == nil {
		return ""
	}
	return r.ids
}

// RootID returns the root span's id: IDs' last 16 hex digits.
func (r *Request) RootID() string {
	if r == nil || len(r.ids) < idsLen {
		return ""
	}
	return r.ids[traceIDLen:idsLen]
}

// Start returns when the request started.
func (r *Request) Start() time.Time {
	if r == nil {
		return time.Time{}
	}
	return r.start
}

// SetName records the span's new name, which is the request's route
// unless it has a route. A request that ended keeps its route.
func (r *Request) SetName(name string) {
	if r == nil || r.took.Load() != 0 {
		return
	}
	r.mu.Lock()
	r.name = name
	r.mu.Unlock()
}

// SetHTTPRoute records the span's route (the semantic conventions'
// http.route), which is the request's route from then on. An empty
// route is ignored. A request that ended keeps its route.
func (r *Request) SetHTTPRoute(route string) {
	if r == nil || route == "" || r.took.Load() != 0 {
		return
	}
	r.mu.Lock()
	r.httpRoute = route
	r.mu.Unlock()
}

// End ends the request at end. Only the first call counts; an end before
// the start counts as a request that took no time.
func (r *Request) End(end time.Time) {
	if r == nil {
		return
	}
	d := max(int64(end.Sub(r.start)), 0) + 1
	r.took.CompareAndSwap(0, d)
}

// Ended returns when the request ended, and false while it runs. The
// time keeps Start's monotonic clock reading, so End().Sub(Start()) is the
// request's duration.
func (r *Request) Ended() (time.Time, bool) {
	if r == nil {
		return time.Time{}, false
	}
	d := r.took.Load()
	if d == 0 {
		return time.Time{}, false
	}
	return r.start.Add(time.Duration(d - 1)), true
}

// Labelled returns the request's route now, which the caller puts in
// the span's labels once it has a route (Begin gave them the first): a
// request whose labels carried a route other than the one it ends with
// is one whose root the Tracker remembers first.
func (r *Request) Labelled() string {
	if r == nil {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.route()
	if e != r.labelled {
		r.relabelled = true
	}
	r.labelled = e
	return e
}

// Renamed returns the request's route now, and whether it is other than
// the one its labels carry (Begin, Labelled): a span renamed since, say.
func (r *Request) Renamed() (string, bool) {
	if r == nil {
		return "", false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.route()
	return e, e != r.labelled
}

// outcome returns the request's route now, and whether its labels
// carried another at any time: the samples taken then name that one.
func (r *Request) outcome() (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.route()
	return e, e != r.labelled || r.relabelled
}

// unsettled reports whether the request runs and has no route, and
// whether its name is the one it started with (its labels' route).
func (r *Request) unsettled() bool {
	if r.took.Load() != 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.httpRoute == "" && r.name == r.labelled
}

// Route returns the request's route now: its route if it has one,
// otherwise its span's name.
func (r *Request) Route() string {
	if r == nil {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.route()
}

// route is Route, with r.mu held.
func (r *Request) route() string {
	if r.httpRoute != "" {
		return r.httpRoute
	}
	return r.name
}

const (
	traceIDLen = 32
	idsLen     = traceIDLen + 16
)
