package export

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/testutil/otlptest"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// fakeClock is a clock whose sleeps return at once and move it forward.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeClock) option() RetryOption { return WithClock(c.Now, c.Sleep) }

// scriptedExporter fails with the errors of script in turn, then succeeds.
type scriptedExporter struct {
	mu       sync.Mutex
	script   []error
	requests []*collectorpb.ExportProfilesServiceRequest
	shutdown int
}

func (e *scriptedExporter) Export(_ context.Context, req *collectorpb.ExportProfilesServiceRequest) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.requests = append(e.requests, req)
	if n := len(e.requests); n <= len(e.script) {
		return e.script[n-1]
	}
	return nil
}

func (e *scriptedExporter) Shutdown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.shutdown++
	return nil
}

func (e *scriptedExporter) attempts() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.requests)
}

func grpcFailure(st *status.Status) error {
	return &ExportError{Protocol: ProtocolGRPC, Status: st, Err: st.Err()}
}

func grpcCode(c codes.Code) error { return grpcFailure(status.New(c, "test")) }

func httpFailure(code int, retryAfter string) error {
	return &ExportError{Protocol: ProtocolHTTPProtobuf, StatusCode: code, RetryAfter: retryAfter}
}

func repeat(err error, n int) []error {
	s := make([]error, n)
	for i := range s {
		s[i] = err
	}
	return s
}

// fixedRandom places every backoff wait at the top of its jitter range, so
// that the waits are exactly the intervals.
func fixedRandom(v float64) RetryOption {
	return func(r *retryHooks) { r.random = func() float64 { return v } }
}

