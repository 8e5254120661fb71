package deliver

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/internal/export/report"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"

	"github.com/pprofotel/profiler/internal/testutil/polltest"
)

var epoch = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// window returns window i: [epoch+i min, epoch+(i+1) min).
type (
	profilesConfig = Config
	profilesWindow = Window
)

func newProfilesSender(cfg profilesConfig) *Queue { return New(cfg) }

func window(i int) profilesWindow {
	start := epoch.Add(time.Duration(i) * time.Minute)
	end := start.Add(time.Minute)
	b := otlp.NewBuilder(nil, &commonpb.InstrumentationScope{Name: "test"})
	return profilesWindow{Start: start, End: end, Request: b.Build(start, end, otlptest.FixtureInputs())}
}

// windowIndex tells which window a request (or a part of one) belongs to.
func windowIndex(req *collectorpb.ExportProfilesServiceRequest) int {
	ns := req.ResourceProfiles[0].ScopeProfiles[0].Profiles[0].TimeUnixNano
	return int(time.Unix(0, int64(ns)).Sub(epoch) / time.Minute)
}

// fakeExporter records what it receives. While gate is open (nil) it
// accepts at once; otherwise each Export waits for gate to close or for
// its context.
type fakeExporter struct {
	mu       sync.Mutex
	gate     chan struct{}
	fail     error
	got      []*collectorpb.ExportProfilesServiceRequest
	started  chan struct{}
	shutdown atomic.Int32
}

func newFakeExporter(blocked bool) *fakeExporter {
	e := &fakeExporter{started: make(chan struct{}, 1000)}
	if blocked {
		e.gate = make(chan struct{})
	}
	return e
}

func (e *fakeExporter) Export(ctx context.Context, req *collectorpb.ExportProfilesServiceRequest) error {
	e.started <- struct{}{}
	e.mu.Lock()
	gate, fail := e.gate, e.fail
	e.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if fail != nil {
		return fail
	}
	e.mu.Lock()
	e.got = append(e.got, req)
	e.mu.Unlock()
	return nil
}

func (e *fakeExporter) Shutdown(context.Context) error {
	e.shutdown.Add(1)
	return nil
}

func (e *fakeExporter) release() { close(e.gate) }

func (e *fakeExporter) windows() []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []int
	for _, r := range e.got {
		out = append(out, windowIndex(r))
	}
	return out
}

// waitStarted waits until the exporter has been called n more times.
func (e *fakeExporter) waitStarted(t *testing.T, n int) {
	t.Helper()
	guard := time.After(20 * time.Second) // a guard against a hang
	for range n {
		select {
		case <-e.started:
		case <-guard:
			t.Fatalf("Export was not called %d times", n)
		}
	}
}

// logRecorder keeps the log records it handles.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.records = append(l.records, r.Clone())
	l.mu.Unlock()
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// find returns the int64 attribute key of every record whose message
// contains msg.
func (l *logRecorder) find(msg, key string) []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int64
	for _, r := range l.records {
		if !strings.Contains(r.Message, msg) {
			continue
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == key {
				out = append(out, a.Value.Int64())
			}
			return true
		})
	}
	return out
}

type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// checkNoGoroutine fails t if a Queue's goroutine is still running,
// allowing goroutines that are ending up to a minute to go (a guard, not
// a timing assertion: a loaded machine may not run them for seconds).
func checkNoGoroutine(t *testing.T) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for range 6000 {
		n := runtime.Stack(buf, true)
		if !strings.Contains(string(buf[:n]), "delivery.(*Queue[...]).run") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("a Queue goroutine is still running:\n%s", buf[:runtime.Stack(buf, true)])
}

// waitFor polls cond until it holds.
var waitFor = polltest.Until

