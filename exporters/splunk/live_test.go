package splunk

import (
	"context"
	"github.com/pprofotel/profiler/internal/convert/splunk/splunktest"
	"runtime"
	"strconv"
	"testing"
	"time"

	gpprof "github.com/google/pprof/profile"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	logspb "go.opentelemetry.io/proto/otlp/logs/v1"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/testutil/cputest"
	"github.com/pprofotel/profiler/labels"
)

const (
	burnFunc  = "github.com/pprofotel/profiler/exporters/splunk.splunkBurn"
	allocFunc = "github.com/pprofotel/profiler/exporters/splunk.splunkAlloc"

	// At the default MemProfileRate (512 KiB) the runtime records an
	// allocation of 8 MiB with a probability of 1-e^-16 and scales its size
	// by 1/(1-e^-16): the profile shows the bytes allocated, give or take
	// a byte per allocation.
	allocCount = 2
	allocSize  = 8 << 20
)

var (
	allocSink = make([][]byte, allocCount) // allocated once, outside the window
)

// splunkBurn keeps its goroutine busy until the process has used d of CPU
// time, so that the CPU profiler gets its ticks however loaded the machine
// is.
//
//go:noinline
func splunkBurn(d time.Duration) { cputest.Spin(d) }

// splunkAlloc makes allocCount allocations of allocSize bytes.
//
//go:noinline
func splunkAlloc() {
	for i := range allocSink {
		allocSink[i] = make([]byte, allocSize)
	}
}

// TestLiveWindowOverGRPC runs the whole path on the live runtime: CPU
// burnt and memory allocated inside spans of the real SDK, wrapped by
// labels.WrapTracerProvider, collected by internal/collect, encoded as the
// OTLP profiles request every exporter receives, exported by an Exporter
// to a gRPC logs receiver, and decoded there.
func TestLiveWindowOverGRPC(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tracer := labels.WrapTracerProvider(tp).Tracer("splunk-test")

	srv := &logsServer{}
	exp := newTest(t, nil, WithEndpoint(startLogsServer(t, srv)), WithInsecure(), WithTimeout(10*time.Second))

	c, err := collect.New(collect.Config{Profiles: []string{collect.CPU, collect.Heap}})
	if err != nil {
		t.Fatal(err)
	}
	c.Start(time.Now())
	stopped := false
	defer func() {
		if !stopped {
			c.Stop(time.Now())
		}
	}()

	// A loaded machine may give the burning goroutine little CPU; try a
	// few windows until one holds its samples.
	var (
		window collect.Window
		cpuRec *gpprof.Profile
		sent   int
		span   trace.SpanContext
	)
	for attempt := 0; attempt < 10 && cpuRec == nil; attempt++ {
		spans.Reset()
		_, s := tracer.Start(context.Background(), "work")
		splunkBurn(200 * time.Millisecond)
		splunkAlloc()
		s.End()
		span = s.SpanContext()
		runtime.GC() // publishes the window's allocations in the heap profile

		window = c.Collect(time.Now())
		if err := exp.Export(context.Background(), request(window)); err != nil {
			t.Fatal(err)
		}
		reqs, _ := srv.received()
		if len(reqs) == sent { // nothing in the window to send
			continue
		}
		sent++
		if len(reqs) != sent {
			t.Fatalf("receiver has %d requests after %d windows sent", len(reqs), sent)
		}
		recs := splunktest.Records(t, reqs[sent-1])
		if r := recs["cpu"]; r != nil {
			p := splunktest.DecodeBody(t, r)
			for _, smp := range p.Sample {
				if splunktest.HasFrame(smp, burnFunc) {
					cpuRec = p
					checkLive(t, r, p, recs["allocation"], window, span)
					break
				}
			}
		}
	}
	c.Stop(time.Now())
	stopped = true
	t.Logf("%d windows", sent)
	if cpuRec == nil {
		t.Fatalf("no window in 10 held a CPU sample of %s", burnFunc)
	}
	ended := spans.GetSpans()
	if len(ended) != 1 || ended[0].SpanContext.SpanID() != span.SpanID() || ended[0].SpanContext.TraceID() != span.TraceID() {
		t.Fatalf("recorded spans %v, want the one span %v", ended, span.SpanID())
	}
}

