package labels

import (
	"context"
	"fmt"
	"runtime/pprof"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// appLabels are labels the application sets itself.
var appLabels = map[string]string{"request": "r1"}

// withAppLabels runs f under pprof.Do with appLabels.
func withAppLabels(f func(ctx context.Context)) {
	pprof.Do(context.Background(), pprof.Labels("request", appLabels["request"]), f)
}

func TestSampledSpanLabelsGoroutineAndContext(t *testing.T) {
	tests := []struct {
		name   string
		opts   []Option
		parent func(context.Context) context.Context
	}{
		{name: "root", parent: func(ctx context.Context) context.Context { return ctx }},
		{name: "remote parent", parent: remoteParent},
		{name: "remote parent, roots only", opts: []Option{WithLocalRootSpansOnly()}, parent: remoteParent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sdk, rec := newSDK(t, sdktrace.AlwaysSample())
			tr := WrapTracerProvider(sdk, tt.opts...).Tracer("test")
			withAppLabels(func(ctx context.Context) {
				ctx, span := tr.Start(tt.parent(ctx), "op")
				sc := span.SpanContext()
				want := spanLabels(sc, appLabels) // its own local root
				checkLabels(t, "goroutine during span", currentLabels(t), want)
				checkLabels(t, "returned context", contextLabels(ctx), want)
				if got, _ := pprof.Label(ctx, TraceIDKey); len(got) != 32 {
					t.Errorf("trace id label %q, want 32 hex digits", got)
				}
				if got := trace.SpanFromContext(ctx); got != span {
					t.Errorf("span in returned context is %T, want the returned span", got)
				}
				span.End()
				checkLabels(t, "goroutine after End", currentLabels(t), appLabels)
			})
			if got := endedNames(rec); len(got) != 1 || got[0] != "op" {
				t.Errorf("ended spans %v, want [op]", got)
			}
		})
	}
}

// remoteParent returns ctx with a sampled remote span context.
func remoteParent(ctx context.Context) context.Context {
	return trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x0a, 0x0b, 15: 1},
		SpanID:     trace.SpanID{0x0c, 7: 2},
		TraceFlags: trace.FlagsSampled,
		Remote:     true,
	}))
}

func TestNestedSpans(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
		// childLabelled tells whether the child installs its own labels.
		childLabelled bool
	}{
		{name: "every span", childLabelled: true},
		{name: "local roots only", opts: []Option{WithLocalRootSpansOnly()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sdk, rec := newSDK(t, sdktrace.AlwaysSample())
			tr := WrapTracerProvider(sdk, tt.opts...).Tracer("test")
			withAppLabels(func(ctx context.Context) {
				ctx, parent := tr.Start(ctx, "parent")
				parentWant := spanLabels(parent.SpanContext(), appLabels)

				childCtx, child := tr.Start(ctx, "child")
				parent.SetName("renamed")
				if child.SpanContext().TraceID() != parent.SpanContext().TraceID() {
					t.Fatal("child is not in the parent's trace")
				}
				childWant := parentWant
				if tt.childLabelled {
					// The child keeps the local root it inherits.
					childWant = spanLabels(child.SpanContext(), parentWant)
				}
				if _, wrapped := child.(*labeledSpan); wrapped != tt.childLabelled {
					t.Errorf("child returned as %T", child)
				}
				checkLabels(t, "goroutine in child", currentLabels(t), childWant)
				checkLabels(t, "child context", contextLabels(childCtx), childWant)

				child.End()
				checkLabels(t, "goroutine after child End", currentLabels(t), parentWant)
				parent.End()
				checkLabels(t, "goroutine after parent End", currentLabels(t), appLabels)
			})

			// The SDK still sees its own span as the child's parent.
			for _, s := range rec.Ended() {
				if s.Name() == "renamed" && s.ChildSpanCount() != 1 {
					t.Errorf("parent child span count %d, want 1", s.ChildSpanCount())
				}
			}
			if got := endedNames(rec); len(got) != 2 || got[0] != "child" || got[1] != "renamed" {
				t.Errorf("ended spans %v, want [child renamed]", got)
			}
		})
	}
}