func TestDropOldestFirst(t *testing.T) {
	exp := newFakeExporter(true)
	logs := &logRecorder{}
	clock := &fakeClock{}
	stats := &Outcomes{}
	s := newProfilesSender(profilesConfig{Exporter: exp, MaxWindows: 3, Logger: slog.New(logs), Outcomes: stats, Now: clock.now})
	defer checkNoGoroutine(t)

	s.Enqueue(window(0))
	exp.waitStarted(t, 1) // window 0 is in flight, the queue is empty
	for i := 1; i <= 5; i++ {
		s.Enqueue(window(i))
	}
	if n, _ := s.Len(); n != 3 {
		t.Errorf("Len = %d windows, want 3", n)
	}
	if got := stats.Dropped.Load(); got != 2 {
		t.Errorf("Dropped = %d, want 2", got)
	}
	// Two drops within one log interval: one line, for the first.
	if got := logs.find("dropped", "dropped"); len(got) != 1 || got[0] != 1 {
		t.Errorf("drop log lines carry %v, want [1]", got)
	}
	s.Enqueue(window(6)) // drops window 3, not logged yet
	clock.advance(DefaultLogInterval)
	s.Enqueue(window(7)) // drops window 4: the line counts windows 2, 3 and 4
	if got := logs.find("dropped", "dropped"); len(got) != 2 || got[1] != 3 {
		t.Errorf("drop log lines carry %v, want [1 3]", got)
	}

	exp.release()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if got, want := exp.windows(), []int{0, 5, 6, 7}; !slices.Equal(got, want) {
		t.Errorf("exported windows %v, want %v", got, want)
	}
	if got := stats.Dropped.Load(); got != 4 {
		t.Errorf("Dropped = %d, want 4", got)
	}
	if got := stats.Exported.Load(); got != 4 {
		t.Errorf("Exported = %d, want 4", got)
	}
	if exp.shutdown.Load() != 1 {
		t.Errorf("exporter shut down %d times, want 1", exp.shutdown.Load())
	}
}

func TestByteBudget(t *testing.T) {
	size := int64(proto.Size(window(0).Request))
	tests := []struct {
		name       string
		maxBytes   int64
		enqueued   int
		wantQueued int
	}{
		{"two and a half windows", size*5/2 + 1, 10, 2},
		{"exactly three windows", 3 * size, 10, 3},
		{"newest kept when alone too large", size / 2, 4, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := newFakeExporter(true)
			stats := &Outcomes{}
			s := newProfilesSender(profilesConfig{Exporter: exp, MaxWindows: 100, MaxBytes: tt.maxBytes, Outcomes: stats})
			defer checkNoGoroutine(t)
			s.Enqueue(window(0))
			exp.waitStarted(t, 1)
			maxSeen := int64(0)
			for i := 1; i <= tt.enqueued; i++ {
				s.Enqueue(window(i))
				_, b := s.Len()
				maxSeen = max(maxSeen, b)
			}
			n, b := s.Len()
			if n != tt.wantQueued || b != int64(tt.wantQueued)*size {
				t.Errorf("Len = %d windows, %d bytes; want %d, %d", n, b, tt.wantQueued, int64(tt.wantQueued)*size)
			}
			if tt.maxBytes >= size && maxSeen > tt.maxBytes {
				t.Errorf("the queue held %d bytes, budget %d", maxSeen, tt.maxBytes)
			}
			if got, want := stats.Dropped.Load(), int64(tt.enqueued-tt.wantQueued); got != want {
				t.Errorf("Dropped = %d, want %d", got, want)
			}
			exp.release()
			if err := s.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			want := []int{0}
			for i := tt.enqueued - tt.wantQueued + 1; i <= tt.enqueued; i++ {
				want = append(want, i)
			}
			if got := exp.windows(); !slices.Equal(got, want) {
				t.Errorf("exported %v, want the newest: %v", got, want)
			}
		})
	}
}