// checkLive checks the records of the window in which the burn was seen:
// the functions that ran, the labels, the span's ids, the frame counts and
// the exact bytes allocated.
func checkLive(t *testing.T, cpuRecord *logspb.LogRecord, cpu *gpprof.Profile, allocRecord *logspb.LogRecord, w collect.Window, span trace.SpanContext) {
	t.Helper()
	eventMs := w.Start.Add(w.End.Sub(w.Start) / 2).UnixMilli()
	traceID, spanID := span.TraceID().String(), span.SpanID().String()

	var frames, burnSamples int64
	for _, s := range cpu.Sample {
		frames += int64(splunktest.Depth(s))
		if tl := s.NumLabel["source.event.time"]; len(tl) != 1 || tl[0] != eventMs {
			t.Errorf("cpu sample source.event.time = %v, want [%d]", tl, eventMs)
		}
		if pl := s.NumLabel["source.event.period"]; len(pl) != 1 || pl[0] != 10 {
			t.Errorf("cpu sample source.event.period = %v, want [10] (100 Hz)", pl)
		}
		if s.Value[0] != 1 {
			t.Errorf("cpu sample count %d, want 1 per sample", s.Value[0])
		}
		if !splunktest.HasFrame(s, burnFunc) {
			continue
		}
		// The burn ran only inside the span: every one of its samples
		// names it.
		burnSamples++
		if got := splunktest.SampleLabel(s, "trace_id"); got != traceID {
			t.Errorf("burn sample trace_id = %q, want %q", got, traceID)
		}
		if got := splunktest.SampleLabel(s, "span_id"); got != spanID {
			t.Errorf("burn sample span_id = %q, want %q", got, spanID)
		}
	}
	if burnSamples == 0 {
		t.Error("no cpu sample of the burn")
	}
	if got := splunktest.Attributes(cpuRecord)["profiling.data.total.frame.count"]; got != strconv.FormatInt(frames, 10) {
		t.Errorf("cpu profiling.data.total.frame.count = %s, the samples hold %d frames", got, frames)
	}

	if allocRecord == nil {
		t.Fatal("no allocation record")
	}
	alloc := splunktest.DecodeBody(t, allocRecord)
	if len(alloc.SampleType) != 1 || alloc.SampleType[0].Unit != "bytes" {
		t.Fatalf("allocation sample types %v, want one in bytes", alloc.SampleType)
	}
	var allocBytes int64
	frames = 0
	for _, s := range alloc.Sample {
		frames += int64(splunktest.Depth(s))
		if tl := s.NumLabel["source.event.time"]; len(tl) != 1 || tl[0] != eventMs {
			t.Errorf("allocation sample source.event.time = %v, want [%d]", tl, eventMs)
		}
		if s.Value[0] <= 0 {
			t.Errorf("allocation sample value %d, want positive bytes", s.Value[0])
		}
		if len(s.Location) > 0 && len(s.Location[0].Line) > 0 && s.Location[0].Line[0].Function.Name == allocFunc {
			allocBytes += s.Value[0]
		}
	}
	if want := int64(allocCount * allocSize); allocBytes < want || allocBytes > want+allocCount {
		t.Errorf("%s allocated %d bytes in the window, want %d (+%d)", allocFunc, allocBytes, want, allocCount)
	}
	if got := splunktest.Attributes(allocRecord)["profiling.data.total.frame.count"]; got != strconv.FormatInt(frames, 10) {
		t.Errorf("allocation profiling.data.total.frame.count = %s, the samples hold %d frames", got, frames)
	}
}
