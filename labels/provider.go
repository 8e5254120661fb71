package labels

import (
	"cmp"
	"context"
	"reflect"
	"runtime/pprof"
	rtrace "runtime/trace"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/pprofotel/profiler/internal/collect/requests"
)

// WrapTracerProvider returns a TracerProvider whose tracers start spans with
// tp and label the starting goroutine with the ids of the sampled ones, as
// described in the package documentation. Every other call is passed to tp.
//
// A nil tp is taken as a provider that records nothing. Wrapping a provider
// returned by WrapTracerProvider wraps its underlying provider with the new
// options, so spans are not labelled twice.
func WrapTracerProvider(tp trace.TracerProvider, opts ...Option) trace.TracerProvider {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	if w, ok := tp.(*tracerProvider); ok {
		tp = w.wrapped
	}
	return &tracerProvider{wrapped: tp, config: newConfig(opts)}
}

// tracerProvider is the TracerProvider returned by WrapTracerProvider.
type tracerProvider struct {
	embedded.TracerProvider

	wrapped trace.TracerProvider
	config  config
}

// Tracer returns a tracer that starts spans with the wrapped provider's
// tracer of the same name and options.
func (p *tracerProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return &tracer{wrapped: p.wrapped.Tracer(name, opts...), provider: p}
}

// tracer labels the goroutines running the spans it starts.
type tracer struct {
	embedded.Tracer

	wrapped  trace.Tracer
	provider *tracerProvider
}

// Start starts a span with the wrapped tracer and, if it is sampled and
// recording, installs its labels on the calling goroutine and in the
// returned context.
func (t *tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	parentCtx := ctx
	ctx, parentSpan, parent := unwrapParent(ctx)
	ctx, span := t.wrapped.Start(ctx, name, opts...)

	sc := span.SpanContext()
	if !sc.IsSampled() || !span.IsRecording() {
		return ctx, span
	}
	root := isLocalRoot(parentSpan.SpanContext(), sc)
	if t.provider.config.localRootsOnly && !root {
		return ctx, span
	}

	// The ids share one string; the label sets refer to it, not to the
	// span, so label sets inherited by long-lived goroutines keep only
	// the ids alive, not the span and its attributes.
	var buf [idsLen]byte
	ids := string(appendIDs(buf[:0], sc))
	traceID, spanID := ids[:2*len(trace.TraceID{})], ids[2*len(trace.TraceID{}):]
	rootID := spanID
	if !root {
		rootID = parentRootID(parent, parentCtx)
	}

	var request *requests.Request
	var route string
	if root {
		request, route = beginRequest(span, ids, name, opts)
	} else if e, ok := parent.routedRoute(); ok {
		// The parent's context carries the route its root started
		// with; the root's goroutine carries the route since.
		route = e
	}
	ctx = pprof.WithLabels(ctx, labelSet(route, rootID, spanID, traceID))

	s := &labeledSpan{Span: span, Context: ctx, provider: t.provider, ids: ids, rootID: rootID, request: request}
	switch {
	case request != nil:
		s.root = s
	case parent != nil && !root:
		s.root = parent.root
	}
	if root && t.provider.config.pyroscopeProfileID {
		setPyroscopeProfileID(span, spanID)
	}
	s.previous = goroutineLabelSet()
	if parent != nil && parent.carries(s.previous) {
		s.parent = parent
	}
	pprof.SetGoroutineLabels(ctx)
	s.installed = goroutineLabelSet()
	if rtrace.IsEnabled() {
		logSpanSwitch(s, s.parent, s.logRoute())
	}
	if spanContextKey == nil {
		return trace.ContextWithSpan(ctx, s), s
	}
	return s, s
}

// unwrapParent returns ctx with the wrapped tracer's own span as its
// current span, the span current in ctx, and that span when it is a
// labeledSpan. The wrapped tracer is shown its own span as the parent:
// the SDK keeps per-parent bookkeeping (child span counts) only for its
// own type.
func unwrapParent(ctx context.Context) (context.Context, trace.Span, *labeledSpan) {
	if parent, ok := ctx.(*labeledSpan); ok {
		// The context returned with the parent: the one under it differs
		// only in its current span, which is the wrapped one.
		return parent.Context, parent, parent
	}
	parentSpan := trace.SpanFromContext(ctx)
	parent, ok := parentSpan.(*labeledSpan)
	if ok {
		ctx = trace.ContextWithSpan(ctx, parent.Span)
	}
	return ctx, parentSpan, parent
}

// labelSet returns the labels of a span: its ids, its local root's, and
// its request's route unless route is "" (the labels the span is started
// under then keep theirs). Keys are passed in sorted order
// (TestLabelKeysSorted), which spares pprof.Labels a sort and a copy.
func labelSet(route, rootID, spanID, traceID string) pprof.LabelSet {
	switch {
	case route != "":
		return pprof.Labels(LocalRootSpanIDKey, rootID, RouteKey, route, SpanIDKey, spanID, TraceIDKey, traceID)
	case rootID != "":
		return pprof.Labels(LocalRootSpanIDKey, rootID, SpanIDKey, spanID, TraceIDKey, traceID)
	}
	return pprof.Labels(SpanIDKey, spanID, TraceIDKey, traceID)
}

