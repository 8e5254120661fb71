// Package labels links profiling samples to OpenTelemetry spans.
//
// [WrapTracerProvider] wraps a [trace.TracerProvider]. While a sampled span
// started through the wrapper is current on a goroutine, that goroutine
// carries the runtime/pprof labels [TraceIDKey] and [SpanIDKey],
// [LocalRootSpanIDKey] naming the span's local root and, while a profiler
// runs, [RouteKey] naming the root's route, so CPU and goroutine
// profile samples taken meanwhile name the span and the request it serves.
// The application keeps using the OpenTelemetry API as before:
//
//	tp := sdktrace.NewTracerProvider(...)
//	otel.SetTracerProvider(labels.WrapTracerProvider(tp))
//
// The spans themselves are left alone: the wrapper adds no attribute, event
// or link to them, but for the one [WithPyroscopeProfileID] asks for.
//
// # Starting a span
//
// When a span that is both recording and sampled is started, the tracer:
//
//   - builds a label set from the pprof labels carried by the context passed
//     to Start (those added by [pprof.Do] or [pprof.WithLabels]) plus
//     TraceIDKey, SpanIDKey and LocalRootSpanIDKey: the span's own id for
//     a local root span, the one its parent carries for the others (none
//     when the parent was not started through a wrapper and the context
//     names no root); and RouteKey for a local root a profiler follows.
//     On a key clash the span's value wins.
//   - remembers the label set the calling goroutine has at that moment and
//     replaces it with the new one.
//   - returns a context that carries the new label set and the span, so
//     goroutines started with it and [pprof.Do] calls under it keep the
//     span's labels.
//
// Only labels carried by the context are merged: runtime/pprof offers no way
// to read a goroutine's labels, so labels installed with
// [pprof.SetGoroutineLabels] from a context that is not the one passed to
// Start (or a span started from [context.Background] inside [pprof.Do]) are
// absent while the span is current. They come back when the span ends.
//
// Spans that are not sampled (for example with sdktrace.NeverSample, or whose
// parent was not sampled), spans from tracers that do not record (such as
// the noop tracer), and, with [WithLocalRootSpansOnly], spans that are not
// local roots are returned exactly as the wrapped tracer returned them,
// together with its context: no goroutine's labels are touched.
//
// # Ending a span
//
// The first call to End gives the goroutine back the label set it had when
// the span was started, provided the goroutine calling End still carries the
// label set the span installed. This makes nested spans, ended in order,
// return to their parent's labels, and the outermost span to the
// application's own. A span that ends after its parent skips the labels of
// every enclosing span that has already ended: the goroutine returns to the
// innermost enclosing span still running, or to the application's labels,
// and no sample taken afterwards names an ended span.
//
// In every other case End leaves labels as they are:
//
//   - End called again does nothing more.
//   - End called on a goroutine that carries other labels (typically a
//     different goroutine from the one that started the span) changes
//     nothing on either goroutine. The starting goroutine keeps the span's
//     labels until they are next set by something else, for example
//     [pprof.Do] returning; samples it produces until then name the ended
//     span.
//   - End called on a goroutine that was started while the span was current,
//     and thus inherited its labels, gives that goroutine the labels the
//     starting goroutine had before Start, as if it had been started outside
//     the span. The starting goroutine is as in the previous case.
//   - If the application replaced the labels while the span was current
//     (pprof.SetGoroutineLabels without restoring them), its labels are kept.
//
// # Spans to label
//
// By default every sampled span is labelled, so samples point at the
// innermost span. [WithLocalRootSpansOnly] labels only local root spans:
// spans without a parent in this process (no parent, a remote parent, or a
// new root). Their descendants in the process then run with the root's
// labels, which is cheaper when spans are many and short.
//
// # Routes and requests
//
// A local root span is a request. While a profiler runs, the wrapper tells
// it of every sampled local root span: its start, its end, and its
// route, which is its http.route attribute (the semantic conventions'
// key, given to Start with [trace.WithAttributes] or set later with
// SetAttributes) when it has one, and otherwise its name, as last set with
// SetName: HTTP middleware often learns the route only after the span
// started. While a profiler runs, the root's goroutine, and the spans and
// goroutines started under it, carry the route the root starts with as
// the label [RouteKey]; http.route set later with SetAttributes, on the
// goroutine that carries the root's labels, replaces that goroutine's
// label from then on, and the spans started under the root afterwards
// take it (spans and goroutines started before keep theirs). A
// name set later does not change the label: instrumentation that names
// the span as it ends would only pay for it. The profiler sends the
// route of a sample's local root as the sample attribute "route",
// the root's last route when its window remembers it, else the label's,
// at most a bounded number of distinct values per window (the profiler's
// WithMaxRoutes), and counts the requests that ended in each window by
// route. Without a profiler no route label is set: a span name with
// ids in it would be a label value per request.
//
// # Wrapped spans
//
// Labelled spans are returned as a wrapper that forwards every method to the
// span made by the wrapped tracer, except that TracerProvider returns the
// wrapping provider, so spans started from it are labelled too. Code that
// type-asserts spans from the context to a concrete SDK type (such as
// sdktrace.ReadWriteSpan) does not see the SDK span through the wrapper.
// Spans returned unchanged return the wrapped provider from TracerProvider.
// A panic unwinding through a deferred End reaches the wrapped span's End as
// it would without the wrapper, so the SDK still records it on the span.
//
// # Cost
//
// A labelled span costs five allocations on top of the wrapped tracer's,
// six when its labels are merged with a parent's: runtime/pprof builds the
// label set and the context holding it, one string holds both hex ids, and
// one object is both the span wrapper and the returned context. A local
// root span costs one more while a profiler runs, the request the
// profiler follows, and ending it stores its end time. Unlabelled spans
// cost nothing. Reading and restoring a goroutine's label set uses the
// two runtime functions behind [pprof.SetGoroutineLabels], reached with a
// go:linkname directive; the Go runtime keeps them for this use
// (go.dev/issue/67401).
// Ending a span compares two pointers; it parses no goroutine id or stack.
package labels
