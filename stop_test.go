package profiler

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pprofotel/profiler/exporters/otlpprofilegrpc"
	"github.com/pprofotel/profiler/exporters/otlpprofilehttp"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
)

// deafTransport stands for an application's transport that ignores the
// context of its calls: each call waits for release, whatever its context
// says, then answers with a partial success (which the exporter would
// log) or with HTTP 503 (which the retry policy would count and retry).
type deafTransport struct {
	started  chan struct{}
	release  chan struct{}
	returned chan struct{} // receives when a call returns
	fail     bool
}

func newDeafTransport(fail bool) *deafTransport {
	return &deafTransport{started: make(chan struct{}, 100), release: make(chan struct{}),
		returned: make(chan struct{}, 100), fail: fail}
}

func (d *deafTransport) wait() {
	d.started <- struct{}{}
	<-d.release
}

func (d *deafTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	d.wait()
	defer func() { d.returned <- struct{}{} }()
	if d.fail {
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"Retry-After": {"0"}},
			Body: io.NopCloser(strings.NewReader("busy")), Request: r}, nil
	}
	body, _ := proto.Marshal(partialSuccess())
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/x-protobuf"}},
		Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
}

// intercept is a gRPC interceptor that stands for the same transport on an
// application's connection: it never reaches the network.
func (d *deafTransport) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	d.wait()
	defer func() { d.returned <- struct{}{} }()
	if d.fail {
		return errors.New("transport failed")
	}
	proto.Merge(reply.(*collectorpb.ExportProfilesServiceResponse), partialSuccess())
	return nil
}

func partialSuccess() *collectorpb.ExportProfilesServiceResponse {
	return &collectorpb.ExportProfilesServiceResponse{PartialSuccess: &collectorpb.ExportProfilesPartialSuccess{
		RejectedProfiles: 1, ErrorMessage: "one profile rejected"}}
}

// eventDeadline is a context whose deadline passes when pass is called,
// not at a time: a Stop given it can be made to miss its deadline once
// its window's export has started, however slowly a loaded machine gets
// there. It reports a deadline an hour away, so that Stop adds none of
// its own.
type eventDeadline struct {
	context.Context
	at   time.Time
	done chan struct{}
	once sync.Once
}

func newEventDeadline() *eventDeadline {
	return &eventDeadline{Context: context.Background(), at: time.Now().Add(time.Hour), done: make(chan struct{})}
}

func (c *eventDeadline) pass()                       { c.once.Do(func() { close(c.done) }) }
func (c *eventDeadline) Deadline() (time.Time, bool) { return c.at, true }
func (c *eventDeadline) Done() <-chan struct{}       { return c.done }
func (c *eventDeadline) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// countingHandler counts the log records it handles.
type countingHandler struct {
	mu      sync.Mutex
	records []string
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.records = append(h.records, r.Message)
	h.mu.Unlock()
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

func (h *countingHandler) snapshot() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.records...)
}