func TestRetrySchedule(t *testing.T) {
	const s = time.Second
	unavailable := grpcCode(codes.Unavailable)
	fast := RetryConfig{Enabled: true, InitialInterval: s, MaxInterval: 10 * s, MaxElapsedTime: time.Hour}
	tests := []struct {
		name         string
		cfg          RetryConfig
		random       float64
		script       []error
		wantAttempts int
		wantSleeps   []time.Duration
		wantErr      string // "" for success
		wantSame     bool   // the error is the exporter's, unwrapped
	}{
		{name: "success", cfg: fast, random: 1, wantAttempts: 1},
		{name: "unavailable three times", cfg: fast, random: 1, script: repeat(unavailable, 3),
			wantAttempts: 4, wantSleeps: []time.Duration{s, 1500 * time.Millisecond, 2250 * time.Millisecond}},
		{name: "every retryable gRPC code", cfg: fast, random: 1,
			script: []error{grpcCode(codes.Canceled), grpcCode(codes.DeadlineExceeded), grpcCode(codes.Aborted),
				grpcCode(codes.OutOfRange), grpcCode(codes.DataLoss)},
			wantAttempts: 6, wantSleeps: []time.Duration{s, 1500 * time.Millisecond, 2250 * time.Millisecond, 3375 * time.Millisecond, 5062500 * time.Microsecond}},
		{name: "backoff capped", cfg: RetryConfig{Enabled: true, InitialInterval: s, MaxInterval: 4 * s}, random: 1,
			script: repeat(unavailable, 6), wantAttempts: 7,
			wantSleeps: []time.Duration{s, 1500 * time.Millisecond, 2250 * time.Millisecond, 3375 * time.Millisecond, 4 * s, 4 * s}},
		{name: "cap near the largest duration", cfg: RetryConfig{Enabled: true, InitialInterval: 1 << 62, MaxInterval: 1<<63 - 1}, random: 1,
			script: repeat(unavailable, 3), wantAttempts: 4, wantSleeps: []time.Duration{1 << 62, 3 << 61, 1<<63 - 1}},
		{name: "jitter low end", cfg: RetryConfig{Enabled: true, InitialInterval: 2 * s, MaxInterval: 4 * s}, random: 0,
			script: repeat(unavailable, 3), wantAttempts: 4, wantSleeps: []time.Duration{s, 1500 * time.Millisecond, 2 * s}},
		{name: "RetryInfo delay honoured", cfg: DefaultRetryConfig, random: 1,
			script:       []error{grpcFailure(statusWithRetryInfo(t, codes.ResourceExhausted, 3*s))},
			wantAttempts: 2, wantSleeps: []time.Duration{3 * s}},
		{name: "RetryInfo delay beyond MaxInterval honoured", cfg: DefaultRetryConfig, random: 1,
			script:       []error{grpcFailure(statusWithRetryInfo(t, codes.Unavailable, 45*s))},
			wantAttempts: 2, wantSleeps: []time.Duration{45 * s}},
		{name: "backoff grows under server delays", cfg: fast, random: 1,
			script:       []error{httpFailure(http.StatusTooManyRequests, "7"), unavailable},
			wantAttempts: 3, wantSleeps: []time.Duration{7 * s, 1500 * time.Millisecond}},
		{name: "Retry-After seconds", cfg: DefaultRetryConfig, random: 1,
			script: []error{httpFailure(http.StatusTooManyRequests, "2")}, wantAttempts: 2, wantSleeps: []time.Duration{2 * s}},
		{name: "HTTP 502 503 504 without Retry-After back off", cfg: fast, random: 1,
			script:       []error{httpFailure(http.StatusBadGateway, ""), httpFailure(http.StatusServiceUnavailable, ""), httpFailure(http.StatusGatewayTimeout, "")},
			wantAttempts: 4, wantSleeps: []time.Duration{s, 1500 * time.Millisecond, 2250 * time.Millisecond}},
		{name: "transport failure", cfg: fast, random: 1,
			script:       []error{&ExportError{Protocol: ProtocolHTTPJSON, Err: errors.New("connection refused")}},
			wantAttempts: 2, wantSleeps: []time.Duration{s}},
		{name: "RESOURCE_EXHAUSTED without RetryInfo", cfg: fast, random: 1,
			script: []error{grpcCode(codes.ResourceExhausted)}, wantAttempts: 1,
			wantErr: "ResourceExhausted", wantSame: true},
		{name: "INVALID_ARGUMENT", cfg: fast, random: 1,
			script: []error{grpcCode(codes.InvalidArgument)}, wantAttempts: 1, wantErr: "InvalidArgument", wantSame: true},
		{name: "HTTP 400", cfg: fast, random: 1,
			script: []error{httpFailure(http.StatusBadRequest, "1")}, wantAttempts: 1, wantErr: "HTTP 400", wantSame: true},
		{name: "not an ExportError", cfg: fast, random: 1,
			script: []error{errNilRequest}, wantAttempts: 1, wantErr: "nil request", wantSame: true},
		{name: "permanent after retries", cfg: fast, random: 1,
			script:       []error{unavailable, grpcCode(codes.PermissionDenied)},
			wantAttempts: 2, wantSleeps: []time.Duration{s},
			wantErr: "2 attempts, the last failed permanently: otlp grpc export: PermissionDenied"},
		{name: "MaxElapsedTime", cfg: RetryConfig{Enabled: true, InitialInterval: s, MaxInterval: s, MaxElapsedTime: 3500 * time.Millisecond},
			random: 1, script: repeat(unavailable, 100), wantAttempts: 4, wantSleeps: []time.Duration{s, s, s},
			wantErr: "giving up after 4 attempts in 3s: the next attempt, due in 1s, would start after the retry limit of 3.5s: otlp grpc export: Unavailable"},
		{name: "server delay beyond MaxElapsedTime", cfg: DefaultRetryConfig, random: 1,
			script:       []error{grpcFailure(statusWithRetryInfo(t, codes.ResourceExhausted, 2*time.Minute))},
			wantAttempts: 1, wantErr: "giving up after 1 attempt in 0s: the next attempt, due in 2m0s, would start after the retry limit of 1m0s"},
		{name: "disabled", cfg: RetryConfig{InitialInterval: s}, random: 1,
			script: []error{unavailable}, wantAttempts: 1, wantErr: "Unavailable", wantSame: true},
		{name: "defaults for zero intervals", cfg: RetryConfig{Enabled: true}, random: 1,
			script: repeat(unavailable, 2), wantAttempts: 3, wantSleeps: []time.Duration{5 * s, 7500 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := &scriptedExporter{script: tt.script}
			clock := newFakeClock()
			type retry struct {
				attempt int
				delay   time.Duration
				err     error
			}
			var retries []retry
			e := WithRetry(next, tt.cfg, clock.option(), fixedRandom(tt.random),
				OnRetry(func(attempt int, delay time.Duration, err error) {
					retries = append(retries, retry{attempt, delay, err})
				}))
			req := otlptest.Request(1)
			err := e.Export(context.Background(), req)

			if got := next.attempts(); got != tt.wantAttempts {
				t.Errorf("attempts = %d, want %d", got, tt.wantAttempts)
			}
			for i, r := range next.requests {
				if r != req {
					t.Errorf("attempt %d sent another request", i+1)
				}
			}
			if !slices.Equal(clock.sleeps, tt.wantSleeps) {
				t.Errorf("waits = %v, want %v", clock.sleeps, tt.wantSleeps)
			}
			if len(retries) != len(tt.wantSleeps) {
				t.Fatalf("OnRetry called %d times, want %d", len(retries), len(tt.wantSleeps))
			}
			for i, r := range retries {
				if r.attempt != i+1 || r.delay != tt.wantSleeps[i] || r.err != tt.script[i] {
					t.Errorf("OnRetry call %d = (%d, %v, %v), want (%d, %v, %v)", i, r.attempt, r.delay, r.err, i+1, tt.wantSleeps[i], tt.script[i])
				}
			}

			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Export: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Export succeeded, want an error containing %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %q, want it to contain %q", err, tt.wantErr)
			}
			last := tt.script[tt.wantAttempts-1]
			if tt.wantSame && err != last {
				t.Errorf("error = %v, want the exporter's own error %v", err, last)
			}
			if !errors.Is(err, last) {
				t.Errorf("error %v does not wrap the last failure %v", err, last)
			}
		})
	}
}

