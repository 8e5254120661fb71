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

// With WithRootSpanName, the samples of every span also carry the name of
// their local root span, which groups a request's work in flame graphs.
func ExampleWithRootSpanName() {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	tracer := labels.WrapTracerProvider(tp, labels.WithRootSpanName()).Tracer("checkout")

	ctx, root := tracer.Start(context.Background(), "POST /checkout")
	ctx, child := tracer.Start(ctx, "charge")
	name, _ := pprof.Label(ctx, labels.RootSpanNameKey)
	fmt.Println(name)
	child.End()
	root.End()
	// Output: POST /checkout
}
