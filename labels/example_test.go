package labels_test

import (
	"context"
	"fmt"
	"runtime/pprof"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pprofotel/profiler/labels"
)

// Wrapping the TracerProvider is all it takes: while a sampled span runs,
// the goroutine carries its ids as pprof labels, which the CPU and
// goroutine profiles record and the profiler turns into OTLP links.
func ExampleWrapTracerProvider() {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	otel.SetTracerProvider(labels.WrapTracerProvider(tp))

	ctx, span := otel.Tracer("checkout").Start(context.Background(), "charge")
	traceID, _ := pprof.Label(ctx, labels.TraceIDKey)
	spanID, _ := pprof.Label(ctx, labels.SpanIDKey)
	fmt.Println(traceID == span.SpanContext().TraceID().String(), spanID == span.SpanContext().SpanID().String())
	span.End()
	// Output: true true
}

// Every span's samples also carry the span id of their local root span,
// which the profiler turns into the root's route (its http.route, else
// its name): one request's work, whatever spans it runs in, counts towards
// its route.
func ExampleWrapTracerProvider_localRoot() {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	tracer := labels.WrapTracerProvider(tp).Tracer("checkout")

	ctx, root := tracer.Start(context.Background(), "POST /checkout")
	ctx, child := tracer.Start(ctx, "charge")
	rootID, _ := pprof.Label(ctx, labels.LocalRootSpanIDKey)
	fmt.Println(rootID == root.SpanContext().SpanID().String())
	child.End()
	root.End()
	// Output: true
}