func TestNewRootUnderParentIsLocalRoot(t *testing.T) {
	sdk, _ := newSDK(t, sdktrace.AlwaysSample())
	tr := WrapTracerProvider(sdk, WithLocalRootSpansOnly()).Tracer("test")
	ctx, parent := tr.Start(context.Background(), "parent")
	defer parent.End()
	_, root := tr.Start(ctx, "new root", trace.WithNewRoot())
	want := spanLabels(root.SpanContext(), nil)
	checkLabels(t, "goroutine in new root", currentLabels(t), want)
	root.End()
	checkLabels(t, "goroutine after new root End", currentLabels(t), spanLabels(parent.SpanContext(), nil))
}

func TestApplicationLabelsKept(t *testing.T) {
	sdk, _ := newSDK(t, sdktrace.AlwaysSample())
	tr := WrapTracerProvider(sdk).Tracer("test")

	t.Run("pprof.Do inside span", func(t *testing.T) {
		ctx, span := tr.Start(context.Background(), "op")
		pprof.Do(ctx, pprof.Labels("step", "parse"), func(context.Context) {
			checkLabels(t, "goroutine in pprof.Do", currentLabels(t), spanLabels(span.SpanContext(), map[string]string{"step": "parse"}))
		})
		checkLabels(t, "goroutine after pprof.Do", currentLabels(t), spanLabels(span.SpanContext(), nil))
		span.End()
		checkLabels(t, "goroutine after End", currentLabels(t), nil)
	})

	t.Run("span key clash", func(t *testing.T) {
		// Labels of the application under the same keys are overridden for
		// the span's duration only.
		pprof.Do(context.Background(), pprof.Labels(SpanIDKey, "mine"), func(ctx context.Context) {
			_, span := tr.Start(ctx, "op")
			checkLabels(t, "goroutine during span", currentLabels(t), spanLabels(span.SpanContext(), nil))
			span.End()
			checkLabels(t, "goroutine after End", currentLabels(t), map[string]string{SpanIDKey: "mine"})
		})
	})

	t.Run("SetGoroutineLabels from another context", func(t *testing.T) {
		defer pprof.SetGoroutineLabels(context.Background())
		pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("worker", "w1")))

		// context.Background carries none of the goroutine's labels, so the
		// span runs with its own only; End brings the worker label back.
		_, span := tr.Start(context.Background(), "op")
		checkLabels(t, "goroutine during span", currentLabels(t), spanLabels(span.SpanContext(), nil))
		span.End()
		checkLabels(t, "goroutine after End", currentLabels(t), map[string]string{"worker": "w1"})
	})

	t.Run("labels replaced during span", func(t *testing.T) {
		defer pprof.SetGoroutineLabels(context.Background())
		_, span := tr.Start(context.Background(), "op")
		pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("phase", "flush")))
		span.End()
		checkLabels(t, "goroutine after End", currentLabels(t), map[string]string{"phase": "flush"})
	})
}

