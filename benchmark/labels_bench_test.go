// Package benchmark compares the cost of pprofotel against the bare
// OpenTelemetry SDK and against other libraries doing the same job. It is
// its own module so that the libraries compared against never become
// dependencies of pprofotel.
package benchmark

import (
	"context"
	"io"
	rtrace "runtime/trace"
	"testing"
	"time"

	otelpyroscope "github.com/grafana/otel-profiling-go"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pprofotel/profiler/internal/collect/requests"
	"github.com/pprofotel/profiler/labels"
)

// providers are the tracer providers compared, all wrapping sdk.
func providers(sdk trace.TracerProvider) []struct {
	name string
	tp   trace.TracerProvider
} {
	return []struct {
		name string
		tp   trace.TracerProvider
	}{
		{"sdk", sdk},
		{"labels", labels.WrapTracerProvider(sdk)},
		{"labels-local-roots", labels.WrapTracerProvider(sdk, labels.WithLocalRootSpansOnly())},
		// Issue 36: pyroscope.profile.id on local roots.
		{"labels-pyroscope-id", labels.WrapTracerProvider(sdk, labels.WithPyroscopeProfileID())},
		// Its default: span name, span id and trace id of the local root.
		{"otel-profiling-go", otelpyroscope.NewTracerProvider(sdk)},
		// Closest to "labels": span and trace id of every span.
		{"otel-profiling-go-all-spans", otelpyroscope.NewTracerProvider(sdk,
			otelpyroscope.WithSpanNameLabelScope(otelpyroscope.ScopeNone),
			otelpyroscope.WithSpanIDLabelScope(otelpyroscope.ScopeAllSpans))},
	}
}

// bareSDK samples every span and has no span processor, so what is
// measured is the SDK's span bookkeeping plus what the wrappers add to it.
func bareSDK() trace.TracerProvider {
	return sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
}

// batchedSDK is set up as a service sending its spans would be: every span
// sampled and handed at End to a BatchSpanProcessor, whose exporter
// discards them.
func batchedSDK(b *testing.B) trace.TracerProvider {
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}

// BenchmarkRootSpan starts and ends a span with no parent.
func BenchmarkRootSpan(b *testing.B) {
	benchRootSpan(b, bareSDK())
}

// BenchmarkChildSpan starts and ends a span under a parent started by the
// same provider, as every span below the entry point of a request is.
func BenchmarkChildSpan(b *testing.B) {
	benchChildSpan(b, bareSDK())
}

// BenchmarkBatchedRootSpan is BenchmarkRootSpan with spans exported through
// a BatchSpanProcessor.
func BenchmarkBatchedRootSpan(b *testing.B) {
	benchRootSpan(b, batchedSDK(b))
}

// BenchmarkBatchedChildSpan is BenchmarkChildSpan with spans exported
// through a BatchSpanProcessor.
func BenchmarkBatchedChildSpan(b *testing.B) {
	benchChildSpan(b, batchedSDK(b))
}

// BenchmarkChildSpanTraced is BenchmarkChildSpan while the execution
// tracer runs, as it does during the off-CPU profile's stretches: the
// wrapper then writes a trace record at Start and at End.
func BenchmarkChildSpanTraced(b *testing.B) {
	if err := rtrace.Start(io.Discard); err != nil {
		b.Fatal(err)
	}
	defer rtrace.Stop()
	sdk := bareSDK()
	for _, p := range providers(sdk)[:2] { // sdk and labels
		b.Run(p.name, func(b *testing.B) {
			tr := p.tp.Tracer("bench")
			parent, ps := tr.Start(context.Background(), "parent")
			defer ps.End()
			b.ReportAllocs()
			for b.Loop() {
				_, span := tr.Start(parent, "op")
				span.End()
			}
		})
	}
}

func benchRootSpan(b *testing.B, sdk trace.TracerProvider) {
	for _, p := range providers(sdk) {
		b.Run(p.name, func(b *testing.B) {
			tr := p.tp.Tracer("bench")
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				_, span := tr.Start(ctx, "op")
				span.End()
			}
		})
	}
}

func benchChildSpan(b *testing.B, sdk trace.TracerProvider) {
	for _, p := range providers(sdk) {
		b.Run(p.name, func(b *testing.B) {
			tr := p.tp.Tracer("bench")
			ctx, parent := tr.Start(context.Background(), "parent")
			defer parent.End()
			b.ReportAllocs()
			for b.Loop() {
				_, span := tr.Start(ctx, "op")
				span.End()
			}
		})
	}
}

// BenchmarkRootSpanRequests is BenchmarkRootSpan for the wrapper alone,
// without and with a request tracker installed, as the profiler installs
// one while it runs: the difference is what following requests costs a
// local root span (issue 29). With "route", the span is given its
// http.route at Start, as HTTP instrumentation that knows it does; with
// "middleware", it is started with a kind and the request's method and
// given its http.route by SetAttributes once the mux has matched, as
// otelhttp and integration/testservice's Middleware (the overhead
// service's) do. With "renamed", it is started as "GET" and renamed to
// its method and route before it ends, as otelhttp around a ServeMux
// does; "traced" runs the execution tracer meanwhile, as the off-CPU
// profile's stretches do, when End writes the route to the trace.
func BenchmarkRootSpanRequests(b *testing.B) {
	tp := labels.WrapTracerProvider(bareSDK())
	route := trace.WithAttributes(attribute.String("http.route", "/users/{id}"))
	for _, bc := range []struct {
		name       string
		tracked    bool
		opts       []trace.SpanStartOption
		middleware bool
		renamed    bool
		traced     bool
	}{
		{name: "untracked"},
		{name: "tracked", tracked: true},
		{name: "untracked-route", opts: []trace.SpanStartOption{route}},
		{name: "tracked-route", tracked: true, opts: []trace.SpanStartOption{route}},
		{name: "untracked-middleware", middleware: true},
		{name: "tracked-middleware", tracked: true, middleware: true},
		{name: "tracked-renamed", tracked: true, renamed: true},
		{name: "tracked-traced", tracked: true, traced: true},
		{name: "tracked-renamed-traced", tracked: true, renamed: true, traced: true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.traced {
				if err := rtrace.Start(io.Discard); err != nil {
					b.Fatal(err)
				}
				defer rtrace.Stop()
			}
			if bc.tracked {
				t := requests.New(requests.Config{})
				if err := t.Install(); err != nil {
					b.Fatal(err)
				}
				defer t.Stop()
				// Undrained, as within one window: the sweeper counts
				// every request and remembers the root ids up to the
				// tracker's bound.
				defer t.Window(time.Now())
			}
			tr := tp.Tracer("bench")
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if bc.middleware {
					_, span := tr.Start(ctx, "GET", trace.WithSpanKind(trace.SpanKindServer),
						trace.WithAttributes(attribute.String("http.request.method", "GET")))
					span.SetAttributes(attribute.String("http.route", "/users/{id}"))
					span.End()
					continue
				}
				_, span := tr.Start(ctx, "GET", bc.opts...)
				if bc.renamed {
					span.SetName("GET /users/{id}")
				}
				span.End()
			}
		})
	}
}
