package deliver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/export"
	"github.com/pprofotel/profiler/internal/export/report"
)

// Defaults of Config.
const (
	// DefaultMaxWindows lets a receiver be away for ten windows (ten
	// minutes at the default period) before the first window is dropped.
	DefaultMaxWindows = 10
	// DefaultMaxBytes bounds the queue to 16 MiB of encoded requests. The
	// decoded messages the queue holds take a few times that in memory.
	DefaultMaxBytes = 16 << 20
	// DefaultLogInterval is the shortest time between two log lines about
	// drops, and between two about failed exports.
	DefaultLogInterval = time.Minute
)

// Window is the OTLP profiles request of one collection window.
type Window struct {
	// Start and End delimit the window; they name it in logs and errors.
	Start, End time.Time
	// Request is owned by the Queue once enqueued.
	Request *collectorpb.ExportProfilesServiceRequest
}

// Outcomes counts what a Queue did. The fields are updated atomically and may
// be read at any time.
type Outcomes struct {
	// Exported counts windows whose every part the exporter accepted.
	Exported atomic.Int64
	// Failed counts windows the exporter did not accept (permanent
	// failures, retries exhausted, a window that cannot be split small
	// enough, Shutdown's deadline); some of their parts may have arrived.
	Failed atomic.Int64
	// Dropped counts windows removed unsent to keep the queue within its
	// bounds, and windows enqueued after Shutdown.
	Dropped atomic.Int64
	// Retries counts export attempts repeated after a retryable failure,
	// as the exporter reports them (package report).
	Retries atomic.Int64
	// BytesSent sums the protobuf sizes, before any compression, of what
	// the receiver accepted: as the exporter reports it, or, from an
	// exporter that reports none, the size of each request it accepted.
	BytesSent atomic.Int64
	// FilesRemoved counts files a file exporter reports it removed to
	// keep its directory within its retention bounds.
	FilesRemoved atomic.Int64
}

// Config configures a Queue.
type Config struct {
	// Exporter sends the requests. The Queue owns it: it serialises
	// calls to Export and shuts it down in Shutdown. Each Export's
	// context carries a report.Report, which the Queue adds to Outcomes
	// once the call returns (unless Shutdown gave the call up).
	Exporter export.Exporter
	// MaxWindows bounds the number of queued windows; <= 0 takes
	// DefaultMaxWindows. The window being exported is not counted.
	MaxWindows int
	// MaxBytes bounds the summed protobuf size of the queued requests;
	// <= 0 takes DefaultMaxBytes. The newest window is kept even when it
	// alone is larger, so that a small budget delays nothing.
	MaxBytes int64
	// Logger receives drops (error, rate-limited), failed exports (error,
	// rate-limited) and exports (debug). Nil discards.
	Logger *slog.Logger
	// LogInterval rate-limits the error reports; <= 0 takes
	// DefaultLogInterval.
	LogInterval time.Duration
	// Outcomes receives the counts; may be nil.
	Outcomes *Outcomes
	// Now reads the clock for the rate limits; nil is time.Now.
	Now func() time.Time
}

// Queue queues windows and exports them from its own goroutine. Its
// methods are safe for concurrent use.
type Queue struct {
	exp        export.Exporter
	maxWindows int
	maxBytes   int64
	logger     *slog.Logger
	stats      *Outcomes
	// gate guards every effect of the exporting goroutine on stats and
	// logger; see Gate.
	gate *Gate

	// wake tells the exporting goroutine that the queue or closing changed.
	wake chan struct{}
	done chan struct{}
	// running is the context of exports; Shutdown cancels it when its own
	// context is done.
	running     context.Context
	stopRunning context.CancelFunc

	mu       sync.Mutex
	queue    []queued // oldest first
	bytes    int64
	inFlight *Window // the window being exported, nil between exports
	closing  bool
	stopCtx  context.Context // Shutdown's, set with closing
	dropLog  rateLimit
	failLog  rateLimit
	unsent   []Undelivered // windows lost after Shutdown began
	shutOnce sync.Once
	shutErr  error
}

type queued struct {
	Window
	size int64
}