func TestSpansLeftUnlabelled(t *testing.T) {
	never, neverRec := newSDK(t, sdktrace.NeverSample())
	always, _ := newSDK(t, sdktrace.AlwaysSample())
	parentBased, _ := newSDK(t, sdktrace.ParentBased(sdktrace.AlwaysSample()))
	unsampledRemote := func(ctx context.Context) context.Context {
		return trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID{1, 15: 1},
			SpanID:  trace.SpanID{2, 7: 2},
			Remote:  true,
		}))
	}
	same := func(ctx context.Context) context.Context { return ctx }
	tests := []struct {
		name   string
		tp     trace.TracerProvider
		opts   []Option
		parent func(context.Context) context.Context
	}{
		{name: "never sampled", tp: never, parent: same},
		{name: "unsampled remote parent", tp: parentBased, parent: unsampledRemote},
		{name: "noop tracer", tp: noop.NewTracerProvider(), parent: same},
		// The noop tracer returns a non-recording span with the parent's
		// sampled span context.
		{name: "noop tracer, sampled remote parent", tp: noop.NewTracerProvider(), parent: remoteParent},
		{name: "nil provider", tp: nil, parent: remoteParent},
		{name: "child with local roots only", tp: always, opts: []Option{WithLocalRootSpansOnly()}, parent: func(ctx context.Context) context.Context {
			return trace.ContextWithSpan(ctx, alwaysSpan(t, always))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := WrapTracerProvider(tt.tp, tt.opts...).Tracer("test")
			withAppLabels(func(ctx context.Context) {
				parentCtx := tt.parent(ctx)
				ctx, span := tr.Start(parentCtx, "op")
				if _, wrapped := span.(*labeledSpan); wrapped {
					t.Error("span was wrapped")
				}
				if !trace.SpanContextFromContext(ctx).Equal(span.SpanContext()) {
					t.Error("returned context does not carry the returned span")
				}
				checkLabels(t, "returned context", contextLabels(ctx), appLabels)
				checkLabels(t, "goroutine during span", currentLabels(t), appLabels)
				span.End()
				checkLabels(t, "goroutine after End", currentLabels(t), appLabels)
			})
		})
	}
	if n := len(neverRec.Ended()); n != 0 {
		t.Errorf("NeverSample recorded %d spans", n)
	}
}

// alwaysSpan starts a sampled span with tp itself, ended at cleanup.
func alwaysSpan(t *testing.T, tp trace.TracerProvider) trace.Span {
	_, s := tp.Tracer("parent").Start(context.Background(), "parent")
	t.Cleanup(func() { s.End() })
	return s
}

func TestEndOnAnotherGoroutine(t *testing.T) {
	sdk, rec := newSDK(t, sdktrace.AlwaysSample())
	tr := WrapTracerProvider(sdk).Tracer("test")
	otherCtx := pprof.WithLabels(context.Background(), pprof.Labels("owner", "other"))
	other := startOther(t, otherCtx)
	otherWant := map[string]string{"owner": "other"}

	withAppLabels(func(ctx context.Context) {
		_, span := tr.Start(ctx, "op")
		spanWant := spanLabels(span.SpanContext(), appLabels)

		other.run(func() { span.End() })
		checkLabels(t, "ending goroutine", other.labels(t), otherWant)
		// The starting goroutine cannot be reached from the ending one and
		// keeps the span's labels.
		checkLabels(t, "starting goroutine", currentLabels(t), spanWant)
		if got := endedNames(rec); len(got) != 1 {
			t.Errorf("ended spans %v, want [op]", got)
		}

		// A later span on the starting goroutine still restores what it
		// found.
		_, next := tr.Start(ctx, "next")
		next.End()
		checkLabels(t, "starting goroutine after next span", currentLabels(t), spanWant)
	})
	checkLabels(t, "starting goroutine after pprof.Do", currentLabels(t), nil)

	t.Run("started on other goroutine, ended here", func(t *testing.T) {
		var span trace.Span
		other.run(func() { _, span = tr.Start(otherCtx, "op") })
		spanWant := spanLabels(span.SpanContext(), otherWant)
		withAppLabels(func(context.Context) {
			span.End()
			checkLabels(t, "ending goroutine", currentLabels(t), appLabels)
		})
		checkLabels(t, "starting goroutine", other.labels(t), spanWant)
	})
}