// TestStopWithATransportThatIgnoresItsContext has the application's HTTP
// client or gRPC connection block every call, ignoring its context, until
// the test releases it, which it does only after Stop has returned. Stop
// must return by its deadline all the same, name the windows it could not
// deliver, and leave nothing of the profiler that acts when the call
// returns: no count, no log line, no callback, no further call.
func TestStopWithATransportThatIgnoresItsContext(t *testing.T) {
	for _, tt := range []struct {
		name string
		grpc bool
		fail bool
		// busy lets windows queue behind the stuck call before Stop;
		// without it, Stop's own window is the first export the
		// profiler ever attempts.
		busy bool
	}{
		{name: "http first export"},
		{name: "http busy", busy: true},
		{name: "http failing", busy: true, fail: true},
		{name: "grpc first export", grpc: true},
		{name: "grpc busy", grpc: true, busy: true},
		{name: "grpc failing", grpc: true, busy: true, fail: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			deaf := newDeafTransport(tt.fail)
			logs := &countingHandler{}
			period := time.Hour
			if tt.busy {
				period = 20 * time.Millisecond
			}
			opts := []Option{WithProfileTypes(GoroutineProfile),
				WithProcessContext(false), WithWindow(period), WithLogger(slog.New(logs))}
			if tt.grpc {
				conn, err := grpc.NewClient("127.0.0.1:1", grpc.WithTransportCredentials(insecure.NewCredentials()),
					grpc.WithUnaryInterceptor(deaf.intercept))
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				exp, err := otlpprofilegrpc.New(context.Background(), otlpprofilegrpc.WithGRPCConn(conn),
					otlpprofilegrpc.WithRetry(otlpprofilegrpc.RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond, MaxInterval: 100 * time.Millisecond}))
				if err != nil {
					t.Fatal(err)
				}
				opts = append(opts, WithExporter(exp))
			} else {
				opts = append(opts, WithExporter(httpExporter(t, "http://127.0.0.1:1/v1development/profiles",
					otlpprofilehttp.WithHTTPClient(&http.Client{Transport: deaf}),
					otlpprofilehttp.WithRetry(otlpprofilehttp.RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond, MaxInterval: 100 * time.Millisecond}))))
			}
			p, err := Start(append([]Option{shortWindows()}, opts...)...)
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			if tt.busy {
				<-deaf.started
				poll(t, "windows queued behind the stuck export", func() bool { return p.Stats().WindowsQueued >= 2 })
			}

			// The guard releases the transport if Stop does not return
			// first, so that a regression fails instead of hanging.
			var releasedByGuard atomic.Bool
			guard := time.AfterFunc(time.Minute, func() {
				releasedByGuard.Store(true)
				close(deaf.release)
			})
			// Busy, an export is stuck already: Stop's deadline passes
			// 100 ms on. Otherwise it passes once Stop's window is being
			// exported, which on a loaded machine may take longer.
			var ctx context.Context = newEventDeadline()
			if tt.busy {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
			} else {
				go func() {
					<-deaf.started
					ctx.(*eventDeadline).pass()
				}()
			}
			err = p.Stop(ctx)
			if !guard.Stop() || releasedByGuard.Load() {
				t.Fatal("Stop returned only once the transport was released")
			}

			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Stop: %v; want the deadline in the chain", err)
			}
			var ue *UndeliveredError
			if !errors.As(err, &ue) || len(ue.Windows) == 0 {
				t.Fatalf("Stop: %v; want the undelivered windows", err)
			}
			for _, w := range ue.Windows {
				if rng := w.Start.Format(time.RFC3339) + ", " + w.End.Format(time.RFC3339); !strings.Contains(err.Error(), rng) {
					t.Errorf("the error does not name window [%s): %v", rng, err)
				}
			}
			// Either the queue gives the call up at the deadline, or the HTTP
			// exporter, which stops waiting for a client that ignores its
			// context, returns first: both name the window as not delivered.
			if msg := ue.Windows[0].Err.Error(); !strings.Contains(msg, "in flight") && !strings.Contains(msg, "did not return") {
				t.Errorf("the window in flight is reported as %q", ue.Windows[0].Err)
			}
			stats := checkAccounting(t, p)
			if stats.WindowsExported != 0 || stats.WindowsFailed != int64(len(ue.Windows)) {
				t.Errorf("exported %d, failed %d; want 0 and the %d windows of Stop's error",
					stats.WindowsExported, stats.WindowsFailed, len(ue.Windows))
			}
			if err2 := p.Stop(context.Background()); err2 != err {
				t.Errorf("second Stop: %v, want the first's result", err2)
			}
			logged := logs.snapshot()

			close(deaf.release)
			<-deaf.returned
			checkNoProfilerGoroutines(t)
			if after := p.Stats(); after != stats {
				t.Errorf("Stats changed after Stop:\n got %+v\nwant %+v", after, stats)
			}
			if after := logs.snapshot(); len(after) != len(logged) {
				t.Errorf("logged after Stop: %q", after[len(logged):])
			}
			if n := len(deaf.started); n != 0 {
				t.Errorf("%d calls started after Stop", n)
			}
		})
	}
}
