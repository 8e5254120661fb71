package profiler

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gpprof "github.com/google/pprof/profile"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/grpc"

	"github.com/pprofotel/profiler/labels"
)

// logsReceiver is an OTLP/gRPC logs endpoint that keeps what it gets.
type logsReceiver struct {
	collogspb.UnimplementedLogsServiceServer
	mu      sync.Mutex
	records []*logspb.LogRecord
}

func (r *logsReceiver) Export(_ context.Context, req *collogspb.ExportLogsServiceRequest) (*collogspb.ExportLogsServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rl := range req.GetResourceLogs() {
		for _, sl := range rl.GetScopeLogs() {
			if sl.GetScope().GetName() != "otel.profiling" {
				continue
			}
			r.records = append(r.records, sl.GetLogRecords()...)
		}
	}
	return &collogspb.ExportLogsServiceResponse{}, nil
}

func attr(rec *logspb.LogRecord, key string) string {
	for _, kv := range rec.GetAttributes() {
		if kv.GetKey() == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

//go:noinline
func spinForSplunk(d time.Duration) int { return spin(d) }

// TestSplunkModeFromTheEnvironment turns the Splunk encoding on with
// Splunk's own variables only and checks what a logs endpoint receives:
// cpu and allocation records whose pprof bodies hold the function that ran,
// linked to the span it ran in.
func TestSplunkModeFromTheEnvironment(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	recv := &logsReceiver{}
	srv := grpc.NewServer()
	collogspb.RegisterLogsServiceServer(srv, recv)
	go srv.Serve(ln)
	defer srv.Stop()

	t.Setenv("SPLUNK_PROFILER_ENABLED", "true")
	t.Setenv("SPLUNK_PROFILER_MEMORY_ENABLED", "true")
	t.Setenv("SPLUNK_PROFILER_LOGS_ENDPOINT", "http://"+ln.Addr().String())
	t.Setenv("OTEL_SERVICE_NAME", "splunk-mode")
	t.Setenv("PPROFOTEL_CPU_DURATION", "10s") // the whole default Splunk window

	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	tracer := labels.WrapTracerProvider(tp).Tracer("splunk-test")

	p, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	_, span := tracer.Start(context.Background(), "work")
	spinForSplunk(300 * time.Millisecond)
	allocSink = make([][]byte, 0, 64)
	for range 64 {
		allocSink = append(allocSink, make([]byte, 64<<10))
	}
	span.End()
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	recv.mu.Lock()
	defer recv.mu.Unlock()
	byType := map[string]*logspb.LogRecord{}
	for _, rec := range recv.records {
		if attr(rec, "profiling.data.format") != "pprof-gzip-base64" || attr(rec, "com.splunk.sourcetype") != "otel.profiling" {
			t.Errorf("record with attributes %v is not in Splunk's format", rec.GetAttributes())
		}
		byType[attr(rec, "profiling.data.type")] = rec
	}
	for _, typ := range []string{"cpu", "allocation"} {
		if byType[typ] == nil {
			t.Fatalf("no %s record among %d", typ, len(recv.records))
		}
	}
	cpu := decodeBody(t, byType["cpu"])
	var linked, total int
	for _, s := range cpu.Sample {
		if !sampleHas(s, "spinForSplunk") {
			continue
		}
		total++
		if slices.Equal(s.Label["trace_id"], []string{span.SpanContext().TraceID().String()}) &&
			slices.Equal(s.Label["span_id"], []string{span.SpanContext().SpanID().String()}) {
			linked++
		}
	}
	if total == 0 || linked*10 < total*9 {
		t.Errorf("%d of %d CPU samples of spinForSplunk carry the span's ids, want at least 90%%", linked, total)
	}
	if alloc := decodeBody(t, byType["allocation"]); len(alloc.Sample) == 0 {
		t.Error("the allocation record holds no samples")
	}
}

var allocSink [][]byte

func decodeBody(t *testing.T, rec *logspb.LogRecord) *gpprof.Profile {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(rec.GetBody().GetStringValue())
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := gpprof.ParseUncompressed(data)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func sampleHas(s *gpprof.Sample, fn string) bool {
	for _, loc := range s.Location {
		for _, ln := range loc.Line {
			if strings.HasSuffix(ln.Function.Name, "."+fn) {
				return true
			}
		}
	}
	return false
}