// New starts a Queue.
func New(cfg Config) *Queue {
	s := &Queue{
		exp:        cfg.Exporter,
		maxWindows: cfg.MaxWindows,
		maxBytes:   cfg.MaxBytes,
		logger:     cfg.Logger,
		stats:      cfg.Outcomes,
		gate:       new(Gate),
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
	}
	if s.maxWindows <= 0 {
		s.maxWindows = DefaultMaxWindows
	}
	if s.maxBytes <= 0 {
		s.maxBytes = DefaultMaxBytes
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.stats == nil {
		s.stats = new(Outcomes)
	}
	interval := cfg.LogInterval
	if interval <= 0 {
		interval = DefaultLogInterval
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	s.dropLog = rateLimit{every: interval, now: now}
	s.failLog = rateLimit{every: interval, now: now}
	s.running, s.stopRunning = context.WithCancel(context.Background())
	go s.run()
	return s
}

// Enqueue queues w for export and returns at once. When the queue is over
// its bounds, the oldest windows are dropped. After Shutdown, w is dropped.
func (s *Queue) Enqueue(w Window) {
	size := int64(proto.Size(w.Request))
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		s.drop(1, "the sender is shut down")
		return
	}
	s.queue = append(s.queue, queued{Window: w, size: size})
	s.bytes += size
	dropped := 0
	for len(s.queue) > 1 && (len(s.queue) > s.maxWindows || s.bytes > s.maxBytes) {
		s.bytes -= s.queue[0].size
		s.queue[0] = queued{} // let the request be collected
		s.queue = s.queue[1:]
		dropped++
	}
	s.mu.Unlock()
	if dropped > 0 {
		s.drop(dropped, "the queue is full")
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Len returns the number of queued windows and their summed protobuf size.
// The window being exported is not counted.
func (s *Queue) Len() (windows int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue), s.bytes
}

func (s *Queue) drop(n int, why string) {
	total := s.stats.Dropped.Add(int64(n))
	s.mu.Lock()
	since, ok := s.dropLog.note(n)
	s.mu.Unlock()
	if ok {
		s.logger.Error("pprofotel: profile windows dropped unsent",
			"reason", why, "dropped", since, "dropped_total", total,
			"max_windows", s.maxWindows, "max_bytes", s.maxBytes)
	}
}

// run exports the queue, oldest first, until Shutdown has nothing more
// for it or has given up on it.
func (s *Queue) run() {
	defer close(s.done)
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			closing := s.closing
			s.mu.Unlock()
			if closing {
				return
			}
			<-s.wake
			continue
		}
		w := s.queue[0]
		s.queue[0] = queued{}
		s.queue = s.queue[1:]
		s.bytes -= w.size
		s.inFlight = &w.Window
		ctx := s.running
		if s.closing {
			// Exports started by Shutdown see its deadline, so that a
			// retry policy does not plan waits past it.
			ctx = s.stopCtx
		}
		s.mu.Unlock()
		if !s.send(ctx, w) {
			return
		}
	}
}

// send exports w and accounts for the result, with what the exporter
// reported of the call. It reports false when Shutdown has given up on the
// export meanwhile (the gate is closed): Shutdown has accounted for w, and
// the goroutine must end without touching anything more.
func (s *Queue) send(ctx context.Context, q queued) (open bool) {
	w := q.Window
	// A panic here, in an exporter, is the profiler's bug or the
	// application's exporter's; on this goroutine it would end the
	// application. Lose the window instead, and say so.
	defer func() {
		if r := recover(); r != nil {
			open = s.fail(w, fmt.Errorf("internal error: %v", r))
		}
	}()
	if err := s.running.Err(); err != nil {
		return s.fail(w, fmt.Errorf("not attempted: %w", err))
	}
	var rep report.Report
	err := s.exp.Export(report.NewContext(ctx, &rep), w.Request)
	sent := rep.BytesSent()
	if err == nil && sent == 0 {
		sent = q.size // measured once, at Enqueue
	}
	if !s.gate.Run(func() {
		s.stats.Retries.Add(rep.Retries())
		s.stats.BytesSent.Add(sent)
		s.stats.FilesRemoved.Add(rep.FilesRemoved())
	}) {
		return false
	}
	if err != nil {
		return s.fail(w, err)
	}
	return s.gate.Run(func() {
		s.settle()
		s.stats.Exported.Add(1)
		s.logger.Debug("pprofotel: window exported", "start", w.Start, "end", w.End)
	})
}

// fail accounts for the window in flight, w, as not delivered, unless
// Shutdown has given up on it; it reports whether it did.
func (s *Queue) fail(w Window, err error) bool {
	return s.gate.Run(func() {
		s.settle()
		total := s.stats.Failed.Add(1)
		s.mu.Lock()
		if s.closing {
			s.unsent = append(s.unsent, Undelivered{Start: w.Start, End: w.End, Err: err})
		}
		since, ok := s.failLog.note(1)
		s.mu.Unlock()
		if ok {
			s.logger.Error("pprofotel: profile window not delivered",
				"start", w.Start, "end", w.End, "error", err,
				"failed", since, "failed_total", total)
		}
	})
}

// settle marks the window in flight as accounted for.
func (s *Queue) settle() {
	s.mu.Lock()
	s.inFlight = nil
	s.mu.Unlock()
}

