package profiler

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the loggers of several goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestUnreachableReceiverIsHeardAtOnce is a new user's first run: the
// OTLP endpoint of the environment is a closed port and the window is the
// default minute. The user must read a warning that names the endpoint
// within 15 s of Start (the first window is short, and the exporter warns
// at its first failed attempt, not after its retries), and
// Stop(context.Background()) must return within 10 s, with the windows it
// could not deliver in its error.
func TestUnreachableReceiverIsHeardAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + ln.Addr().String()
	ln.Close() // nothing listens: connections are refused
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)

	logs := &syncBuffer{}
	defaultLogger := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(logs, nil)))
	t.Cleanup(func() { slog.SetDefault(defaultLogger) })

	started := time.Now()
	p, err := Start(WithProfileTypes(GoroutineProfile), WithProcessContext(false))
	if err != nil {
		t.Fatal(err)
	}
	// The start line names the endpoint too: wait for the warning.
	poll(t, "a warning naming the endpoint", func() bool {
		for l := range strings.Lines(logs.String()) {
			if strings.Contains(l, "an export failed") && strings.Contains(l, ln.Addr().String()) {
				return true
			}
		}
		return false
	})
	if heard := time.Since(started); heard > 15*time.Second {
		t.Errorf("the first word of the unreachable endpoint came %v after Start, want within 15s", heard)
	}
	if n := strings.Count(logs.String(), "an export failed; retrying"); n != 1 {
		t.Errorf("%d warnings of a failed export, want 1:\n%s", n, logs.String())
	}

	stopping := time.Now()
	err = p.Stop(context.Background())
	if took := time.Since(stopping); took > 10*time.Second {
		t.Errorf("Stop(context.Background()) took %v, want at most 10s", took)
	}
	var ue *UndeliveredError
	if !errors.As(err, &ue) || len(ue.Windows) == 0 {
		t.Fatalf("Stop: %v; want the undelivered windows", err)
	}
	if !strings.Contains(err.Error(), "connection refused") && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Stop's error does not say why: %v", err)
	}
}