func TestEndOnGoroutineStartedInSpan(t *testing.T) {
	sdk, _ := newSDK(t, sdktrace.AlwaysSample())
	tr := WrapTracerProvider(sdk).Tracer("test")
	withAppLabels(func(ctx context.Context) {
		_, span := tr.Start(ctx, "op")
		spanWant := spanLabels(span.SpanContext(), appLabels)
		ended := make(chan map[string]string)
		go func() {
			inherited := currentLabels(t)
			span.End()
			after := currentLabels(t)
			checkLabels(t, "inheriting goroutine before End", inherited, spanWant)
			ended <- after
		}()
		// The goroutine gets the labels the starting goroutine had before
		// the span, as if it had been started outside it.
		checkLabels(t, "inheriting goroutine after End", <-ended, appLabels)
		checkLabels(t, "starting goroutine", currentLabels(t), spanWant)
	})
}

func TestEndTwice(t *testing.T) {
	sdk, rec := newSDK(t, sdktrace.AlwaysSample())
	tr := WrapTracerProvider(sdk).Tracer("test")
	withAppLabels(func(ctx context.Context) {
		spanCtx, span := tr.Start(ctx, "op")
		span.End()
		checkLabels(t, "after first End", currentLabels(t), appLabels)

		// The application puts the span's labels back, as pprof.Do(spanCtx)
		// returning would; a second End must not take them away.
		pprof.SetGoroutineLabels(spanCtx)
		span.End()
		checkLabels(t, "after second End", currentLabels(t), spanLabels(span.SpanContext(), appLabels))
	})
	if n := len(rec.Ended()); n != 1 {
		t.Errorf("%d spans ended, want 1", n)
	}
}

func TestSpanForwarding(t *testing.T) {
	sdk, rec := newSDK(t, sdktrace.AlwaysSample())
	wrapper := WrapTracerProvider(sdk)
	tr := wrapper.Tracer("scope", trace.WithInstrumentationVersion("v1.2.3"))
	_, other := tr.Start(context.Background(), "linked")
	other.End()

	ctx, span := tr.Start(context.Background(), "op", trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attribute.String("at", "start")))
	if !span.IsRecording() {
		t.Error("span not recording")
	}
	if span.TracerProvider() != wrapper {
		t.Errorf("span's TracerProvider is %T, want the wrapper", span.TracerProvider())
	}
	span.SetAttributes(attribute.Int("n", 7))
	span.AddEvent("ev")
	span.AddLink(trace.Link{SpanContext: other.SpanContext()})
	span.SetStatus(codes.Error, "bad")
	span.SetName("renamed")

	// A span started through the span's provider is labelled too.
	_, child := span.TracerProvider().Tracer("scope").Start(ctx, "child")
	checkLabels(t, "goroutine in child", currentLabels(t), spanLabels(child.SpanContext(), rootOf(span)))
	child.End()
	span.End()
	if span.IsRecording() {
		t.Error("span still recording after End")
	}

	var got sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "renamed" {
			got = s
		}
	}
	if got == nil {
		t.Fatalf("span not recorded; ended %v", endedNames(rec))
	}
	if sc := got.InstrumentationScope(); sc.Name != "scope" || sc.Version != "v1.2.3" {
		t.Errorf("scope %+v", sc)
	}
	if got.SpanKind() != trace.SpanKindServer {
		t.Errorf("kind %v", got.SpanKind())
	}
	wantAttrs := []attribute.KeyValue{attribute.String("at", "start"), attribute.Int("n", 7)}
	if attrs := got.Attributes(); len(attrs) != 2 || attrs[0] != wantAttrs[0] || attrs[1] != wantAttrs[1] {
		t.Errorf("attributes %v, want %v", attrs, wantAttrs)
	}
	if ev := got.Events(); len(ev) != 1 || ev[0].Name != "ev" {
		t.Errorf("events %v, want [ev]", ev)
	}
	if l := got.Links(); len(l) != 1 || l[0].SpanContext.SpanID() != other.SpanContext().SpanID() {
		t.Errorf("links %v", l)
	}
	if st := got.Status(); st.Code != codes.Error || st.Description != "bad" {
		t.Errorf("status %+v", st)
	}
	if got.ChildSpanCount() != 1 {
		t.Errorf("child span count %d, want 1", got.ChildSpanCount())
	}
}

