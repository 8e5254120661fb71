package offcpu

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/trace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/collect/requests"
)

// Defaults of a Recorder's bounds.
const (
	// DefaultDuty is the share of every cycle traced, in percent, when
	// SetDutyCycle was not called.
	DefaultDuty = collect.DefaultOffCPUDuty
	// DefaultCycle is the longest duty cycle; a shorter window shortens
	// it to the window's length, so that every window is traced.
	DefaultCycle = 10 * time.Second
	// DefaultMaxTraceBytes bounds the trace read in one stretch, and so
	// the memory it takes and the parser's work; a stretch that reaches
	// it ends early.
	DefaultMaxTraceBytes = 8 << 20
	// DefaultMaxWaits bounds the waits kept per window.
	DefaultMaxWaits = 50_000
	// DefaultMaxTracedGoroutines is the number of goroutines above which no
	// stretch is traced. At every generation's end the runtime writes
	// into the trace the state of every goroutine that did not run in it,
	// and the parser keeps state for each: the memory a stretch takes
	// grows with the goroutines, whatever MaxTraceBytes.
	DefaultMaxTracedGoroutines = 50_000
	// minCycle keeps very short windows from restarting the trace in a
	// tight loop.
	minCycle = 100 * time.Millisecond
	// minStretch is the shortest traced stretch, whatever the event rate.
	minStretch = 10 * time.Millisecond
	// firstStretch is the longest first stretch, traced before the
	// event rate is known.
	firstStretch = time.Second
	// softShare is the share of MaxTraceBytes, as n/4, kept in a stretch
	// before it is ended: ending it ends the runtime's generation under
	// way, and the bytes the runtime writes until then must still fit.
	softShare = 3
)

// duty is the process-wide duty cycle in percent, 0 for DefaultDuty.
var duty atomic.Int64

// SetDutyCycle sets the share of each cycle that Recorders trace, in
// percent from 1 to 100, and returns what puts the previous value back.
// Like the runtime's profiling rates it is process-wide: the execution
// tracer is.
func SetDutyCycle(percent int) (restore func()) {
	prev := duty.Swap(int64(percent))
	return func() { duty.Store(prev) }
}

func dutyCycle() int {
	if d := duty.Load(); d > 0 && d <= 100 {
		return int(d)
	}
	return DefaultDuty
}

// Stats counts what a Recorder left out: stretches skipped because the
// execution tracer was someone else's, and stretches read only in part.
type Stats = collect.OffCPUOmissions

// Config configures a Recorder. Zero fields take the defaults.
type Config struct {
	Cycle         time.Duration
	MaxTraceBytes uint64
	MaxWaits      int
	// MaxTracedGoroutines is DefaultMaxTracedGoroutines when 0; negative sets no
	// limit.
	MaxTracedGoroutines int
	Logger              *slog.Logger
	Stats               *Stats
	// Stretches is told when a trace runs whose waits name local roots,
	// for the request tracker; nil for none.
	Stretches *requests.Stretches

	// SlowThreshold is the least duration of a request explained as
	// slow; MaxWatched bounds the requests watched at once, MaxSlow those
	// a window explains; SlowTraceRate (bytes a second) and
	// SlowTraceBurst (bytes) bound the trace read for them beyond the
	// duty cycle. Zero takes the defaults.
	SlowThreshold  time.Duration
	MaxWatched     int
	MaxSlow        int
	SlowTraceRate  int
	SlowTraceBurst int
}

// Recorder traces a duty cycle of every window and returns the window's
// waits when asked. Its methods must be called from one goroutine.
type Recorder struct {
	cfg      Config
	requests chan request
	done     chan struct{}

	// The tracker's reports, taken in by the recorder's goroutine.
	inboxMu    sync.Mutex
	inbox      []watchEvent
	inboxReady chan struct{}

	// Owned by the recorder's goroutine.
	windows     [2]*window
	built       built
	cur         int
	windowStart time.Time
	cycle       time.Duration
	// bufs are the two buffers a stretch's trace goes into, kept from
	// one stretch to the next (traceSink.take).
	bufs [2][]byte
	// skipLogged is the reason the last stretch was skipped for, logged
	// once until a stretch is traced again; "" for none.
	skipLogged string
	errLogged  bool
	// rate is the trace's bytes per second in the last stretch, 0
	// before the first.
	rate float64
	// readTotal counts the trace bytes read so far, and maxRead is the
	// most read in one stretch.
	readTotal, maxRead int

	// slow is the watched requests; slowWin the window of their
	// explanations, built into slowBuilt; slowProfile the last built.
	slow        *slowState
	slowWin     *window
	slowBuilt   built
	slowProfile *pprofdecode.Profile
	// tokens are the trace bytes that may still be read for slow
	// requests beyond the duty cycle, as of refilled.
	tokens   float64
	refilled time.Time
	// sessionsFrom is when a watch session may next start, after one
	// could not.
	sessionsFrom time.Time
	// handover is the next stretch, started by record before it read
	// the last of its own (see record): a duty stretch after a
	// collection, a watch trace otherwise; nil when none was.
	handover *stretch
	// reach is where the last trace read ended, Unix nanoseconds.
	reach int64
	// carried are the waits open where the last stretch was read to,
	// which the handover stretch's reading carries on (handOver).
	carried []openWait
	// bridged is set while a window ends with the trace going on.
	bridged bool
	// dutyDue is when the duty cycle's next stretch is due: the end of
	// the rest after the stretch under way; zero at 100 %.
	dutyDue time.Time
}

