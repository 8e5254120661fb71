package labels

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestPyroscopeProfileID checks, with the SDK's in-memory exporter, that
// WithPyroscopeProfileID sets pyroscope.profile.id on local root spans
// only, to the span's own id in hex, and that without it no span has it.
func TestPyroscopeProfileID(t *testing.T) {
	remote := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	tests := []struct {
		name string
		opts []Option
		// want is whether the local roots carry the attribute.
		want bool
	}{
		{"default", nil, false},
		{"option", []Option{WithPyroscopeProfileID()}, true},
		{"option with local roots only", []Option{WithLocalRootSpansOnly(), WithPyroscopeProfileID()}, true},
		{"local roots only", []Option{WithLocalRootSpansOnly()}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			sdk := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSyncer(exp))
			t.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
			tr := WrapTracerProvider(sdk, tt.opts...).Tracer("test")

			// Local roots: a span with no parent, one under a remote
			// parent, and a new root under a local parent. The others
			// have a local parent.
			roots := map[string]bool{"root": true, "server": true, "new-root": true}
			ctx, root := tr.Start(context.Background(), "root")
			cctx, child := tr.Start(ctx, "child")
			_, grandchild := tr.Start(cctx, "grandchild")
			_, newRoot := tr.Start(ctx, "new-root", trace.WithNewRoot())
			sctx, server := tr.Start(trace.ContextWithRemoteSpanContext(context.Background(), remote), "server")
			_, serverChild := tr.Start(sctx, "server-child")
			for _, s := range []trace.Span{grandchild, child, newRoot, serverChild, server, root} {
				s.End()
			}

			spans := exp.GetSpans()
			if len(spans) != 6 {
				t.Fatalf("%d spans exported, want 6", len(spans))
			}
			for _, s := range spans {
				var got []string
				for _, kv := range s.Attributes {
					if kv.Key == PyroscopeProfileIDKey {
						got = append(got, kv.Value.AsString())
					}
				}
				switch {
				case tt.want && roots[s.Name]:
					if want := s.SpanContext.SpanID().String(); len(got) != 1 || got[0] != want {
						t.Errorf("local root %s: %s = %q, want [%s], its span id", s.Name, PyroscopeProfileIDKey, got, want)
					}
				case len(got) != 0:
					t.Errorf("span %s (local root %v): %s = %q, want none", s.Name, roots[s.Name], PyroscopeProfileIDKey, got)
				}
			}
		})
	}
}

// TestPyroscopeProfileIDUnsampled checks that a local root the sampler
// drops is returned as the SDK made it, attribute or not: it records
// nothing.
func TestPyroscopeProfileIDUnsampled(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()), sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
	_, span := WrapTracerProvider(sdk, WithPyroscopeProfileID()).Tracer("test").Start(context.Background(), "root")
	if _, ok := span.(*labeledSpan); ok {
		t.Errorf("an unsampled span was wrapped")
	}
	span.End()
	if n := len(exp.GetSpans()); n != 0 {
		t.Errorf("%d spans exported, want 0", n)
	}
}
