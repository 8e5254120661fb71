package integration

import (
	"context"
	"encoding/base64"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	pprofprofile "github.com/google/pprof/profile"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"

	profiler "github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/exporters/splunk"
	"github.com/pprofotel/profiler/labels"
)

// TestSplunkLogsThroughCollector runs the profiler in Splunk mode against a
// real Collector's OTLP/gRPC receiver and checks the profiling logs the
// Collector wrote: scope, record attributes, a body that opens as gzipped
// pprof, the labels the conventions require on every sample, the frame
// count, and CPU samples taken in spans naming spans the SDK recorded.
func TestSplunkLogsThroughCollector(t *testing.T) {
	col := startCollector(t)
	const service = "pprofotel-integration-splunk"
	logs := new(syncBuffer)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("profiler log:\n%s", logs)
		}
	})

	recorded := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(recorded))
	defer tp.Shutdown(context.Background())
	tracer := labels.WrapTracerProvider(tp).Tracer(tracerID)

	exp, err := splunk.New(context.Background(),
		splunk.WithEndpoint(col.GRPCAddr),
		splunk.WithInsecure(),
		splunk.WithTimeout(10*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profiler.Start(
		profiler.WithServiceName(service),
		profiler.WithExporter(exp),
		profiler.WithWindow(period),
		profiler.WithCPUDutyCycle(100),
		profiler.WithProfileTypes(profiler.CPUProfile, profiler.HeapProfile),
		profiler.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
	)
	if err != nil {
		t.Fatal(err)
	}
	w := startWorkload(tracer)
	time.Sleep(runFor)
	stopped := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound: Stop returns once delivered
	defer cancel()
	stopErr := p.Stop(ctx)
	w.Stop()
	if stopErr != nil {
		t.Fatalf("Stop: %v", stopErr)
	}
	spans := make(map[[2]string]bool)
	for _, s := range recorded.GetSpans() {
		if s.Name == "burn" {
			spans[[2]string{s.SpanContext.TraceID().String(), s.SpanContext.SpanID().String()}] = true
		}
	}

	records := waitForSplunkRecords(t, col, service, stopped)
	inSpan, outside, allocFn := funcName(burnInSpan), funcName(burnCPU), funcName(allocateBuffers)
	var (
		byType                                 = map[string]int{}
		inSpanSamples, unlinked, outsideLinked int
		allocSamples                           int
	)
	linked := map[[2]string]bool{}
	for _, rec := range records {
		attrs := map[string]string{}
		var frameCount int64 = -1
		for _, kv := range rec.GetAttributes() {
			if kv.GetKey() == "profiling.data.total.frame.count" {
				frameCount = kv.GetValue().GetIntValue()
				continue
			}
			attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
		}
		if attrs["com.splunk.sourcetype"] != "otel.profiling" || attrs["profiling.data.format"] != "pprof-gzip-base64" {
			t.Errorf("record attributes %v, want com.splunk.sourcetype=otel.profiling and profiling.data.format=pprof-gzip-base64", attrs)
		}
		typ := attrs["profiling.data.type"]
		byType[typ]++
		data, err := base64.StdEncoding.DecodeString(rec.GetBody().GetStringValue())
		if err != nil {
			t.Fatalf("%s record body: %v", typ, err)
		}
		prof, err := pprofprofile.Parse(strings.NewReader(string(data)))
		if err != nil {
			t.Fatalf("%s record body is not gzipped pprof: %v", typ, err)
		}
		eventMs := int64(rec.GetTimeUnixNano() / uint64(time.Millisecond))
		var frames int64
		for _, s := range prof.Sample {
			for _, loc := range s.Location {
				frames += int64(max(len(loc.Line), 1))
			}
			if got := s.NumLabel["source.event.time"]; len(got) != 1 || got[0] != eventMs {
				t.Errorf("%s sample source.event.time = %v, want [%d], the record's time", typ, got, eventMs)
			}
			fns := sampleFunctions(s)
			switch typ {
			case "cpu":
				if got := s.NumLabel["source.event.period"]; len(got) != 1 || got[0] != 10 {
					t.Errorf("cpu sample source.event.period = %v, want [10]", got)
				}
				ids := [2]string{first(s.Label["trace_id"]), first(s.Label["span_id"])}
				switch {
				case slices.Contains(fns, inSpan):
					inSpanSamples++
					if spans[ids] {
						linked[ids] = true
					} else {
						unlinked++
					}
				case slices.Contains(fns, outside) && ids != [2]string{}:
					outsideLinked++
				}
			case "allocation":
				if len(s.Label["trace_id"]) != 0 {
					t.Errorf("allocation sample carries trace_id %v", s.Label["trace_id"])
				}
				if slices.Contains(fns, allocFn) {
					allocSamples++
				}
			}
		}
		if frameCount != frames {
			t.Errorf("%s record profiling.data.total.frame.count = %d, its samples hold %d frames", typ, frameCount, frames)
		}
	}
	if byType["cpu"] == 0 || byType["allocation"] == 0 || len(byType) != 2 {
		t.Errorf("records by profiling.data.type %v, want cpu and allocation only", byType)
	}
	if inSpanSamples == 0 || unlinked > 0 {
		t.Errorf("%d of %d cpu samples in %s name no recorded span", unlinked, inSpanSamples, inSpan)
	}
	if len(linked) < 2 {
		t.Errorf("cpu samples in %s name %d distinct recorded spans, want at least 2", inSpan, len(linked))
	}
	if outsideLinked > 0 {
		t.Errorf("%d cpu samples in %s, which runs outside any span, name a span", outsideLinked, outside)
	}
	if allocSamples == 0 {
		t.Errorf("no allocation sample in %s", allocFn)
	}
}

// waitForSplunkRecords reads the Collector's logs file until it holds a
// record of service observed at or after stopped (the window Stop sent),
// and returns the records of service, after checking their scope.
func waitForSplunkRecords(t *testing.T, col *collector, service string, stopped time.Time) []*logspb.LogRecord {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a bound against a hang
	for {
		all, err := readJSONLines(col.LogsFile, func() *logspb.LogsData { return new(logspb.LogsData) })
		if err != nil {
			t.Fatal(err)
		}
		var mine []*logspb.LogRecord
		last := false
		var plain dict
		for _, ld := range all {
			for _, rl := range ld.GetResourceLogs() {
				if plain.text(plain.attr(rl.GetResource().GetAttributes(), "service.name")) != service {
					continue
				}
				for _, sl := range rl.GetScopeLogs() {
					if sl.GetScope().GetName() != "otel.profiling" || sl.GetScope().GetVersion() != "0.1.0" {
						t.Fatalf("scope %v, want otel.profiling 0.1.0", sl.GetScope())
					}
					for _, rec := range sl.GetLogRecords() {
						mine = append(mine, rec)
						if rec.GetObservedTimeUnixNano() >= uint64(stopped.UnixNano()) {
							last = true
						}
					}
				}
			}
		}
		if last {
			return mine
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute the Collector has written %d profiling records for %s, none observed after Stop was called", len(mine), service)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sampleFunctions returns the function names of s's stack, inlined ones
// included.
func sampleFunctions(s *pprofprofile.Sample) []string {
	var fns []string
	for _, loc := range s.Location {
		for _, ln := range loc.Line {
			if ln.Function != nil {
				fns = append(fns, ln.Function.Name)
			}
		}
	}
	return fns
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}
