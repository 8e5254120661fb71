package profiler

import (
	"context"
	"runtime/pprof"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/pprofotel/profiler/internal/testutil/cputest"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
	"github.com/pprofotel/profiler/labels"
)

//go:noinline
func spinParent(d time.Duration) int { return spin(d) }

//go:noinline
func spinChild(d time.Duration) int { return spin(d) }

//go:noinline
func spinParentAgain(d time.Duration) int { return spin(d) }

//go:noinline
func spin(d time.Duration) int {
	cputest.Spin(d)
	return 0
}

// TestCPUSamplesLinkToTheirSpans runs CPU work inside nested spans of the
// real OTel SDK, wrapped by labels.WrapTracerProvider, and checks the links
// in what the profiler exported: the parent's work links to the parent, the
// child's to the child, the parent's work after the child ended to the
// parent again, and the application's own pprof label is still there. The
// samples of both spans carry the route of the request (the parent, a
// local root span) and not its root span id, and the window counts the
// request under its route.
func TestCPUSamplesLinkToTheirSpans(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	tracer := labels.WrapTracerProvider(tp).Tracer("links-test")

	dir := t.TempDir()
	p, err := Start(WithWindow(time.Hour), WithCPUDutyCycle(100), WithProfileTypes(CPUProfile), WithExporter(fileExporter(t, dir)))
	if err != nil {
		t.Fatal(err)
	}
	var parentSC, childSC trace.SpanContext
	pprof.Do(context.Background(), pprof.Labels("tenant", "acme"), func(ctx context.Context) {
		ctx, parent := tracer.Start(ctx, "parent")
		parent.SetAttributes(attribute.String("http.route", "/work/{id}"))
		parentSC = parent.SpanContext()
		spinParent(400 * time.Millisecond)
		_, child := tracer.Start(ctx, "child")
		childSC = child.SpanContext()
		spinChild(400 * time.Millisecond)
		child.End()
		spinParentAgain(400 * time.Millisecond)
		parent.End()
	})
	if err := p.Stop(stopContext(t)); err != nil {
		t.Fatal(err)
	}
	var samples, reqs []otlptest.Sample
	for _, req := range otlptest.ReadDir(t, dir) {
		samples = append(samples, otlptest.Samples(req, "cpu", "samples")...)
		reqs = append(reqs, otlptest.Samples(req, "requests", "requests")...)
	}
	if len(reqs) != 1 || reqs[0].Values[0] != 1 || reqs[0].Attrs["route"] != "/work/{id}" || len(reqs[0].Funcs) != 1 || reqs[0].Funcs[0] != "/work/{id}" {
		t.Errorf("request counts %+v, want one request of /work/{id}", reqs)
	}

	for _, tc := range []struct {
		fn   string
		want trace.SpanContext
	}{
		{"spinParent", parentSC},
		{"spinChild", childSC},
		{"spinParentAgain", parentSC},
	} {
		var total, linked, routed int64
		for _, s := range samples {
			if !s.InStack(tc.fn) {
				continue
			}
			total += s.Values[0]
			if s.TraceID == tc.want.TraceID().String() && s.SpanID == tc.want.SpanID().String() {
				linked += s.Values[0]
			}
			if s.Attrs["tenant"] != "acme" {
				t.Errorf("%s: a sample lost the application's label tenant=acme: %v", tc.fn, s.Attrs)
			}
			if _, ok := s.Attrs[labels.TraceIDKey]; ok {
				t.Errorf("%s: trace_id stayed a sample attribute; it belongs in the link", tc.fn)
			}
			if _, ok := s.Attrs[labels.LocalRootSpanIDKey]; ok {
				t.Errorf("%s: local_root_id was sent; the route stands for it", tc.fn)
			}
			if s.Attrs["route"] == "/work/{id}" {
				routed += s.Values[0]
			}
		}
		if total < 5 {
			t.Fatalf("%s: only %d CPU samples; the test cannot judge", tc.fn, total)
		}
		if float64(linked) < 0.9*float64(total) {
			t.Errorf("%s: %d of %d samples link to span %s, want at least 90%%", tc.fn, linked, total, tc.want.SpanID())
		}
		if float64(routed) < 0.9*float64(total) {
			t.Errorf("%s: %d of %d samples carry the route /work/{id}, want at least 90%%", tc.fn, routed, total)
		}
	}
}