// TestRetryStopsBeforeDeadline checks that the decorator gives up at once,
// without waiting, when the next attempt would start after the deadline.
func TestRetryStopsBeforeDeadline(t *testing.T) {
	tests := []struct {
		name         string
		script       []error
		deadline     time.Duration // from the start of the first attempt
		wantAttempts int
		wantSleeps   []time.Duration
	}{
		{"backoff past deadline", repeat(grpcCode(codes.Unavailable), 10), 4 * time.Second, 1, nil},
		{"second backoff past deadline", repeat(grpcCode(codes.Unavailable), 10), 10 * time.Second, 2, []time.Duration{5 * time.Second}},
		{"Retry-After past deadline", []error{httpFailure(http.StatusServiceUnavailable, "30")}, 20 * time.Second, 1, nil},
		{"RetryInfo past deadline", []error{grpcFailure(statusWithRetryInfo(t, codes.ResourceExhausted, 3*time.Second))}, 3 * time.Second, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := &scriptedExporter{script: tt.script}
			clock := newFakeClock()
			ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(tt.deadline))
			defer cancel()
			e := WithRetry(next, DefaultRetryConfig, clock.option(), fixedRandom(1))
			err := e.Export(ctx, otlptest.Request(1))
			if err == nil {
				t.Fatal("Export succeeded, want it to give up")
			}
			if got := next.attempts(); got != tt.wantAttempts {
				t.Errorf("attempts = %d, want %d", got, tt.wantAttempts)
			}
			if !slices.Equal(clock.sleeps, tt.wantSleeps) {
				t.Errorf("waits = %v, want %v", clock.sleeps, tt.wantSleeps)
			}
			want := "giving up after " + attempts(tt.wantAttempts) + ": the next attempt, due in "
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "would start after the context deadline") {
				t.Errorf("error = %q, want it to say %q and name the deadline", err, want)
			}
			var ee *ExportError
			if !errors.As(err, &ee) {
				t.Errorf("error %v does not wrap the last *ExportError", err)
			}
		})
	}
}