func TestPanicRecordedByWrappedEnd(t *testing.T) {
	sdk, rec := newSDK(t, sdktrace.AlwaysSample())
	tr := WrapTracerProvider(sdk).Tracer("test")
	var recovered any
	withAppLabels(func(ctx context.Context) {
		func() {
			defer func() { recovered = recover() }()
			func() {
				_, span := tr.Start(ctx, "op")
				defer span.End()
				panic("boom")
			}()
		}()
		checkLabels(t, "goroutine after panic", currentLabels(t), appLabels)
	})
	if recovered != "boom" {
		t.Errorf("recovered %v, want boom", recovered)
	}
	ended := rec.Ended()
	if len(ended) != 1 {
		t.Fatalf("%d spans ended, want 1", len(ended))
	}
	ev := ended[0].Events()
	if len(ev) != 1 || ev[0].Name != "exception" {
		t.Fatalf("events %v, want one exception", ev)
	}
	var msg string
	for _, a := range ev[0].Attributes {
		if a.Key == "exception.message" {
			msg = a.Value.AsString()
		}
	}
	if msg != "boom" {
		t.Errorf("exception.message %q, want boom", msg)
	}
}

func TestWrapTwice(t *testing.T) {
	sdk, _ := newSDK(t, sdktrace.AlwaysSample())
	tp := WrapTracerProvider(WrapTracerProvider(sdk), WithLocalRootSpansOnly())
	_, span := tp.Tracer("test").Start(context.Background(), "op")
	defer span.End()
	ls, ok := span.(*labeledSpan)
	if !ok {
		t.Fatalf("span is %T", span)
	}
	if _, twice := ls.Span.(*labeledSpan); twice {
		t.Error("span labelled twice")
	}
	checkLabels(t, "goroutine", currentLabels(t), spanLabels(span.SpanContext(), nil))
}

func TestNoAttributesAdded(t *testing.T) {
	sdk, rec := newSDK(t, sdktrace.AlwaysSample())
	tr := WrapTracerProvider(sdk).Tracer("test")
	ctx, parent := tr.Start(context.Background(), "parent")
	_, child := tr.Start(ctx, "child")
	child.End()
	parent.End()
	for _, s := range rec.Ended() {
		if len(s.Attributes()) != 0 || len(s.Events()) != 0 || len(s.Links()) != 0 {
			t.Errorf("span %s: attributes %v, events %v, links %v", s.Name(), s.Attributes(), s.Events(), s.Links())
		}
	}
}

func TestSpanContextKeyFound(t *testing.T) {
	if spanContextKey == nil {
		t.Fatal("the current span's context key was not found; Start falls back to an extra allocation per span")
	}
	_, span := WrapTracerProvider(noop.NewTracerProvider()).Tracer("test").Start(context.Background(), "op")
	want := &labeledSpan{Span: span, Context: context.Background()}
	if got := trace.SpanFromContext(want); got != trace.Span(want) {
		t.Errorf("span from the wrapper as a context is %T, want the wrapper", got)
	}
}

func TestReturnedContext(t *testing.T) {
	type key struct{}
	sdk, rec := newSDK(t, sdktrace.AlwaysSample())
	tr := WrapTracerProvider(sdk).Tracer("test")

	parentCtx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	ctx, parent := tr.Start(parentCtx, "parent")
	if got := ctx.Value(key{}); got != "v" {
		t.Errorf("value %v, want v", got)
	}
	if ctx.Err() != nil {
		t.Errorf("Err %v before cancel", ctx.Err())
	}

	// A child started from a context derived from the parent's, rather than
	// from the parent's itself, still shows the SDK its own parent span.
	derived := context.WithValue(ctx, key{}, "w")
	childCtx, child := tr.Start(derived, "child")
	checkLabels(t, "child context", contextLabels(childCtx), spanLabels(child.SpanContext(), rootOf(parent)))
	if got := childCtx.Value(key{}); got != "w" {
		t.Errorf("child context value %v, want w", got)
	}
	child.End()
	parent.End()

	cancel()
	select {
	case <-ctx.Done():
	default:
		t.Error("returned context not done after its parent was cancelled")
	}
	if ctx.Err() != context.Canceled {
		t.Errorf("Err %v, want Canceled", ctx.Err())
	}
	for _, s := range rec.Ended() {
		if s.Name() == "parent" && s.ChildSpanCount() != 1 {
			t.Errorf("parent child span count %d, want 1", s.ChildSpanCount())
		}
	}
}