func TestEnqueueNeverBlocks(t *testing.T) {
	exp := newFakeExporter(true) // hangs until its context ends
	stats := &Outcomes{}
	s := newProfilesSender(profilesConfig{Exporter: exp, MaxWindows: 4, Outcomes: stats})
	defer checkNoGoroutine(t)
	w := window(0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			s.Enqueue(w)
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second): // a guard against a hang
		t.Fatal("Enqueue blocked while the exporter hangs")
	}
	exp.waitStarted(t, 1)
	if got := stats.Dropped.Load(); got != 1000-4-1 {
		t.Errorf("Dropped = %d, want %d", got, 1000-4-1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Shutdown(ctx)
	var ue *UndeliveredError
	if !errors.As(err, &ue) || len(ue.Windows) != 5 {
		t.Fatalf("Shutdown: %v; want 5 undelivered windows", err)
	}
}

func TestShutdownGivesUpAtTheDeadline(t *testing.T) {
	exp := newFakeExporter(true)
	stats := &Outcomes{}
	logs := &logRecorder{}
	s := newProfilesSender(profilesConfig{Exporter: exp, Outcomes: stats, Logger: slog.New(logs)})
	defer checkNoGoroutine(t)
	for i := range 3 {
		s.Enqueue(window(i))
	}
	exp.waitStarted(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := s.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v; want the context's deadline in the chain", err)
	}
	var ue *UndeliveredError
	if !errors.As(err, &ue) {
		t.Fatalf("Shutdown: %T %v; want an *UndeliveredError", err, err)
	}
	if len(ue.Windows) != 3 {
		t.Fatalf("%d undelivered windows, want 3: %v", len(ue.Windows), err)
	}
	for i, w := range ue.Windows {
		want := window(i)
		if !w.Start.Equal(want.Start) || !w.End.Equal(want.End) {
			t.Errorf("undelivered[%d] = [%v, %v), want [%v, %v)", i, w.Start, w.End, want.Start, want.End)
		}
		rng := want.Start.Format(time.RFC3339) + ", " + want.End.Format(time.RFC3339)
		if !strings.Contains(err.Error(), rng) {
			t.Errorf("error does not name window [%s): %v", rng, err)
		}
	}
	if !strings.HasPrefix(err.Error(), "3 profile windows not delivered") {
		t.Errorf("error = %q", err)
	}
	if got := stats.Failed.Load(); got != 3 {
		t.Errorf("Failed = %d, want 3", got)
	}
	if exp.shutdown.Load() != 1 {
		t.Errorf("exporter shut down %d times, want 1", exp.shutdown.Load())
	}
	// A second Shutdown returns the same result without waiting.
	if err2 := s.Shutdown(context.Background()); err2 != err {
		t.Errorf("second Shutdown: %v, want %v", err2, err)
	}
	// One failure line per interval at most, and the final report carries
	// the rest. Which of the goroutine or Shutdown settles the window in
	// flight depends on which sees the deadline first: the exporter returns
	// as soon as it is cancelled.
	individual := logs.find("profile window not delivered", "failed")
	final := logs.find("lost since the last report", "failed")
	if len(individual) > 1 || len(final) != 1 || sum(individual)+final[0] != 3 {
		t.Errorf("failure lines carry failed=%v, the final report %v; want at most one line, then the rest, 3 in all", individual, final)
	}
}

func TestEnqueueAfterShutdownDrops(t *testing.T) {
	exp := newFakeExporter(false)
	stats := &Outcomes{}
	s := newProfilesSender(profilesConfig{Exporter: exp, Outcomes: stats})
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkNoGoroutine(t)
	s.Enqueue(window(0))
	if got := stats.Dropped.Load(); got != 1 {
		t.Errorf("Dropped = %d, want 1", got)
	}
	if got := exp.windows(); len(got) != 0 {
		t.Errorf("exported %v after Shutdown", got)
	}
}

func TestFailedExportsAreCountedNotRetried(t *testing.T) {
	exp := newFakeExporter(false)
	exp.fail = errors.New("HTTP 400 Bad Request")
	stats := &Outcomes{}
	logs := &logRecorder{}
	s := newProfilesSender(profilesConfig{Exporter: exp, Outcomes: stats, Logger: slog.New(logs)})
	for i := range 3 {
		s.Enqueue(window(i))
		exp.waitStarted(t, 1)
	}
	waitFor(t, "3 failures", func() bool { return stats.Failed.Load() == 3 })
	if err := s.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown: %v; windows that failed before it are not its to report", err)
	}
	checkNoGoroutine(t)
	if got := stats.Failed.Load(); got != 3 {
		t.Errorf("Failed = %d, want 3", got)
	}
	if got := stats.Exported.Load(); got != 0 {
		t.Errorf("Exported = %d, want 0", got)
	}
	if got := len(exp.started); got != 0 {
		t.Errorf("%d extra Export calls; the Queue must not retry", got)
	}
	if got := logs.find("not delivered", "failed"); len(got) != 1 {
		t.Errorf("%d failure lines within one interval, want 1", len(got))
	}
}

