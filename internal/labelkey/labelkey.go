// Package labelkey holds the pprof label keys and the trace log category
// through which package labels tells the collector which span a goroutine
// runs. Package labels exports them; the collector and the converter read
// them from here, so that no internal package imports a public one.
package labelkey

// The pprof label keys that carry the active span; package labels
// documents them (TraceIDKey, SpanIDKey, LocalRootSpanIDKey, RouteKey).
const (
	TraceID         = "trace_id"
	SpanID          = "span_id"
	LocalRootSpanID = "local_root_id"
	Route           = "route"
)

// TraceLogCategory is the category of the runtime/trace log records that
// tie an execution trace's events to spans; package labels documents it.
const TraceLogCategory = "pprofotel.span"