// TestWithoutSpanContextKey runs the nested span test on the path taken
// when the context key of the current span cannot be found.
func TestWithoutSpanContextKey(t *testing.T) {
	saved := spanContextKey
	spanContextKey = nil
	defer func() { spanContextKey = saved }()
	TestNestedSpans(t)
	TestReturnedContext(t)
}

// TestNestedSpansEndedInAnyOrder ends three nested spans, started on one
// goroutine, in every order. After each End the goroutine must carry the
// labels of the innermost span still running, or the application's own
// once none runs, and never those of a span that has ended; an End on a
// span whose labels the goroutine does not carry changes nothing.
func TestNestedSpansEndedInAnyOrder(t *testing.T) {
	orders := [][]int{{2, 1, 0}, {2, 0, 1}, {1, 2, 0}, {1, 0, 2}, {0, 2, 1}, {0, 1, 2}}
	for _, order := range orders {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			sdk, _ := newSDK(t, sdktrace.AlwaysSample())
			tr := WrapTracerProvider(sdk).Tracer("test")
			withAppLabels(func(ctx context.Context) {
				var spans [3]trace.Span
				want := [3]map[string]string{}
				parentWant := appLabels
				for i := range spans {
					ctx, spans[i] = tr.Start(ctx, fmt.Sprint("span", i))
					want[i] = spanLabels(spans[i].SpanContext(), parentWant)
					parentWant = want[i]
				}

				// carrying is the span whose labels the goroutine has,
				// -1 for the application's.
				carrying := 2
				var ended [3]bool
				for _, i := range order {
					spans[i].End()
					ended[i] = true
					if carrying == i {
						for carrying--; carrying >= 0 && ended[carrying]; carrying-- {
						}
					}
					expected := appLabels
					if carrying >= 0 {
						expected = want[carrying]
					}
					checkLabels(t, fmt.Sprintf("goroutine after span%d End", i), currentLabels(t), expected)
				}
			})
		})
	}
}

// TestLabelKeysSorted checks that labelSet passes its keys in sorted
// order: pprof.Labels sorts and copies a list whose keys are out of
// order, which costs every span started a second allocation.
func TestLabelKeysSorted(t *testing.T) {
	tests := []struct {
		name                         string
		route, rootID, spanID, trace string
		want                         []string
	}{
		{"routed", "/users/{id}", "r", "s", "t", []string{LocalRootSpanIDKey, RouteKey, SpanIDKey, TraceIDKey}},
		{"local root known", "", "r", "s", "t", []string{LocalRootSpanIDKey, SpanIDKey, TraceIDKey}},
		{"no local root", "", "", "s", "t", []string{SpanIDKey, TraceIDKey}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := pprof.WithLabels(context.Background(), labelSet(tt.route, tt.rootID, tt.spanID, tt.trace))
			var got []string
			pprof.ForLabels(ctx, func(k, v string) bool {
				got = append(got, k)
				return true
			})
			if !slices.Equal(got, tt.want) {
				t.Errorf("labelSet keys = %q, want %q", got, tt.want)
			}
			// One allocation, the list: a sort would copy it.
			allocs := testing.AllocsPerRun(100, func() {
				labelSet(tt.route, tt.rootID, tt.spanID, tt.trace)
			})
			if allocs != 1 {
				t.Errorf("labelSet allocates %v times, want 1: its keys are out of order", allocs)
			}
		})
	}
}
