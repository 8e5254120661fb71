package profiler

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/exporters/otlpprofilehttp"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
	"github.com/pprofotel/profiler/internal/testutil/polltest"
)

// fastRetry retries as soon as the exporter allows, so that a test sees
// retries, failures and drops in a few windows.
var fastRetry = otlpprofilehttp.WithRetry(otlpprofilehttp.RetryConfig{
	Enabled:         true,
	InitialInterval: 100 * time.Millisecond,
	MaxInterval:     100 * time.Millisecond,
	MaxElapsedTime:  250 * time.Millisecond,
})

// poll calls cond until it holds.
var poll = polltest.Until

// checkGoroutines fails t unless the number of goroutines settles back to
// baseline within a minute (a guard, not a timing assertion), and shows
// the goroutines left.
func checkGoroutines(t *testing.T, baseline int) {
	t.Helper()
	for range 6000 {
		if runtime.NumGoroutine() <= baseline {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 1<<20)
	t.Errorf("%d goroutines left, %d before the test:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
}

// stopWithin runs Stop and fails t if it does not return; the bound is a
// guard against a hang, far above ctx's deadline.
func stopWithin(t *testing.T, p *Profiler, ctx context.Context) error {
	t.Helper()
	res := make(chan error, 1)
	go func() { res <- p.Stop(ctx) }()
	select {
	case err := <-res:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("Stop did not return")
		return nil
	}
}

// checkAccounting checks that every collected window ended up exported,
// failed or dropped, and returns the stats.
func checkAccounting(t *testing.T, p *Profiler) Stats {
	t.Helper()
	s := p.Stats()
	if s.WindowsQueued != 0 {
		t.Errorf("after Stop, %d windows still queued", s.WindowsQueued)
	}
	if s.WindowsCollected != s.WindowsExported+s.WindowsFailed+s.WindowsDropped {
		t.Errorf("collected %d windows, but exported %d + failed %d + dropped %d",
			s.WindowsCollected, s.WindowsExported, s.WindowsFailed, s.WindowsDropped)
	}
	return s
}

// TestReceiverDownThenUp starts the profiler against a closed port, lets
// windows fail and the queue overflow, then opens the receiver on the same
// port, takes it down again for a while mid-run and brings it back: windows
// arrive whenever it is up, each once and in order, and every loss is
// counted.
func TestReceiverDownThenUp(t *testing.T) {
	baseline := runtime.NumGoroutine()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: connections are refused

	const maxQueued = 2
	p, err := Start(shortWindows(),
		WithExporter(httpExporter(t, "http://"+addr+"/v1development/profiles", otlpprofilehttp.WithTimeout(time.Second), fastRetry)),
		WithWindow(20*time.Millisecond), WithProfileTypes(GoroutineProfile),
		WithQueueLimits(maxQueued, 1<<20), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}

	// The application goes on while every export fails: windows are
	// collected at the period, the queue stays within its bound, the
	// oldest windows are dropped.
	maxQueue := int64(0)
	poll(t, "drops, failures and retries while the receiver is down", func() bool {
		s := p.Stats()
		maxQueue = max(maxQueue, s.WindowsQueued)
		return s.WindowsDropped > 0 && s.WindowsFailed > 0 && s.ExportRetries > 0
	})
	down := p.Stats()
	if down.WindowsExported != 0 || down.BytesSent != 0 {
		t.Errorf("while the receiver is down: exported %d windows, %d bytes", down.WindowsExported, down.BytesSent)
	}

	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s was taken by someone else meanwhile: %v", addr, err)
	}
	r := newReceiver()
	srv := &http.Server{Handler: r}
	go srv.Serve(ln)

	poll(t, "windows arriving after the receiver came up", func() bool {
		s := p.Stats()
		maxQueue = max(maxQueue, s.WindowsQueued)
		return s.WindowsExported >= 3
	})

	// Down again, mid-run, until windows fail again.
	srv.Close()
	upOnce := p.Stats()
	poll(t, "failures while the receiver is down mid-run", func() bool {
		s := p.Stats()
		maxQueue = max(maxQueue, s.WindowsQueued)
		return s.WindowsFailed > upOnce.WindowsFailed
	})
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s was taken by someone else meanwhile: %v", addr, err)
	}
	srv = &http.Server{Handler: r}
	go srv.Serve(ln)
	downAgain := p.Stats()
	poll(t, "windows arriving after the receiver came back", func() bool {
		s := p.Stats()
		maxQueue = max(maxQueue, s.WindowsQueued)
		return s.WindowsExported >= downAgain.WindowsExported+3
	})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := stopWithin(t, p, ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
	srv.Close()

	s := checkAccounting(t, p)
	if maxQueue > maxQueued {
		t.Errorf("the queue held %d windows, limit %d", maxQueue, maxQueued)
	}
	if s.WindowsDropped < down.WindowsDropped || s.WindowsFailed < down.WindowsFailed {
		t.Errorf("counts went down: %+v after %+v", s, down)
	}
	r.mu.Lock()
	reqs := r.requests
	r.mu.Unlock()
	// Delivery is at least once: when the receiver goes down between
	// taking a request and answering it, the exporter sees a failure and
	// sends the window again, and if the retries run out the window is
	// counted as failed although the receiver has it. A repeat follows its
	// original and is identical to it; windows arrive in order; the one
	// shutdown mid-run can leave at most one window received but not
	// acknowledged.
	var last uint64
	var bytes, largest int64
	windows := 0
	for i, req := range reqs {
		if err := otlptest.Validate(req); err != nil {
			t.Errorf("request %d: %v", i, err)
		}
		start := req.ResourceProfiles[0].ScopeProfiles[0].Profiles[0].TimeUnixNano
		if i > 0 && start == last {
			if !proto.Equal(req, reqs[i-1]) {
				t.Errorf("request %d starts at %d like the previous one but differs from it", i, start)
			}
			continue
		}
		if start < last {
			t.Errorf("request %d starts at %d, before the previous one at %d", i, start, last)
		}
		last = start
		windows++
		size := int64(proto.Size(req))
		bytes += size
		largest = max(largest, size)
	}
	if unacked := int64(windows) - s.WindowsExported; unacked < 0 || unacked > 1 {
		t.Errorf("the receiver got %d windows (%d requests) for %d exported windows", windows, len(reqs), s.WindowsExported)
	} else if unacked == 0 && s.BytesSent != bytes || s.BytesSent > bytes || bytes-s.BytesSent > largest {
		t.Errorf("BytesSent = %d, the receiver got %d in %d windows, %d of them exported", s.BytesSent, bytes, windows, s.WindowsExported)
	}
	checkGoroutines(t, baseline)
}

// TestHangingReceiver has a receiver that accepts requests and never
// answers: collection goes on, the queue stays bounded, and Stop returns at
// its deadline, naming the windows it gave up.
func TestHangingReceiver(t *testing.T) {
	baseline := runtime.NumGoroutine()
	release := make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})}
	go srv.Serve(ln)

	const maxQueued = 3
	p, err := Start(shortWindows(),
		WithExporter(httpExporter(t, "http://"+ln.Addr().String()+"/v1development/profiles", otlpprofilehttp.WithTimeout(time.Hour))),
		WithWindow(20*time.Millisecond), WithProfileTypes(GoroutineProfile),
		WithQueueLimits(maxQueued, 1<<20), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	poll(t, "windows collected and dropped while the export hangs", func() bool {
		s := p.Stats()
		return s.WindowsCollected >= maxQueued+3 && s.WindowsDropped > 0
	})

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = stopWithin(t, p, ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop: %v; want the deadline in the chain", err)
	}
	var ue *UndeliveredError
	if !errors.As(err, &ue) {
		t.Fatalf("Stop: %v; want the undelivered windows", err)
	}
	s := checkAccounting(t, p)
	if s.WindowsExported != 0 {
		t.Errorf("exported %d windows to a receiver that never answers", s.WindowsExported)
	}
	// The window in flight, the queued ones and Stop's own, at most.
	if n := len(ue.Windows); int64(n) != s.WindowsFailed || n < 1 || n > maxQueued+1 {
		t.Errorf("%d windows reported undelivered, %d failed, want 1 to %d and equal", n, s.WindowsFailed, maxQueued+1)
	}
	for _, w := range ue.Windows {
		if rng := w.Start.Format(time.RFC3339) + ", " + w.End.Format(time.RFC3339); !strings.Contains(err.Error(), rng) {
			t.Errorf("the error does not name window [%s): %v", rng, err)
		}
	}
	if !strings.Contains(err.Error(), "not delivered") {
		t.Errorf("the error does not say what was not delivered: %v", err)
	}
	close(release)
	srv.Close()
	checkGoroutines(t, baseline)
}

// TestStartRejectsBadDeliveryOptions checks that delivery options name
// themselves and their values.
func TestStartRejectsBadDeliveryOptions(t *testing.T) {
	for _, tt := range []struct {
		opt  Option
		want string
	}{
		{WithQueueLimits(0, 100), "WithQueueLimits(0, 100)"},
		{WithQueueLimits(3, -1), "WithQueueLimits(3, -1)"},
	} {
		_, err := Start(WithExporter(noneExporter{}), tt.opt)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Start: %v; want an error naming %s", err, tt.want)
		}
	}
}