// reportingExporter reports through the call's context what package
// report lets an exporter report.
type reportingExporter struct {
	retries, sent, removed int64
	fail                   error
}

func (e *reportingExporter) Export(ctx context.Context, _ *collectorpb.ExportProfilesServiceRequest) error {
	r := report.FromContext(ctx)
	for range e.retries {
		r.Retried()
	}
	r.Sent(e.sent)
	r.Removed(e.removed)
	return e.fail
}

func (e *reportingExporter) Shutdown(context.Context) error { return nil }

// TestExportersReport checks that what an exporter reports of a call
// reaches the Outcomes, and that the bytes of an exporter that reports
// none are the accepted request's size.
func TestExportersReport(t *testing.T) {
	size := int64(proto.Size(window(0).Request))
	tests := []struct {
		name                               string
		exp                                *reportingExporter
		wantRetries, wantSent, wantRemoved int64
		wantExported, wantFailed           int64
	}{
		{"reports all", &reportingExporter{retries: 2, sent: 1234, removed: 3}, 2, 1234, 3, 1, 0},
		{"reports nothing", &reportingExporter{}, 0, size, 0, 1, 0},
		{"fails after retries", &reportingExporter{retries: 4, fail: errors.New("receiver down")}, 4, 0, 0, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stats := &Outcomes{}
			s := newProfilesSender(profilesConfig{Exporter: tt.exp, Outcomes: stats})
			s.Enqueue(window(0))
			s.Shutdown(context.Background())
			checkNoGoroutine(t)
			got := []int64{stats.Retries.Load(), stats.BytesSent.Load(), stats.FilesRemoved.Load(), stats.Exported.Load(), stats.Failed.Load()}
			want := []int64{tt.wantRetries, tt.wantSent, tt.wantRemoved, tt.wantExported, tt.wantFailed}
			if !slices.Equal(got, want) {
				t.Errorf("retries, bytes, files removed, exported, failed = %v, want %v", got, want)
			}
		})
	}
}

// panickingExporter panics on its first Export, as a bug in a transport
// would, and accepts the rest.
type panickingExporter struct{ calls atomic.Int64 }

func (p *panickingExporter) Export(context.Context, *collectorpb.ExportProfilesServiceRequest) error {
	if p.calls.Add(1) == 1 {
		panic("exporter bug")
	}
	return nil
}

func (p *panickingExporter) Shutdown(context.Context) error { return nil }

func TestSenderSurvivesAPanickingExporter(t *testing.T) {
	stats := new(Outcomes)
	exp := &panickingExporter{}
	s := newProfilesSender(profilesConfig{Exporter: exp, Outcomes: stats})
	s.Enqueue(window(0))
	waitFor(t, "the panicking export counted as failed", func() bool { return stats.Failed.Load() > 0 })
	s.Enqueue(window(1))
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if got := stats.Failed.Load(); got != 1 {
		t.Errorf("Failed = %d, want 1 (the window whose export panicked)", got)
	}
	if got := stats.Exported.Load(); got != 1 {
		t.Errorf("Exported = %d, want 1: the sender must go on after a panic", got)
	}
}

// deafExporter is a transport that ignores its context: each Export waits
// for release whatever its context says, then reports the outcome it was
// given (a panic when panics is set), after a callback made through gate as
// an exporter's partial-success or retry report is.
type deafExporter struct {
	started  chan struct{}
	release  chan struct{}
	returned chan struct{} // closed when an Export returns
	outcome  error
	panics   bool
}

func (e *deafExporter) Export(ctx context.Context, _ *collectorpb.ExportProfilesServiceRequest) error {
	e.started <- struct{}{}
	<-e.release
	defer close(e.returned)
	// What it reports once the call returns must not be counted.
	report.FromContext(ctx).Retried()
	report.FromContext(ctx).Sent(100)
	if e.panics {
		panic("transport bug after the deadline")
	}
	return e.outcome
}

