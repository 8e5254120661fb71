package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/internal/testutil/polltest"
	"github.com/pprofotel/profiler/opamp"
)

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestServer runs the command as docs/remote-control.md does, with a
// profiler and its OpAMP client: the agent registers, a configuration
// typed on the standard input is applied, and a normal Stop is reported
// stopped and healthy.
func TestServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	in, typed := io.Pipe()
	out := &lockedBuffer{}
	addrs := make(chan string, 1)
	served := make(chan error, 1)
	go func() { served <- run(ctx, "127.0.0.1:0", in, out, func(a string) { addrs <- a }, func() {}) }()
	addr := <-addrs

	p, err := profiler.Start(profiler.WithExporter(nopExporter{}), profiler.WithServiceName("try-remote"),
		profiler.WithWindow(time.Second), profiler.WithProfileTypes(profiler.HeapProfile), profiler.WithProcessContext(false))
	if err != nil {
		t.Fatal(err)
	}
	c, err := opamp.Start(ctx, p, opamp.WithEndpointURL("ws://"+addr+"/v1/opamp"), opamp.WithHeartbeatInterval(time.Second),
		opamp.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, "the agent registered", func() bool { return strings.Contains(out.String(), "service.name=try-remote") })
	if _, err := io.WriteString(typed, `{"profiles":["heap","mutex"],"expires_in":"1m"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, "the configuration applied", func() bool {
		return strings.Contains(out.String(), " APPLIED ") && strings.Contains(out.String(), `"profiles":["heap","mutex"]`)
	})
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, "the stop reported", func() bool { return strings.Contains(out.String(), "health stopped healthy=true") })
	if err := c.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
	cancel()
	typed.Close()
	if err := <-served; err != nil {
		t.Error(err)
	}
}

type nopExporter struct{}

func (nopExporter) Export(context.Context, *collectorpb.ExportProfilesServiceRequest) error {
	return nil
}

func (nopExporter) Shutdown(context.Context) error { return nil }