// TestRetryContextDoneWhileWaiting cancels the caller's context during the
// wait: Export returns with the context's error and the last failure.
func TestRetryContextDoneWhileWaiting(t *testing.T) {
	next := &scriptedExporter{script: repeat(grpcCode(codes.Unavailable), 10)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := WithRetry(next, DefaultRetryConfig, OnRetry(func(int, time.Duration, error) { cancel() }))
	err := e.Export(ctx, otlptest.Request(1))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled in its chain", err)
	}
	if !strings.Contains(err.Error(), "giving up after 1 attempt: context canceled while waiting") {
		t.Errorf("error = %q, want it to count 1 attempt and name the cancellation", err)
	}
	var ee *ExportError
	if !errors.As(err, &ee) || ee.Status.Code() != codes.Unavailable {
		t.Errorf("error %v does not wrap the UNAVAILABLE failure", err)
	}
	if got := next.attempts(); got != 1 {
		t.Errorf("attempts = %d, want 1", got)
	}
}

// TestRetryShutdownInterruptsWait shuts the decorator down while Export
// waits for its next attempt: Export returns ErrShutdown, and the wrapped
// exporter is shut down.
func TestRetryShutdownInterruptsWait(t *testing.T) {
	checkGoroutines(t)
	next := &scriptedExporter{script: repeat(grpcCode(codes.Unavailable), 10)}
	waiting := make(chan struct{})
	e := WithRetry(next, RetryConfig{Enabled: true, InitialInterval: time.Hour},
		OnRetry(func(int, time.Duration, error) { close(waiting) }))
	done := make(chan error, 1)
	go func() { done <- e.Export(context.Background(), otlptest.Request(1)) }()
	<-waiting
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	err := <-done
	if !errors.Is(err, ErrShutdown) {
		t.Errorf("Export = %v, want ErrShutdown in its chain", err)
	}
	if next.shutdown != 1 {
		t.Errorf("wrapped exporter shut down %d times, want 1", next.shutdown)
	}
	if err := e.Export(context.Background(), otlptest.Request(2)); !errors.Is(err, ErrShutdown) {
		t.Errorf("Export after Shutdown = %v, want ErrShutdown", err)
	}
	if got := next.attempts(); got != 1 {
		t.Errorf("attempts = %d, want 1", got)
	}
}

// TestServerDelayHoldsAcrossExports checks that a receiver's delay that
// the policy does not wait out within one Export (it reaches past
// MaxElapsedTime, or retrying is off) keeps every later Export from
// starting before it has passed, and that a deadline before its end
// returns ErrThrottled without an attempt.
func TestServerDelayHoldsAcrossExports(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		t.Run(fmt.Sprintf("enabled=%v", enabled), func(t *testing.T) {
			clock := newFakeClock()
			start := clock.Now()
			next := &scriptedExporter{script: []error{httpFailure(http.StatusTooManyRequests, "3600")}}
			cfg := RetryConfig{Enabled: enabled, InitialInterval: time.Second, MaxInterval: time.Second, MaxElapsedTime: time.Minute}
			e := WithRetry(next, cfg, clock.option())
			if err := e.Export(context.Background(), otlptest.Request(1)); err == nil {
				t.Fatal("first Export succeeded, want the 429")
			}
			if got := next.attempts(); got != 1 {
				t.Fatalf("attempts = %d, want 1: the delay is past MaxElapsedTime", got)
			}
			ctx, cancel := context.WithDeadline(context.Background(), start.Add(time.Hour-time.Second))
			err := e.Export(ctx, otlptest.Request(2))
			cancel()
			if !errors.Is(err, ErrThrottled) || next.attempts() != 1 {
				t.Fatalf("Export with a deadline before the delay's end: %v after %d attempts, want ErrThrottled and no attempt", err, next.attempts())
			}
			if err := e.Export(context.Background(), otlptest.Request(3)); err != nil {
				t.Fatalf("Export after the delay: %v", err)
			}
			if waited := clock.Now().Sub(start); waited != time.Hour {
				t.Errorf("the third Export started %v after the first, want the receiver's hour", waited)
			}
			if got := next.attempts(); got != 2 {
				t.Errorf("attempts = %d, want 2", got)
			}
		})
	}
}