// settleUntraced explains the watched requests that ended, with no trace
// read running: all of them, but while a handover trace runs, only those
// that ended before the last trace read ended; the others are explained
// from the handover trace's reading.
func (r *Recorder) settleUntraced(now time.Time) {
	if r.handover != nil || r.bridged {
		r.slow.settle(r.reach, true, now)
		return
	}
	r.slow.settle(0, false, now)
}

type request struct {
	now   time.Time
	last  bool
	reply chan *pprofdecode.Profile
}

// Start starts a Recorder whose first window begins at now; its first
// stretch is traced at once.
func Start(now time.Time, cfg Config) *Recorder {
	if cfg.Cycle <= 0 {
		cfg.Cycle = DefaultCycle
	}
	if cfg.MaxTraceBytes == 0 {
		cfg.MaxTraceBytes = DefaultMaxTraceBytes
	}
	if cfg.MaxWaits <= 0 {
		cfg.MaxWaits = DefaultMaxWaits
	}
	if cfg.MaxTracedGoroutines == 0 {
		cfg.MaxTracedGoroutines = DefaultMaxTracedGoroutines
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Stats == nil {
		cfg.Stats = new(Stats)
	}
	if cfg.SlowThreshold <= 0 {
		cfg.SlowThreshold = DefaultSlowThreshold
	}
	if cfg.MaxWatched <= 0 {
		cfg.MaxWatched = DefaultMaxWatched
	}
	if cfg.MaxSlow <= 0 {
		cfg.MaxSlow = DefaultMaxSlow
	}
	if cfg.SlowTraceRate <= 0 {
		cfg.SlowTraceRate = DefaultSlowTraceRate
	}
	if cfg.SlowTraceBurst <= 0 {
		cfg.SlowTraceBurst = DefaultSlowTraceBurst
	}
	r := &Recorder{
		cfg:         cfg,
		requests:    make(chan request),
		done:        make(chan struct{}),
		inboxReady:  make(chan struct{}, 1),
		windows:     [2]*window{newWindow(cfg.MaxWaits, SampleType), newWindow(cfg.MaxWaits, SampleType)},
		windowStart: now,
		cycle:       cfg.Cycle,
		slow:        newSlowState(&cfg),
		slowWin:     newWindow(math.MaxInt, SlowSampleType),
		tokens:      float64(cfg.SlowTraceBurst),
		refilled:    now,
	}
	// The first stretch starts before Start returns, so that what the
	// application does next is traced.
	go r.loop(r.startStretch())
	return r
}

// Collect ends the window at now and returns its waits; with last set the
// Recorder stops for good. The profile is valid until the next call.
func (r *Recorder) Collect(now time.Time, last bool) (*pprofdecode.Profile, error) {
	select {
	case <-r.done:
		return nil, fmt.Errorf("offcpu: recorder stopped")
	default:
	}
	reply := make(chan *pprofdecode.Profile, 1)
	r.requests <- request{now: now, last: last, reply: reply}
	p := <-reply
	if last {
		<-r.done
	}
	return p, nil
}

var _ collect.SlowRecorder = (*Recorder)(nil)

// Slow returns the slow-request profile of the window the last Collect
// ended, nil when it explained no request; it is valid until the next
// Collect.
func (r *Recorder) Slow() *pprofdecode.Profile { return r.slowProfile }

// Watch tells the recorder that a request, the local root span with the
// given ids (its trace id's 32 hex digits and its span id's 16), begun at
// start, at route as far as is known yet, has run long: the recorder
// traces it until it ends, within its bounds. It never blocks; a report
// that finds the recorder's queue full is dropped and counted.
func (r *Recorder) Watch(ids, route string, start time.Time) {
	r.post(watchEvent{ids: ids, route: route, start: start})
}

// Ended tells the recorder that a request it was told to watch ended, at
// route: when it lasted the slow-request threshold or longer, the
// window explains it.
func (r *Recorder) Ended(ids, route string, start, end time.Time) {
	r.post(watchEvent{ids: ids, route: route, start: start, end: end, ended: true})
}

// maxInbox bounds the reports waiting for the recorder's goroutine.
const maxInbox = 1024

func (r *Recorder) post(e watchEvent) {
	r.inboxMu.Lock()
	if len(r.inbox) >= maxInbox {
		r.inboxMu.Unlock()
		r.cfg.Stats.SlowRequestsDropped.Add(1)
		return
	}
	r.inbox = append(r.inbox, e)
	r.inboxMu.Unlock()
	select {
	case r.inboxReady <- struct{}{}:
	default:
	}
}

// drain takes in the reports posted so far.
func (r *Recorder) drain() {
	r.inboxMu.Lock()
	in := r.inbox
	r.inbox = nil
	r.inboxMu.Unlock()
	for _, e := range in {
		r.slow.apply(e)
	}
}

// refill adds the trace bytes the budget earned since it was last
// refilled, and returns what it holds.
func (r *Recorder) refill() float64 {
	now := time.Now()
	r.tokens = min(r.tokens+now.Sub(r.refilled).Seconds()*float64(r.cfg.SlowTraceRate), float64(r.cfg.SlowTraceBurst))
	r.refilled = now
	return r.tokens
}

// stretch is a traced stretch under way.
type stretch struct {
	start  time.Time
	length time.Duration
	// rest is the untraced remainder of the cycle that follows: on
	// average the length times (100 - duty) / duty, so that a stretch
	// shortened to the memory bound keeps the duty cycle (jitter).
	rest time.Duration
	sink *traceSink // nil when not traced
	// watch marks a trace run for watched requests only, outside the
	// duty cycle; first is the short trace before it, whose end gives
	// the stacks of the goroutines already waiting (startTrace).
	watch bool
	first []byte
}

func (r *Recorder) startStretch() stretch {
	st := stretch{start: time.Now()}
	st.length, st.rest = stretchLength(r.cycle, dutyCycle(), r.cfg.MaxTraceBytes/4*softShare, r.rate)
	st.rest = jitter(st.rest, rand.Float64())
	if r.windows[r.cur].full() {
		// The window holds all the waits it keeps: what this stretch
		// would read could not count, nor could its time. It rests.
		r.cfg.Stats.Truncated.Add(1)
		return st
	}
	if n := runtime.NumGoroutine(); r.tooMany(n) {
		r.skip("goroutines", fmt.Sprintf("pprofotel: off-CPU profile skipped: %d goroutines, more than the %d whose trace it reads; will retry every cycle", n, r.cfg.MaxTracedGoroutines))
		return st
	}
	// Every stretch starts with the short trace: a request may turn long
	// during the stretch that was already waiting when it began, and
	// without the short trace its wait would have no stack.
	r.traceStretch(&st)
	if st.first != nil && r.slow.live > 0 {
		r.charge(startCost + len(st.first))
	}
	if st.sink == nil {
		r.skip("tracer", "pprofotel: off-CPU profile skipped: the execution tracer is in use elsewhere (runtime/trace.Start); will retry every cycle")
	}
	return st
}

// startWatch starts a trace for the watched requests, outside the duty
// cycle; its sink is nil when the tracer could not be had.
func (r *Recorder) startWatch() stretch {
	st := stretch{start: time.Now(), length: watchStep, watch: true}
	if r.tooMany(runtime.NumGoroutine()) {
		return st
	}
	r.traceStretch(&st)
	r.charge(startCost + len(st.first))
	return st
}

// traceStretch starts st's trace, its short trace first (startTrace),
// and has st start once it runs: on a loaded machine the tracer can take
// a good part of a stretch to start, and a wait begun meanwhile is not
// seen, so neither that time nor the trace's rate counts it. The
// Stretches are told of a duty stretch, whose waits name roots, not of a
// watch trace, which keeps none.
func (r *Recorder) traceStretch(st *stretch) {
	stretches := r.cfg.Stretches
	if st.watch {
		stretches = nil
	}
	st.sink, st.first = r.startTrace(true, stretches)
	if st.sink != nil {
		st.start = time.Now()
	}
}

// lingerFor is how long a watch trace goes on once no watched request
// lives, for a trace of rate bytes a second (0: not known yet), when the
// watched requests began gap apart on average (0: not known yet). Going
// on costs the trace's bytes, and saves a start if another request turns
// long meanwhile. Taking those arrivals as memoryless, going on pays
// while the chance of one in the next instant, times startCost, exceeds
// what the instant costs: for gap × ln(even/gap), where even is the time
// the trace takes to cost a start, and not at all when gap is even or
// longer. At most watchLinger; even, capped likewise, while gap is not
// known.
func lingerFor(rate float64, gap time.Duration) time.Duration {
	even := watchLinger
	if rate > 0 {
		even = time.Duration(startCost / rate * float64(time.Second))
	}
	switch {
	case gap <= 0:
		return min(even, watchLinger)
	case gap >= even:
		return 0
	}
	return min(watchLinger, time.Duration(float64(gap)*math.Log(float64(even)/float64(gap))))
}

// watchRate returns the rate of st's trace, in bytes a second, once it
// has offered a start's worth, else the last stretch's: the runtime
// hands the sink its bytes a generation at a time, so a trace's first
// moments show too few.
func (r *Recorder) watchRate(st *stretch, now time.Time) float64 {
	if offered, elapsed := st.sink.offeredBytes(), now.Sub(st.start); offered >= startCost && elapsed > 0 {
		return float64(offered) / elapsed.Seconds()
	}
	return r.rate
}

// finishing reports whether a trace run on for watched requests goes
// on, as far as the budget is concerned. Once the budget is spent, the
// requests watched until then (*spentAt, -1 before) are traced to their
// end, in debt, unless the debt reaches maxDebt of the burst: a request
// whose trace stops before it ends is left untraced at its end, and its
// trace was spent for nothing. Those watched later are traced only as
// far as that goes.
func (r *Recorder) finishing(spentAt *int) bool {
	if r.tokens > 0 {
		return true
	}
	if *spentAt < 0 {
		*spentAt = r.slow.seq
	}
	return r.inDebtBound() && r.slow.liveUpTo(*spentAt)
}

// inDebtBound reports whether the budget's debt is under maxDebt of the
// burst.
func (r *Recorder) inDebtBound() bool {
	return r.tokens > -float64(r.cfg.SlowTraceBurst)*maxDebt
}

// mayStartWatch reports whether the budget allows a watch trace: a
// start needs minTokens, or, for a request whose route has fewer than
// minPerRoute explanations in the window, a debt under the bound.
func (r *Recorder) mayStartWatch() bool {
	return r.refill() >= minTokens || r.inDebtBound() && r.slow.liveOwed()
}

// maxDebt is the share of the burst a trace may run into debt to finish
// the requests it watched when the budget ran out.
const maxDebt = 0.25

// charge takes n bytes from the slow-request budget.
func (r *Recorder) charge(n int) {
	r.refill()
	r.tokens -= float64(n)
}

// watchStep is how often a trace run on for watched requests checks
// whether they still need it, and minTokens the budget a new one needs.
// A trace run for watched requests goes on after the last ended, so that
// the next one to turn long finds it running, for as long as tracing on
// costs less than starting again (lingerFor), at most watchLinger. Each
// start is charged startCost of the budget, on top of the short trace
// before it: starting and stopping the tracer costs the recorder about
// what parsing that much trace costs.
const (
	watchStep   = 50 * time.Millisecond
	watchLinger = 250 * time.Millisecond
	minTokens   = 64 << 10
	startCost   = 32 << 10
)

func (r *Recorder) tooMany(n int) bool {
	return r.cfg.MaxTracedGoroutines > 0 && n > r.cfg.MaxTracedGoroutines
}

// skip counts a stretch not traced, and logs why, once until a stretch is
// traced again.
func (r *Recorder) skip(reason, msg string, args ...any) {
	r.cfg.Stats.Skipped.Add(1)
	if r.skipLogged != reason {
		r.cfg.Logger.Warn(msg, args...)
		r.skipLogged = reason
	}
}

// stretchLength returns how long to trace and then rest in a cycle, at
// duty percent, for a trace of rate bytes a second (0: not known yet): a
// stretch is kept short enough for maxBytes at the rate the last
// stretch showed, and the first, which measures the rate, to a second. The rest
// keeps the duty cycle whatever the length.
func stretchLength(cycle time.Duration, duty int, maxBytes uint64, rate float64) (length, rest time.Duration) {
	d := time.Duration(duty)
	length = cycle * d / 100
	if rate > 0 {
		length = min(length, time.Duration(float64(maxBytes)/rate*float64(time.Second)))
	} else if duty < 100 {
		length = min(length, firstStretch)
	}
	length = max(length, minStretch)
	return length, length * (100 - d) / d
}

// jitter returns the rest after a stretch, for u drawn uniformly from
// [0, 1): between half and one and a half times mean, mean on average.
// Stretches a fixed rest apart would keep step with work that recurs on
// a period dividing the cycle (a ticker every second, every request of
// a paced load): each would find it at the same point of its period, and
// a wait begun just before every stretch would never be counted.
func jitter(mean time.Duration, u float64) time.Duration {
	return mean/2 + time.Duration(u*float64(mean))
}

// wake says what ended a wait.
type wake int

const (
	wakeTimer   wake = iota
	wakeReady        // the sink has a generation, or is full
	wakeWatch        // the tracker reported
	wakeRequest      // a collection
)

type waitFunc func(d time.Duration, ready <-chan struct{}) (*request, wake)

// loop runs duty cycles until the last collection: each cycle traces its
// first part and rests for the remainder. A collection ends the cycle
// under way, tracing included, and starts the next one. Watched requests
// extend a stretch past its length, or are traced while it rests, within
// the slow-request budget.
func (r *Recorder) loop(st stretch) {
	defer close(r.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// wait waits d, or until a request, a report of the tracker (taken in
	// at once) or a value on ready (nil: none) comes.
	wait := func(d time.Duration, ready <-chan struct{}) (*request, wake) {
		timer.Reset(d)
		select {
		case <-timer.C:
			return nil, wakeTimer
		case <-ready:
			timer.Stop()
			return nil, wakeReady
		case <-r.inboxReady:
			timer.Stop()
			r.drain()
			return nil, wakeWatch
		case q := <-r.requests:
			timer.Stop()
			return &q, wakeRequest
		}
	}
	for {
		r.dutyDue = time.Time{}
		if st.rest > 0 {
			r.dutyDue = st.start.Add(st.length + st.rest)
		}
		var q *request
		if st.sink != nil {
			q = r.record(st, wait)
		} else {
			q = r.rest(st.start.Add(st.length), wait)
		}
		if q == nil && st.rest > 0 {
			q = r.rest(r.dutyDue, wait)
		}
		if q != nil {
			q.reply <- r.flush(q.now)
			if q.last {
				return
			}
		}
		if r.handover != nil {
			st, r.handover = *r.handover, nil
		} else {
			st = r.startStretch()
		}
	}
}

// rest waits until until, tracing the watched requests meanwhile when
// the budget allows, and returns the collection request that ended it, if
// one did. It returns early when a watch trace handed over to the duty
// cycle's next stretch (r.handover), which the loop then records.
func (r *Recorder) rest(until time.Time, wait waitFunc) *request {
	for {
		if r.handover != nil {
			if !r.handover.watch {
				return nil
			}
			// A watch trace started while the stretch was read.
			st := *r.handover
			r.handover = nil
			if q := r.record(st, wait); q != nil {
				return q
			}
			continue
		}
		now := time.Now()
		if r.slow.live > 0 && now.After(r.sessionsFrom) && r.mayStartWatch() {
			st := r.startWatch()
			if st.sink == nil {
				// The tracer is someone else's, or too many goroutines:
				// try again in a while, not at every report.
				r.sessionsFrom = now.Add(time.Second)
				r.slow.settle(0, false, now)
			} else if q := r.record(st, wait); q != nil {
				return q
			}
			continue
		}
		d := time.Until(until)
		if d <= 0 {
			return nil
		}
		if r.slow.live > 0 {
			// Wake when the budget allows a trace again.
			d = min(d, max(time.Duration((minTokens-r.tokens)/float64(r.cfg.SlowTraceRate)*float64(time.Second)), watchStep))
		}
		if q, _ := wait(d, nil); q != nil {
			return q
		}
		r.slow.settle(0, false, time.Now())
	}
}

// startTrace subscribes a sink to the execution trace for a stretch, or
// returns nil when the application runs the tracer with trace.Start.
//
// The runtime allows one trace.Start and one flight recorder at a time,
// side by side, and the application may want either. The recorder takes
// trace.Start's place: an application's flight recorder starts, runs and
// snapshots beside it, and is traced along (the recorder reads the trace
// while the application's flight recorder runs, too). An application's
// trace.Start that comes first makes this fail, and the stretch is
// skipped; one that comes while a stretch runs fails, for the rest of
// that stretch, with "execution tracer already enabled".
//
// With first set, a short trace is started and stopped before the
// stretch's, and returned: the runtime writes the stack of a goroutine
// already waiting when a trace starts only at the end of the trace's
// first generation, and only if the goroutine did not run until then
// (go.dev/issue/65634), so a wait that ends within the first second would
// have no stack; the short trace ends its generation at once.
//
// The stretches, when given, are told of the stretch as its trace starts,
// after the short trace, whose waits are not kept, and the sink tells them
// of its end (traceSink.endNaming).
func (r *Recorder) startTrace(first bool, stretches *requests.Stretches) (*traceSink, []byte) {
	var firstTrace []byte
	if first {
		fs := newTraceSink(int(r.cfg.MaxTraceBytes), int(r.cfg.MaxTraceBytes), [2][]byte{})
		if err := trace.Start(fs); err != nil {
			return nil, nil
		}
		stopTrace()
		fs.close()
		if header, gens := fs.take(); gens != nil {
			firstTrace = append(header, gens...)
		}
	}
	sink := newTraceSink(int(r.cfg.MaxTraceBytes/4*softShare), int(r.cfg.MaxTraceBytes), r.bufs)
	// Before the first wait can be kept.
	stretches.Begin()
	sink.stretches = stretches
	if err := trace.Start(sink); err != nil {
		// The short trace before it is dropped: no wait of it counts.
		stretches.Cancel()
		return nil, nil
	}
	if r.skipLogged != "" {
		r.cfg.Logger.Info("pprofotel: off-CPU profiling resumed")
		r.skipLogged = ""
	}
	return sink, firstTrace
}

// stopTrace ends a stretch's subscription to the trace. trace.Stop takes
// no handle: it ends whichever trace.Start is current, and counts a
// subscriber less even when none is left to end. An application that
// called it during the stretch (say after its own trace.Start failed) has
// already ended the stretch's; a second Stop would then take the count of
// the application's flight recorder and stop the runtime's trace under
// it. So the slot is probed first: a trace.Start that succeeds found it
// free, and the Stop that follows is then its own. The one case left is
// an application that stopped the stretch's trace and started one of its
// own since: that one is stopped.
func stopTrace() {
	if !trace.IsEnabled() {
		return // no subscriber left: ours was ended already
	}
	_ = trace.Start(io.Discard)
	trace.Stop()
}

// record traces the stretch st into the current window, parsing each
// generation of the trace once the runtime completes it, until the
// stretch's end, a collection, or the stretch's byte budget; it returns
// the collection request that ended it, if one did. While watched
// requests live and the slow-request budget allows, a stretch goes on
// past its length, its waits ending there; a watch trace (st.watch) keeps
// no waits at all.
func (r *Recorder) record(st stretch, wait waitFunc) *request {
	rec := r.newRecording(st)
	r.traceUntilEnd(rec, wait)
	// Stop returns once the runtime has handed the sink the generation
	// under way (it waits for the trace's reader to finish it, whether or
	// not the application's flight recorder goes on); should a part come
	// later, it is left out and the stretch counts as cut.
	stopTrace()
	rec.st.sink.endNaming()
	stopped := time.Now()
	sinkCut, offered := rec.st.sink.close()
	r.startNext(rec)
	if !rec.abandon {
		r.parse(rec)
		if next := r.handover; next != nil && !next.watch && next.sink != nil && !rec.extended && rec.err == nil && !sinkCut {
			// The next stretch's trace began as this one's ended: its
			// reading carries on the waits still open, split at the
			// window's end when a collection ended this one, and
			// counted from now on when this one kept none. Not when
			// the sink dropped generations: the reading stopped where
			// they began, and a goroutine the next trace finds waiting
			// where it waited then may have run many times since.
			r.carried = rec.rd.handOver(rec.q != nil || rec.st.watch)
		}
	}
	if rec.st.watch || rec.extended {
		r.charge(offered - rec.charged)
	}
	r.endRecording(rec, stopped, sinkCut, offered)
	return rec.q
}

// recording is the state of one record call.
type recording struct {
	st stretch
	// w is the window the stretch's waits count into, rd its reading.
	w  *window
	rd *reading
	// end is when the stretch, or its extension, ends.
	end time.Time
	// q is the collection request that ended the stretch, if one did.
	q *request
	// cut is set when the trace was read in part, err is the reading's
	// error.
	cut bool
	err error
	// abandon is set when what the sink holds is not to be read.
	abandon bool
	// extended is set once a duty stretch went on past its length for
	// watched requests; charged counts the bytes offered that the
	// slow-request budget was charged for.
	extended bool
	charged  int
	// idleSince is when the last watched request ended, zero while one
	// lives.
	idleSince time.Time
	// spentAt is the last watch begun when the budget ran out: the trace
	// goes on for those watched up to it, in debt (finishing).
	spentAt int
	// due is set when the trace stopped for the duty cycle's next
	// stretch, which takes over the watched requests.
	due bool
}

// newRecording starts the reading of st into the current window: it
// carries on the waits the last stretch left open, unless st is a watch
// trace, and reads st's short trace.
func (r *Recorder) newRecording(st stretch) *recording {
	w := r.windows[r.cur]
	rd := w.newReading(st.start)
	rd.slow = r.slow
	rec := &recording{st: st, w: w, rd: rd, end: st.start.Add(st.length), spentAt: -1}
	if !st.watch {
		rd.carry(r.carried)
		if st.rest > 0 {
			w.partial = true
		}
	}
	r.carried = nil
	if st.first != nil {
		rd.noWaits = true
		_ = rd.read(bytes.NewReader(st.first))
		// The short trace's states end with it: between it and the
		// stretch's trace the goroutines went on unseen, and the
		// stretch's trace states them again as it finds them.
		rd.finishSlow()
		if !st.watch {
			rd.cross()
		}
	}
	rd.noWaits = st.watch
	return rec
}

// parse reads the generations the sink holds, unless an earlier read
// failed or the reading is full, and explains the watched requests that
// ended before the last event read.
func (r *Recorder) parse(rec *recording) {
	header, gens := rec.st.sink.take()
	if gens == nil || rec.err != nil || rec.rd.truncated {
		return
	}
	if err := rec.rd.read(io.MultiReader(bytes.NewReader(header), bytes.NewReader(gens))); err != nil {
		rec.err, rec.cut = err, true
	}
	r.tell(rec.w, rec.rd.wall(rec.rd.last))
	r.slow.settle(rec.rd.wall(rec.rd.last), true, time.Now())
}

// tell tells the Stretches the roots that w's waits added since the last
// time name, every wait up to through (Unix nanoseconds) having been read.
func (r *Recorder) tell(w *window, through int64) {
	r.cfg.Stretches.Named(w.roots, time.Unix(0, through))
	w.roots = w.roots[:0]
}

// whole reports whether the stretch is traced whole at 100 %: its
// trace goes on, a collection ends the window, not the stretch, and the
// stretch's end begins another cycle.
func (rec *recording) whole() bool {
	return !rec.st.watch && rec.st.rest == 0 && rec.err == nil && !rec.rd.truncated && !rec.st.sink.isFull()
}

// traceUntilEnd waits on the stretch's trace, parsing each generation as
// the sink gets it, until a collection, the sink's bound, a read error,
// or the stretch's end past which no watched request keeps it going.
func (r *Recorder) traceUntilEnd(rec *recording, wait waitFunc) {
	for {
		var why wake
		rec.q, why = wait(time.Until(rec.end), rec.st.sink.ready)
		if why == wakeReady {
			r.parse(rec)
			if r.tooMany(runtime.NumGoroutine()) {
				// Goroutines started during the stretch: the next
				// generation's end writes them all; it is not read.
				rec.cut, rec.abandon = true, true
				return
			}
		}
		if rec.st.watch || rec.extended {
			offered := rec.st.sink.offeredBytes()
			r.charge(offered - rec.charged)
			rec.charged = offered
		}
		whole := rec.whole()
		if whole && rec.q != nil && !rec.q.last && r.bridgeWindow(rec.q, rec.rd, &rec.st, func() bool { r.parse(rec); return rec.err == nil }) {
			rec.w, rec.q, rec.end = r.windows[r.cur], nil, rec.st.start.Add(r.cycle)
			continue
		}
		if rec.q != nil || rec.st.sink.isFull() || rec.err != nil || rec.rd.truncated {
			return
		}
		if !r.goOn(rec, whole, time.Now()) {
			return
		}
	}
}

// goOn reports whether the trace goes on at now, when nothing else ended
// it: a whole stretch past its end begins another cycle; a stretch past
// its end, or a watch trace with no watched request left, goes on one
// watchStep while watched requests live (or, for a watch trace, for its
// linger) and the budget allows, until the duty cycle's next stretch is
// due.
func (r *Recorder) goOn(rec *recording, whole bool, now time.Time) bool {
	if r.slow.live > 0 {
		rec.idleSince = time.Time{}
	} else if rec.idleSince.IsZero() {
		rec.idleSince = now
	}
	st := &rec.st
	if whole && !now.Before(rec.end) {
		// The watched requests are traced along, and the cycle has a
		// byte budget of its own.
		rec.w.traced += now.Sub(st.start)
		rec.rd.retarget(rec.w)
		st.sink.renew()
		st.start, rec.end = now, now.Add(r.cycle)
		return true
	}
	if now.Before(rec.end) && !(st.watch && r.slow.live == 0) {
		return true
	}
	if !r.dutyDue.IsZero() && !now.Before(r.dutyDue) {
		// Traced on for watched requests, the trace would keep the duty
		// cycle from recording: the next stretch takes over.
		rec.due = true
		return false
	}
	lingering := st.watch && now.Sub(rec.idleSince) < lingerFor(r.watchRate(st, now), r.slow.gap)
	if r.slow.live == 0 && !lingering || !r.finishing(&rec.spentAt) {
		return false
	}
	if !st.watch && !rec.extended {
		rec.extended, rec.charged = true, st.sink.offeredBytes()
		rec.rd.waitsUntil = rec.end.UnixNano()
		st.sink.endNaming()
	}
	rec.end = now.Add(watchStep)
	return true
}

// startNext starts the next stretch's trace as this one's ends, before
// this one's last generations are read, when a collection ended it with
// watched requests live, at 100 %, or when the duty cycle's next stretch
// was due (rec.due); otherwise, while the last of a
// stretch is read, it starts a watch trace for a request that turns long
// meanwhile. The next trace is r.handover.
func (r *Recorder) startNext(rec *recording) {
	q, st := rec.q, rec.st
	// At 100 % the next stretch follows at once, whatever ended this one
	// (its byte budget, the tracer's bridge not had).
	chain := !st.watch && st.rest == 0 && (q == nil || !q.last)
	if q != nil && !q.last && r.slow.live > 0 || chain || q == nil && rec.due {
		// What the requests do while this trace is read (tens of
		// milliseconds on a busy machine) is traced, and a wait open
		// across the collection is seen by both traces, one wait.
		next := r.startAside(r.startStretch)
		r.handover = &next
	}
	if q == nil && st.rest > 0 && r.handover == nil {
		// A request that turns long while the stretch is read, maybe
		// waiting since before the stretch's end, has its watch trace
		// started at once, not once the reading is done.
		rec.rd.poll = func() {
			r.drain()
			if r.handover == nil && r.slow.live > 0 && time.Now().After(r.sessionsFrom) && r.mayStartWatch() {
				if next := r.startAside(r.startWatch); next.sink != nil {
					r.handover = &next
				}
			}
		}
	}
}

// startAside runs start with buffers of its own for the trace it starts:
// r.bufs are the current sink's, still to be read.
func (r *Recorder) startAside(start func() stretch) stretch {
	bufs := r.bufs
	r.bufs = [2][]byte{}
	next := start()
	r.bufs = bufs
	return next
}

// endRecording takes back the stretch's buffers, sets the trace's rate
// from the bytes offered, counts the time the stretch covered into its
// window, and logs a read error once.
func (r *Recorder) endRecording(rec *recording, stopped time.Time, sinkCut bool, offered int) {
	st, rd := rec.st, rec.rd
	r.bufs = st.sink.buffers()
	elapsed := stopped.Sub(st.start)
	if elapsed > 0 && offered > 0 {
		// From all the runtime produced, read or not, so that a burst
		// shortens the next stretch.
		r.rate = float64(offered) / elapsed.Seconds()
	}
	read := st.sink.kept
	covered := rd.finish()
	r.reach = rd.wall(rd.last)
	// What the trace held past what was read is not read: no wait of
	// the stretch names a root later.
	r.tell(rec.w, max(r.reach, stopped.UnixNano()))
	r.settleUntraced(stopped)
	r.readTotal += read
	r.maxRead = max(r.maxRead, read)
	switch {
	case st.watch:
		// Not part of the duty cycle: no waits, no time.
	case rec.cut || sinkCut || rd.truncated || st.sink.full:
		// A whole stretch covers its wall-clock time from its trace's
		// start; a cut one only what was read.
		if rec.extended {
			covered = min(covered, st.length)
		}
		rec.w.traced += covered
		r.cfg.Stats.Truncated.Add(1)
	case rec.extended:
		rec.w.traced += st.length
	default:
		rec.w.traced += elapsed
	}
	for i, b := range r.bufs {
		if cap(b) > int(r.cfg.MaxTraceBytes) {
			// Growth past the budget happens only by append's
			// doubling; do not keep the slack for good.
			r.bufs[i] = nil
		}
	}
	if rec.err != nil && !r.errLogged {
		r.cfg.Logger.Warn("pprofotel: off-CPU trace read in part", "error", rec.err)
		r.errLogged = true
	}
}

// flush ends the window at now and returns it; the next window
// accumulates in the other buffer, so the returned profile stays valid
// until the next flush.
func (r *Recorder) flush(now time.Time) *pprofdecode.Profile {
	// The tracker's last reports may have come with the collection.
	r.drain()
	w := r.windows[r.cur]
	r.tell(w, r.reach)
	length := now.Sub(r.windowStart)
	scale := 1.0
	if w.partial && w.traced > 0 && length > w.traced {
		scale = float64(length) / float64(w.traced)
	}
	p := w.build(&r.built, r.windowStart, now, scale)
	r.settleUntraced(now)
	r.slowWin.reset()
	r.slow.build(r.slowWin, now.UnixNano())
	r.slowProfile = nil
	if len(r.slowWin.events) > 0 {
		r.slowProfile = r.slowWin.build(&r.slowBuilt, r.windowStart, now, 1)
	}
	if length >= minCycle {
		r.cycle = min(r.cfg.Cycle, length)
	}
	r.windowStart = now
	r.cur ^= 1
	r.windows[r.cur].reset()
	return p
}

// bridgeWindow ends the window at q's collection while st's trace goes
// on, at 100 %: what the trace holds up to now is read (parse), the
// waits still open count into the window up to the last event read and
// on from there into the next, and the reading goes on into the next
// window, whose cycle starts now. It reports false, having done nothing
// but maybe parse (false when the parse failed), when the trace cannot be
// read up to now: the stretch
// then ends as at a duty cycle below 100 %.
func (r *Recorder) bridgeWindow(q *request, rd *reading, st *stretch, parse func() (ok bool)) bool {
	if !r.bridge(st.sink) {
		return false
	}
	if !parse() || rd.truncated || rd.w.full() {
		return false
	}
	rd.split()
	rd.w.traced += time.Since(st.start)
	r.reach, r.bridged = rd.wall(rd.last), true
	q.reply <- r.flush(q.now)
	r.bridged = false
	rd.retarget(r.windows[r.cur])
	st.sink.renew()
	st.start = time.Now()
	return true
}

// bridgeWait bounds the wait for the generation a bridge ends.
const bridgeWait = time.Second

// bridge ends the trace's generation under way without ending the
// stretch's trace, and waits until sink holds it: every event up to now
// can then be read while the trace goes on. The runtime ends a
// generation whenever a subscriber comes or goes, so a flight recorder is
// started and stopped at once; false when the application's flight
// recorder has the slot, or the generation did not come in time (the
// stretch then ends as before).
func (r *Recorder) bridge(sink *traceSink) bool {
	before := sink.generations()
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MaxBytes: 1 << 20})
	if err := fr.Start(); err != nil {
		return false
	}
	fr.Stop()
	timer := time.NewTimer(bridgeWait)
	defer timer.Stop()
	for sink.generations() <= before {
		select {
		case <-sink.ready:
		case <-timer.C:
			return false
		}
	}
	return true
}
