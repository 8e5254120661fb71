package labels

import "github.com/pprofotel/profiler/internal/labelkey"

// The pprof label keys that carry the active span. The OTLP builder turns
// samples that carry both TraceIDKey and SpanIDKey into a Sample.link_index
// and removes the two labels from the sample attributes. Values are lower-case
// hex: 32 digits for the trace id, 16 for the span ids, as in the W3C trace
// context. Every key is at most 15 bytes long, the longest the
// OpenTelemetry eBPF profiler reads whole.
const (
	TraceIDKey = labelkey.TraceID
	SpanIDKey  = labelkey.SpanID
	// LocalRootSpanIDKey carries the span id of the active span's local
	// root: the span with no parent span in this process that the active
	// one descends from, or is. The profiler maps it to the root's
	// route (its http.route, else its name) and sends the route as
	// the sample attribute "route" in its place.
	LocalRootSpanIDKey = labelkey.LocalRootSpanID
	// RouteKey carries, while a profiler runs, the route of the
	// active span's local root as the root started: its http.route if
	// Start was given one, else its name. The profiler sends the root's
	// route as it ended when it knows it, this one otherwise, bounded
	// per window, as the sample attribute of the same name.
	RouteKey = labelkey.Route
)

// TraceLogCategory is the category of the runtime/trace log records that
// WrapTracerProvider's spans write while the execution tracer runs, on the
// goroutine whose labels change: at Start, and at the End that gives the
// goroutine back its previous labels. The message names the span whose
// labels the goroutine carries from then on and, after a semicolon, the
// one whose labels it carried until then; a span is its trace id's 32 hex
// digits, its span id's 16 and its local root span id's 16 (zeros when
// the root is not known), one after the other, and none is empty. While a
// profiler's request tracker runs, a third field may follow, after a
// second semicolon: the route of the request of the span named first, to
// the end of the message (a route may hold semicolons); a route given
// later, or a new name a local root ends with, is logged again, naming
// the same span twice: the route the request's records name from then on,
// and the one its earlier ones take (a window gives every sample of a
// request its last route). The execution
// trace carries no pprof labels, so these records are what ties its events
// to spans (the profiler's off-CPU profile reads them); the span before
// is what ties the waits of a goroutine whose span began before the trace
// did.
const TraceLogCategory = labelkey.TraceLogCategory
