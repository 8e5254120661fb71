package offcpu

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"runtime/trace"
	"sync/atomic"
	"time"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
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
	// DefaultMaxGoroutines is the number of goroutines above which no
	// stretch is traced. At every generation's end the runtime writes
	// into the trace the state of every goroutine that did not run in it,
	// and the parser keeps state for each: the memory a stretch takes
	// grows with the goroutines, whatever MaxTraceBytes, at about
	// 1 KB a goroutine (benchmark/README.md, "Off-CPU profile").
	DefaultMaxGoroutines = 50_000
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
	// MaxGoroutines is DefaultMaxGoroutines when 0; negative sets no
	// limit.
	MaxGoroutines int
	Logger        *slog.Logger
	Stats         *Stats
}

// Recorder traces a duty cycle of every window and returns the window's
// waits when asked. Its methods must be called from one goroutine.
type Recorder struct {
	cfg      Config
	requests chan request
	done     chan struct{}

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
	if cfg.MaxGoroutines == 0 {
		cfg.MaxGoroutines = DefaultMaxGoroutines
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Stats == nil {
		cfg.Stats = new(Stats)
	}
	r := &Recorder{
		cfg:         cfg,
		requests:    make(chan request),
		done:        make(chan struct{}),
		windows:     [2]*window{newWindow(cfg.MaxWaits), newWindow(cfg.MaxWaits)},
		windowStart: now,
		cycle:       cfg.Cycle,
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

// stretch is a traced stretch under way.
type stretch struct {
	start  time.Time
	length time.Duration
	// rest is the untraced remainder of the cycle that follows: the
	// length times (100 - duty) / duty, so that a stretch shortened to the
	// memory bound keeps the duty cycle.
	rest time.Duration
	sink *traceSink // nil when not traced
}

func (r *Recorder) startStretch() stretch {
	st := stretch{start: time.Now()}
	st.length, st.rest = stretchLength(r.cycle, dutyCycle(), r.cfg.MaxTraceBytes/4*softShare, r.rate)
	if r.windows[r.cur].full() {
		// The window holds all the waits it keeps: what this stretch
		// would read could not count, nor could its time. It rests.
		r.cfg.Stats.Truncated.Add(1)
		return st
	}
	if n := runtime.NumGoroutine(); r.tooMany(n) {
		r.skip("goroutines", fmt.Sprintf("pprofotel: off-CPU profile skipped: %d goroutines, more than the %d whose trace it reads; will retry every cycle", n, r.cfg.MaxGoroutines))
		return st
	}
	st.sink = r.startTrace()
	return st
}

// tooMany reports whether n goroutines are too many to trace.
func (r *Recorder) tooMany(n int) bool {
	return r.cfg.MaxGoroutines > 0 && n > r.cfg.MaxGoroutines
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
	} else {
		length = min(length, firstStretch)
	}
	length = max(length, minStretch)
	return length, length * (100 - d) / d
}

// loop runs duty cycles until the last collection: each cycle traces its
// first part and rests for the remainder. A collection ends the cycle
// under way, tracing included, and starts the next one.
func (r *Recorder) loop(st stretch) {
	defer close(r.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// wait waits d, or until a request or a value on ready (nil: none)
	// comes, and returns the request, or whether ready woke it.
	wait := func(d time.Duration, ready <-chan struct{}) (*request, bool) {
		timer.Reset(d)
		select {
		case <-timer.C:
			return nil, false
		case <-ready:
			timer.Stop()
			return nil, true
		case q := <-r.requests:
			timer.Stop()
			return &q, false
		}
	}
	for {
		var q *request
		if st.sink != nil {
			q = r.record(st, wait)
		} else {
			q, _ = wait(st.length, nil)
		}
		if q == nil && st.rest > 0 {
			q, _ = wait(time.Until(st.start.Add(st.length+st.rest)), nil)
		}
		if q != nil {
			q.reply <- r.flush(q.now)
			if q.last {
				return
			}
		}
		st = r.startStretch()
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
func (r *Recorder) startTrace() *traceSink {
	sink := newTraceSink(int(r.cfg.MaxTraceBytes/4*softShare), int(r.cfg.MaxTraceBytes), r.bufs)
	if err := trace.Start(sink); err != nil {
		r.skip("tracer", "pprofotel: off-CPU profile skipped: the execution tracer is in use elsewhere (runtime/trace.Start); will retry every cycle", "error", err)
		return nil
	}
	if r.skipLogged != "" {
		r.cfg.Logger.Info("pprofotel: off-CPU profiling resumed")
		r.skipLogged = ""
	}
	return sink
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
// the collection request that ended it, if one did.
func (r *Recorder) record(st stretch, wait func(time.Duration, <-chan struct{}) (*request, bool)) *request {
	w := r.windows[r.cur]
	rd := w.newReading(st.start)
	end := st.start.Add(st.length)
	var (
		q   *request
		cut bool
		err error
		// abandon is set when what the sink holds is not to be read.
		abandon bool
	)
	parse := func() {
		header, gens := st.sink.take()
		if gens == nil || err != nil || rd.truncated {
			return
		}
		if rerr := rd.read(io.MultiReader(bytes.NewReader(header), bytes.NewReader(gens))); rerr != nil {
			err, cut = rerr, true
		}
	}
	for {
		var ready bool
		q, ready = wait(time.Until(end), st.sink.ready)
		if ready {
			parse()
			if r.tooMany(runtime.NumGoroutine()) {
				// Goroutines started during the stretch: the next
				// generation's end writes them all; it is not read.
				cut, abandon = true, true
				break
			}
		}
		if q != nil || !time.Now().Before(end) || st.sink.isFull() || err != nil || rd.truncated {
			break
		}
	}
	// Stop returns once the runtime has handed the sink the generation
	// under way (it waits for the trace's reader to finish it, whether or
	// not the application's flight recorder goes on); should a part come
	// later, it is left out and the stretch counts as cut.
	stopTrace()
	stopped := time.Now()
	sinkCut, offered := st.sink.close()
	if !abandon {
		parse()
	}
	r.bufs = st.sink.buffers()
	elapsed := stopped.Sub(st.start)
	if elapsed > 0 && offered > 0 {
		// From all the runtime produced, read or not, so that a burst
		// shortens the next stretch.
		r.rate = float64(offered) / elapsed.Seconds()
	}
	read := st.sink.kept
	covered := rd.finish()
	r.readTotal += read
	r.maxRead = max(r.maxRead, read)
	// A whole stretch covers its wall-clock time, start-up of the tracer
	// included (a wait cannot begin unseen in it); a cut one only what was
	// read.
	if cut || sinkCut || rd.truncated || st.sink.full {
		w.traced += covered
		r.cfg.Stats.Truncated.Add(1)
	} else {
		w.traced += elapsed
	}
	for i, b := range r.bufs {
		if cap(b) > int(r.cfg.MaxTraceBytes) {
			// Growth past the budget happens only by append's
			// doubling; do not keep the slack for good.
			r.bufs[i] = nil
		}
	}
	if err != nil && !r.errLogged {
		r.cfg.Logger.Warn("pprofotel: off-CPU trace read in part", "error", err)
		r.errLogged = true
	}
	return q
}

// flush ends the window at now and returns it; the next window
// accumulates in the other buffer, so the returned profile stays valid
// until the next flush.
func (r *Recorder) flush(now time.Time) *pprofdecode.Profile {
	w := r.windows[r.cur]
	length := now.Sub(r.windowStart)
	scale := 1.0
	if w.traced > 0 && length > w.traced {
		scale = float64(length) / float64(w.traced)
	}
	p := w.build(&r.built, r.windowStart, now, scale)
	if length >= minCycle {
		r.cycle = min(r.cfg.Cycle, length)
	}
	r.windowStart = now
	r.cur ^= 1
	r.windows[r.cur].reset()
	return p
}