func TestRetryJitterBounds(t *testing.T) {
	r := WithRetry[*collectorpb.ExportProfilesServiceRequest](&scriptedExporter{}, DefaultRetryConfig).(*retryExporter[*collectorpb.ExportProfilesServiceRequest])
	for _, interval := range []time.Duration{time.Millisecond, 5 * time.Second, 30 * time.Second} {
		seen := make(map[time.Duration]bool)
		for range 1000 {
			d := r.jitter(interval)
			if d < interval/2 || d > interval {
				t.Fatalf("jitter(%v) = %v, want it in [%v, %v]", interval, d, interval/2, interval)
			}
			seen[d] = true
		}
		if len(seen) < 2 {
			t.Errorf("jitter(%v) always gave %v", interval, seen)
		}
	}
}

// checkGoroutines fails t if, once its other cleanups have run, more
// goroutines are left than there were when it was called. Call it first, so
// that its check runs last. Goroutines take a moment to exit after the
// connections they serve are closed, so the check waits for them a while
// before failing.
func checkGoroutines(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(time.Minute) // a guard, not a timing assertion
		for {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("%d goroutines left behind (%d before, %d after):\n%s", n-before, before, n, buf)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// fastRetry is a policy for tests over the network: small waits, and a
// limit far away so that only the script decides the number of attempts.
var fastRetry = RetryConfig{Enabled: true, InitialInterval: 10 * time.Millisecond, MaxInterval: 40 * time.Millisecond, MaxElapsedTime: time.Minute}

// TestRetryGRPCUnavailable retries over a real gRPC connection to a
// collector that answers UNAVAILABLE three times: the request arrives once.
func TestRetryGRPCUnavailable(t *testing.T) {
	checkGoroutines(t)
	const failures = 3
	var calls atomic.Int32
	failFirst := grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if calls.Add(1) <= failures {
			return nil, status.Error(codes.Unavailable, "warming up")
		}
		return h(ctx, req)
	})
	c := &fakeCollector{}
	addr := startGRPC(t, c, failFirst)
	var retried atomic.Int32
	e := WithRetry(newTestGRPC(t, OTLPConfig{Endpoint: addr, Insecure: true, Timeout: 5 * time.Second}),
		fastRetry, OnRetry(func(int, time.Duration, error) { retried.Add(1) }))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.Export(ctx, otlptest.Request(7)); err != nil {
		t.Fatalf("Export: %v", err)
	}
	if got := calls.Load(); got != failures+1 {
		t.Errorf("server saw %d calls, want %d", got, failures+1)
	}
	if got := retried.Load(); got != failures {
		t.Errorf("OnRetry called %d times, want %d", got, failures)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.requests) != 1 || !proto.Equal(c.requests[0], otlptest.Request(7)) {
		t.Fatalf("collector accepted %d requests, want exactly the one sent", len(c.requests))
	}
}

