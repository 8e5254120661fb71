package profiler

import (
	"context"
	"sync"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/testutil/otlptest"
)

// memoryExporter is an application's own Exporter: it keeps every request.
type memoryExporter struct {
	mu       sync.Mutex
	requests []*collectorpb.ExportProfilesServiceRequest
	shutdown int
}

func (e *memoryExporter) Export(_ context.Context, req *collectorpb.ExportProfilesServiceRequest) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.requests = append(e.requests, req)
	return nil
}

func (e *memoryExporter) Shutdown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.shutdown++
	return nil
}

// TestUserWrittenExporter runs the profiler with an exporter of the
// application's: it receives one valid request per window, with the
// goroutines of the process in it, Stats counts the windows and their
// bytes (the exporter reports none, so the requests' sizes), and Stop
// shuts it down once.
func TestUserWrittenExporter(t *testing.T) {
	exp := &memoryExporter{}
	block := make(chan struct{})
	defer close(block)
	const parked = 25
	for range parked {
		go waitInUserExporterTest(block)
	}
	p, err := Start(shortWindows(), WithExporter(exp), WithWindow(30*time.Millisecond),
		WithProfileTypes(GoroutineProfile), WithProcessContext(false))
	if err != nil {
		t.Fatal(err)
	}
	poll(t, "three windows exported", func() bool { return p.Stats().WindowsExported >= 3 })
	if err := p.Stop(stopContext(t)); err != nil {
		t.Fatal(err)
	}
	s := checkAccounting(t, p)
	exp.mu.Lock()
	defer exp.mu.Unlock()
	if int64(len(exp.requests)) != s.WindowsExported || exp.shutdown != 1 {
		t.Fatalf("%d requests received and %d shutdowns; Stats says %d windows exported, want as many requests and 1 shutdown",
			len(exp.requests), exp.shutdown, s.WindowsExported)
	}
	var bytes int64
	for i, req := range exp.requests {
		if err := otlptest.Validate(req); err != nil {
			t.Errorf("request %d: %v", i, err)
		}
		var waiting int64
		for _, smp := range otlptest.Samples(req, "goroutine", "goroutine") {
			if smp.InStack("waitInUserExporterTest") {
				waiting += smp.Values[0]
			}
		}
		if waiting != parked {
			t.Errorf("request %d: %d goroutines in waitInUserExporterTest, want %d", i, waiting, parked)
		}
		bytes += int64(proto.Size(req))
	}
	if s.BytesSent != bytes {
		t.Errorf("BytesSent = %d, want the requests' %d bytes", s.BytesSent, bytes)
	}
}

//go:noinline
func waitInUserExporterTest(block chan struct{}) { <-block }