// parentRootID returns the local root span id of the span started under
// parent, the labelled span found in parentCtx (nil if none), or under
// the labels parentCtx carries; "" when neither names one (the parent was
// started by another tracker, say).
func parentRootID(parent *labeledSpan, parentCtx context.Context) string {
	if parent != nil {
		return parent.rootID
	}
	id, _ := pprof.Label(parentCtx, LocalRootSpanIDKey)
	return id
}

// beginRequest tells the profiler's request tracker, if one is installed,
// of the local root span started under name, with its route when the start
// options give one, and returns the request and the route its labels
// carry; nil and "" while no tracker is installed. The request starts when
// the SDK's span does, read from the span rather than the clock when the
// span tells it.
func beginRequest(span trace.Span, ids, name string, opts []trace.SpanStartOption) (*requests.Request, string) {
	if !requests.Tracking() {
		return nil, ""
	}
	var start time.Time
	if s, ok := span.(interface{ StartTime() time.Time }); ok {
		start = s.StartTime()
	}
	if start.IsZero() {
		start = time.Now()
	}
	var route string
	if len(opts) > 0 {
		route = startHTTPRoute(opts)
	}
	r := requests.Begin(ids, name, route, start)
	if r == nil {
		return nil, ""
	}
	// The route its labels carry, as requests.Begin says.
	return r, cmp.Or(route, name)
}

// startHTTPRoute returns the route among the attributes opts give a span,
// "" if none. Reading them through trace.NewSpanStartConfig applies every
// option and copies the attributes, for a route that is rarely there
// (HTTP instrumentation sets it once the router has matched): a third of
// what following a request cost a span started with options. So the
// attributes options (attributesOption) are read in place, and the others
// skipped; NewSpanStartConfig remains for a version of package trace whose
// options are not what attributesOption expects.
func startHTTPRoute(opts []trace.SpanStartOption) string {
	if attributesOption == nil {
		cfg := trace.NewSpanStartConfig(opts...)
		return httpRoute(cfg.Attributes())
	}
	var route string
	for _, o := range opts {
		if reflect.TypeOf(o) != attributesOption {
			continue
		}
		// A slice of attribute.KeyValue, as findAttributesOption checked:
		// its elements are read where they are. (Through reflect, a
		// pointer to each costs a lookup of the pointer type.)
		v := reflect.ValueOf(o)
		if e := httpRoute(unsafe.Slice((*attribute.KeyValue)(v.UnsafePointer()), v.Len())); e != "" {
			route = e
		}
	}
	return route
}

// attributesOption is the type of the options trace.WithAttributes
// returns, a slice of the attributes, as found by looking at one; nil if
// it is not such a slice, and then startHTTPRoute applies the options.
var attributesOption = findAttributesOption()

func findAttributesOption() reflect.Type {
	want := attribute.String("k", "v")
	v := reflect.ValueOf(trace.WithAttributes(want))
	if v.Kind() != reflect.Slice || v.Type().Elem() != reflect.TypeFor[attribute.KeyValue]() || v.Len() != 1 {
		return nil
	}
	if got := unsafe.Slice((*attribute.KeyValue)(v.UnsafePointer()), v.Len()); got[0] != want {
		return nil
	}
	return v.Type()
}

// setHTTPRoute gives r the route among attrs, if there is one, and reports
// whether there was.
func setHTTPRoute(r *requests.Request, attrs []attribute.KeyValue) bool {
	route := httpRoute(attrs)
	if route == "" {
		return false
	}
	r.SetHTTPRoute(route)
	return true
}

// httpRoute returns the last non-empty http.route among attrs, "" if
// there is none.
func httpRoute(attrs []attribute.KeyValue) string {
	var route string
	for i := range attrs {
		if isHTTPRoute(&attrs[i]) && attrs[i].Value.AsString() != "" {
			route = attrs[i].Value.AsString()
		}
	}
	return route
}

// isHTTPRoute reports whether a is the semantic conventions' http.route.
func isHTTPRoute(a *attribute.KeyValue) bool {
	return a.Key == semconv.HTTPRouteKey && a.Value.Type() == attribute.STRING
}

// isLocalRoot reports whether the span with context sc, started under
// the span with context psc (the starting context's current span, taken
// from it once), has no parent span in this process: no parent at all, a
// remote one, or a parent of another trace (the span was started as a new
// root).
func isLocalRoot(psc, sc trace.SpanContext) bool {
	return !psc.IsValid() || psc.IsRemote() || psc.TraceID() != sc.TraceID()
}
