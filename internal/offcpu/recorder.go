package offcpu

import (
	"bytes"
	"fmt"
	"log/slog"
	"runtime/trace"
	"sync/atomic"
	"time"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/pprofdecode"
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
	// minCycle keeps very short windows from restarting the trace in a
	// tight loop.
	minCycle = 100 * time.Millisecond
	// minStretch is the shortest traced stretch, whatever the event rate.
	minStretch = 10 * time.Millisecond
	// firstStretch is the longest first stretch, traced before the
	// event rate is known.
	firstStretch = time.Second
	// A stretch is read in chunks while it runs, every poll: each read
	// ends the flight recorder's generation under way, which is the part
	// of its memory that MaxBytes does not bound. The poll is shortened
	// so that a chunk is about an eighth of MaxTraceBytes at the rate the
	// last one showed, within these limits.
	minPoll, maxPoll = 10 * time.Millisecond, 250 * time.Millisecond
	// chunkShare is the share of MaxTraceBytes a poll aims at, as 1/n; a
	// chunk of twice that ends the stretch.
	chunkShare = 8
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
	buf         bytes.Buffer
	skipLogged  bool
	errLogged   bool
	// rate is the trace's bytes per second in the last chunk read, 0
	// before the first.
	rate float64
	// poll is the time between two reads of a stretch.
	poll time.Duration
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
		poll:        maxPoll,
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
	fr   *trace.FlightRecorder // nil when the tracer was busy
}

func (r *Recorder) startStretch() stretch {
	st := stretch{start: time.Now()}
	st.length, st.rest = stretchLength(r.cycle, dutyCycle(), r.cfg.MaxTraceBytes, r.rate)
	if r.windows[r.cur].full() {
		// The window holds all the waits it keeps: what this stretch
		// would read could not count, nor could its time. It rests.
		r.cfg.Stats.Truncated.Add(1)
		return st
	}
	st.fr = r.startTrace()
	return st
}

// stretchLength returns how long to trace and then rest in a cycle, at
// duty percent, for a trace of rate bytes a second (0: not known yet): a
// stretch is kept short enough for maxBytes at the rate the last chunk
// showed, and the first, which measures the rate, to a second. The rest
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

// pollInterval returns the time between two reads of a stretch for a
// trace of rate bytes a second: a chunk of about maxBytes/chunkShare.
func pollInterval(maxBytes uint64, rate float64) time.Duration {
	if rate <= 0 {
		return maxPoll
	}
	d := time.Duration(float64(maxBytes/chunkShare) / rate * float64(time.Second))
	return min(max(d, minPoll), maxPoll)
}

// loop runs duty cycles until the last collection: each cycle traces its
// first part and rests for the remainder. A collection ends the cycle
// under way, tracing included, and starts the next one.
func (r *Recorder) loop(st stretch) {
	defer close(r.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	wait := func(d time.Duration) *request {
		timer.Reset(d)
		select {
		case <-timer.C:
			return nil
		case q := <-r.requests:
			timer.Stop()
			return &q
		}
	}
	for {
		var q *request
		if st.fr != nil {
			q = r.record(st, wait)
		} else {
			q = wait(st.length)
		}
		if q == nil && st.rest > 0 {
			q = wait(time.Until(st.start.Add(st.length + st.rest)))
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

// startTrace starts the flight recorder for a stretch, or returns nil when
// the execution tracer is someone else's.
func (r *Recorder) startTrace() *trace.FlightRecorder {
	busy := func(err error) *trace.FlightRecorder {
		r.cfg.Stats.Skipped.Add(1)
		if !r.skipLogged {
			r.cfg.Logger.Warn("pprofotel: off-CPU profile skipped: the execution tracer is in use elsewhere; will retry every cycle", "error", err)
			r.skipLogged = true
		}
		return nil
	}
	if trace.IsEnabled() {
		return busy(fmt.Errorf("runtime/trace is enabled"))
	}
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{
		// The ring need hold only what the runtime finished since the
		// last read, a chunk: the age covers a poll and a slow parse,
		// and the size, which wins, bounds the ring to about a chunk
		// (plus the generation that crosses it). What it drops unread is
		// a gap, counted.
		MinAge:   2 * time.Second,
		MaxBytes: r.cfg.MaxTraceBytes / chunkShare,
	})
	if err := fr.Start(); err != nil {
		return busy(err)
	}
	if r.skipLogged {
		r.cfg.Logger.Info("pprofotel: off-CPU profiling resumed")
		r.skipLogged = false
	}
	return fr
}

// record traces the stretch st into the current window, reading what the
// flight recorder holds every poll, until the stretch's end, a
// collection, or the stretch's byte budget; it returns the collection
// request that ended it, if one did.
func (r *Recorder) record(st stretch, wait func(time.Duration) *request) *request {
	w := r.windows[r.cur]
	rd := w.newReading(st.start)
	end := st.start.Add(st.length)
	var (
		q              *request
		gen            uint64 // the last generation read
		budget         = int(r.cfg.MaxTraceBytes)
		maxChunk       = 2 * budget / chunkShare
		cut            bool
		err            error
		lastRead, read = st.start, 0
	)
	for {
		q = wait(min(r.poll, time.Until(end)))
		stop := q != nil || !time.Now().Before(end)
		r.buf.Reset()
		c := chunkWriter{buf: &r.buf, after: gen, limit: traceHeaderLen + min(budget, maxChunk)}
		if _, werr := st.fr.WriteTo(&c); werr != nil {
			err, cut, stop = werr, true, true
		}
		now := time.Now()
		if n := r.buf.Len() - traceHeaderLen; n > 0 {
			budget -= n
			read += n
		}
		if since := now.Sub(lastRead); since > 0 && c.offered > 0 {
			// From all the runtime produced, read or not, so that a
			// burst shortens the next poll.
			r.rate = float64(c.offered) / since.Seconds()
			r.poll = pollInterval(r.cfg.MaxTraceBytes, r.rate)
		}
		lastRead = now
		if c.kept() {
			if gen != 0 && c.first != gen+1 {
				// The ring dropped generations before they were read: the
				// parse fell behind or one outgrew MaxTraceBytes.
				rd.gap()
				cut = true
			}
			gen = c.last
			if rerr := rd.read(&r.buf); rerr != nil {
				err, cut, stop = rerr, true, true
			}
		}
		if c.full || rd.truncated {
			// The stretch's budget is spent, or the window's waits: the
			// stretch ends here, as though it were shorter.
			cut, stop = true, true
		}
		if stop {
			break
		}
	}
	st.fr.Stop()
	elapsed := lastRead.Sub(st.start) // to the last read, not its parse
	covered := rd.finish()
	r.readTotal += read
	r.maxRead = max(r.maxRead, read)
	// A whole stretch covers its wall-clock time, start-up of the tracer
	// included (a wait cannot begin unseen in it); a cut one only what was
	// read.
	if cut {
		w.traced += covered
		r.cfg.Stats.Truncated.Add(1)
	} else {
		w.traced += elapsed
	}
	if cap := r.buf.Cap(); cap > int(r.cfg.MaxTraceBytes)+traceHeaderLen {
		// Growth past the budget happens only by bytes.Buffer's
		// doubling; do not keep the slack for good.
		r.buf = bytes.Buffer{}
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