// TestRetryHTTPServiceUnavailable retries over real HTTP against a
// collector that answers 503 three times: the request arrives once.
func TestRetryHTTPServiceUnavailable(t *testing.T) {
	for _, protocol := range []string{ProtocolHTTPProtobuf, ProtocolHTTPJSON} {
		t.Run(protocol, func(t *testing.T) {
			checkGoroutines(t)
			const failures = 3
			var mu sync.Mutex
			var accepted []httpCall
			c := &httpCollector{}
			c.respond = func(w http.ResponseWriter, r *http.Request) {
				c.mu.Lock() // held by ServeHTTP only while recording
				n := len(c.calls)
				call := c.calls[n-1]
				c.mu.Unlock()
				if n <= failures {
					http.Error(w, "warming up", http.StatusServiceUnavailable)
					return
				}
				mu.Lock()
				accepted = append(accepted, call)
				mu.Unlock()
				w.WriteHeader(http.StatusOK)
			}
			ts := startHTTP(t, c)
			var retried atomic.Int32
			e := WithRetry(newTestHTTP(t, OTLPConfig{Protocol: protocol, Endpoint: ts.URL + profilesPath, Insecure: true, Timeout: 5 * time.Second}),
				fastRetry, OnRetry(func(_ int, _ time.Duration, err error) {
					var ee *ExportError
					if !errors.As(err, &ee) || ee.StatusCode != http.StatusServiceUnavailable || ee.Message != "warming up" {
						t.Errorf("retried after %v, want a 503 saying warming up", err)
					}
					retried.Add(1)
				}))

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := e.Export(ctx, otlptest.Request(3)); err != nil {
				t.Fatalf("Export: %v", err)
			}
			if got := retried.Load(); got != failures {
				t.Errorf("OnRetry called %d times, want %d", got, failures)
			}
			c.mu.Lock()
			calls := len(c.calls)
			c.mu.Unlock()
			if calls != failures+1 {
				t.Errorf("server saw %d calls, want %d", calls, failures+1)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(accepted) != 1 {
				t.Fatalf("collector accepted %d requests, want 1", len(accepted))
			}
			if got := decodeBody(t, accepted[0]); !proto.Equal(got, otlptest.Request(3)) {
				t.Errorf("collector accepted another request than the one sent")
			}
		})
	}
}

// TestRetryHangingCollector exports to receivers that accept the request
// and never answer: every attempt times out, and Export gives up by the
// caller's deadline, leaving nothing behind.
func TestRetryHangingCollector(t *testing.T) {
	for _, protocol := range []string{ProtocolGRPC, ProtocolHTTPProtobuf} {
		t.Run(protocol, func(t *testing.T) {
			checkGoroutines(t)
			var next Exporter
			var calls func() int
			cfg := OTLPConfig{Insecure: true, Timeout: 50 * time.Millisecond}
			if protocol == ProtocolGRPC {
				c := &fakeCollector{block: true}
				cfg.Endpoint = startGRPC(t, c)
				next = newTestGRPC(t, cfg)
				calls = func() int {
					c.mu.Lock()
					defer c.mu.Unlock()
					return len(c.requests)
				}
			} else {
				c := &httpCollector{respond: func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }}
				cfg.Endpoint = startHTTP(t, c).URL + profilesPath
				next = newTestHTTP(t, cfg)
				calls = func() int {
					c.mu.Lock()
					defer c.mu.Unlock()
					return len(c.calls)
				}
			}
			e := WithRetry(next, fastRetry)
			// Time for a few 50 ms attempts however slowly a loaded
			// machine makes the connections.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			err := e.Export(ctx, otlptest.Request(1))
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Export = %v, want context.DeadlineExceeded in its chain", err)
			}
			if !strings.Contains(err.Error(), "giving up after ") || !strings.Contains(err.Error(), " attempts") {
				t.Errorf("error = %q, want it to count the attempts", err)
			}
			if n := calls(); n < 2 {
				t.Errorf("collector saw %d attempts, want retries after the timeouts", n)
			}
		})
	}
}