// Shutdown stops accepting windows, exports the queued ones within ctx's
// deadline, then shuts the exporter down. When ctx is done first, the
// export in flight is cancelled and the rest of the queue is given up.
//
// Shutdown returns by ctx's deadline whatever the exporter does. An export
// that does not return when cancelled (a transport of the application's
// that ignores its context) is given up: its window is reported
// undelivered, and the goroutine blocked in it is left to the transport,
// with the gate closed, so that it counts, logs and calls back nothing once
// the call returns, and then ends.
//
// The error, an *UndeliveredError when windows were lost, lists every
// window that was queued or in flight and did not arrive. Later calls
// return the same result.
func (s *Queue) Shutdown(ctx context.Context) error {
	s.shutOnce.Do(func() {
		s.mu.Lock()
		s.closing = true
		s.stopCtx = ctx
		s.mu.Unlock()
		select {
		case s.wake <- struct{}{}:
		default:
		}
		stop := context.AfterFunc(ctx, s.stopRunning)
		ended := true
		select {
		case <-s.done:
		case <-ctx.Done():
			// An export that honours its context has been cancelled
			// and may have ended at the same moment.
			select {
			case <-s.done:
			default:
				ended = false
			}
		}
		stop()
		s.stopRunning()
		s.gate.Close()

		s.mu.Lock()
		inFlight := s.inFlight
		if !ended {
			s.abandon(ctx.Err())
		}
		unsent := s.unsent
		dropsSince := s.dropLog.flush()
		failsSince := s.failLog.flush()
		s.mu.Unlock()
		if !ended && inFlight != nil {
			s.logger.Warn("pprofotel: export given up at the shutdown deadline; if the transport ignores the cancellation, the call goes on in it, and its outcome is not counted",
				"start", inFlight.Start, "end", inFlight.End, "error", ctx.Err())
		}
		if dropsSince > 0 || failsSince > 0 {
			s.logger.Error("pprofotel: profile windows lost since the last report",
				"dropped", dropsSince, "failed", failsSince,
				"dropped_total", s.stats.Dropped.Load(), "failed_total", s.stats.Failed.Load())
		}

		var errs []error
		if len(unsent) > 0 {
			ue := &UndeliveredError{Windows: unsent}
			if ctx.Err() != nil {
				ue.Cause = ctx.Err()
			}
			errs = append(errs, ue)
		}
		if err := s.exp.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("delivery: shutting down the exporter: %w", err))
		}
		s.shutErr = errors.Join(errs...)
	})
	return s.shutErr
}

// abandon accounts, on behalf of the goroutine Shutdown gives up on, for
// the window it was exporting and for those still queued: each is
// undelivered because of cause, counted as failed and carried by the final
// report. The caller holds s.mu and has closed the gate.
func (s *Queue) abandon(cause error) {
	var lost []Undelivered
	if w := s.inFlight; w != nil {
		lost = append(lost, Undelivered{Start: w.Start, End: w.End,
			Err: fmt.Errorf("export in flight given up: %w", cause)})
		s.inFlight = nil
	}
	for i, q := range s.queue {
		lost = append(lost, Undelivered{Start: q.Start, End: q.End, Err: fmt.Errorf("not attempted: %w", cause)})
		s.queue[i] = queued{}
	}
	s.queue, s.bytes = nil, 0
	s.unsent = append(s.unsent, lost...)
	s.stats.Failed.Add(int64(len(lost)))
	s.failLog.postpone(len(lost))
}

// Undelivered is a window that Shutdown could not deliver.
type Undelivered struct {
	Start, End time.Time
	// Err says why.
	Err error
}

// UndeliveredError lists the windows lost during Shutdown.
type UndeliveredError struct {
	Windows []Undelivered
	// Cause is the error of Shutdown's context when it ended the
	// exports, nil when the windows failed on their own.
	Cause error
}

// Error names every window by its time range, with its reason.
func (e *UndeliveredError) Error() string {
	var b strings.Builder
	n := len(e.Windows)
	fmt.Fprintf(&b, "%d profile window", n)
	if n != 1 {
		b.WriteString("s")
	}
	b.WriteString(" not delivered")
	if e.Cause != nil {
		fmt.Fprintf(&b, " (%v)", e.Cause)
	}
	for i, w := range e.Windows {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "[%s, %s): %v", w.Start.Format(time.RFC3339), w.End.Format(time.RFC3339), w.Err)
	}
	return b.String()
}

// Unwrap returns the context's error and each window's, so that errors.Is
// finds context.DeadlineExceeded or an *export.ExportError.
func (e *UndeliveredError) Unwrap() []error {
	errs := make([]error, 0, len(e.Windows)+1)
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	for _, w := range e.Windows {
		errs = append(errs, w.Err)
	}
	return errs
}

// rateLimit lets one report through per interval and counts the events in
// between, so that the next report carries them. It is guarded by the
// Queue's mutex.
type rateLimit struct {
	every   time.Duration
	now     func() time.Time
	last    time.Time
	pending int
}

// note adds n events and reports whether to log now, with the events since
// the last report.
func (r *rateLimit) note(n int) (int, bool) {
	r.pending += n
	now := r.now()
	if !r.last.IsZero() && now.Sub(r.last) < r.every {
		return 0, false
	}
	r.last = now
	since := r.pending
	r.pending = 0
	return since, true
}

// postpone adds n events to the next report without logging now.
func (r *rateLimit) postpone(n int) { r.pending += n }

// flush returns the events not reported yet.
func (r *rateLimit) flush() int {
	n := r.pending
	r.pending = 0
	return n
}