func (e *deafExporter) Shutdown(context.Context) error { return nil }

// TestShutdownLeavesAStuckExportBehind has the export in flight ignore its
// context. Shutdown must return by its deadline, while the export is still
// blocked, reporting the window in flight and the queued ones; when the
// export returns later, whatever its outcome, the goroutine must count,
// log and call back nothing, and end.
func TestShutdownLeavesAStuckExportBehind(t *testing.T) {
	for _, tt := range []struct {
		name    string
		outcome error
		panics  bool
		cancel  bool // a cancelled context rather than a deadline
	}{
		{name: "succeeds after the deadline"},
		{name: "fails after the deadline", outcome: errors.New("HTTP 503")},
		{name: "panics after the deadline", panics: true},
		{name: "cancelled context", cancel: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			exp := &deafExporter{started: make(chan struct{}, 10), release: make(chan struct{}),
				returned: make(chan struct{}), outcome: tt.outcome, panics: tt.panics}
			stats := &Outcomes{}
			logs := &logRecorder{}
			s := newProfilesSender(profilesConfig{Exporter: exp, Outcomes: stats, Logger: slog.New(logs)})
			for i := range 3 {
				s.Enqueue(window(i))
			}
			<-exp.started

			// The guard releases the export if Shutdown does not return
			// first, so that a regression fails instead of hanging.
			var releasedByGuard atomic.Bool
			guard := time.AfterFunc(10*time.Second, func() {
				releasedByGuard.Store(true)
				close(exp.release)
			})
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			if tt.cancel {
				cancel()
			}
			defer cancel()
			err := s.Shutdown(ctx)
			if !guard.Stop() || releasedByGuard.Load() {
				t.Fatal("Shutdown returned only once the transport was released")
			}

			want := context.DeadlineExceeded
			if tt.cancel {
				want = context.Canceled
			}
			if !errors.Is(err, want) {
				t.Errorf("Shutdown: %v; want %v in the chain", err, want)
			}
			var ue *UndeliveredError
			if !errors.As(err, &ue) || len(ue.Windows) != 3 {
				t.Fatalf("Shutdown: %v; want the 3 windows undelivered", err)
			}
			for i, w := range ue.Windows {
				if want := window(i); !w.Start.Equal(want.Start) || !w.End.Equal(want.End) {
					t.Errorf("undelivered[%d] = [%v, %v), want [%v, %v)", i, w.Start, w.End, want.Start, want.End)
				}
			}
			if !strings.Contains(ue.Windows[0].Err.Error(), "in flight") {
				t.Errorf("the window in flight is reported as %q", ue.Windows[0].Err)
			}
			if got := stats.Failed.Load(); got != 3 {
				t.Errorf("Failed = %d, want 3", got)
			}
			if got := logs.find("lost since the last report", "failed"); len(got) != 1 || got[0] != 3 {
				t.Errorf("the final report carries failed=%v, want [3]", got)
			}
			if n, _ := s.Len(); n != 0 {
				t.Errorf("%d windows still queued after Shutdown", n)
			}
			logs.mu.Lock()
			nLogs := len(logs.records)
			logs.mu.Unlock()

			close(exp.release)
			<-exp.returned
			checkNoGoroutine(t)
			if got := stats.Exported.Load() + stats.BytesSent.Load(); got != 0 {
				t.Errorf("the export given up was counted when it returned: exported+bytes = %d", got)
			}
			if got := stats.Failed.Load(); got != 3 {
				t.Errorf("Failed = %d after the export returned, want 3", got)
			}
			if got := stats.Retries.Load(); got != 0 {
				t.Errorf("the retries the export given up reported were counted: %d", got)
			}
			logs.mu.Lock()
			defer logs.mu.Unlock()
			if len(logs.records) != nLogs {
				t.Errorf("logged after Shutdown returned: %v", logs.records[nLogs:])
			}
			if got := len(exp.started); got != 0 {
				t.Errorf("%d more exports started after Shutdown", got)
			}
		})
	}
}

func sum(v []int64) int64 {
	var n int64
	for _, x := range v {
		n += x
	}
	return n
}
