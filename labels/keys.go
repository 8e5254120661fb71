package labels

// The pprof label keys that carry the active span. The OTLP builder turns
// samples that carry both TraceIDKey and SpanIDKey into a Sample.link_index
// and removes the two labels from the sample attributes. Values are lower-case
// hex: 32 digits for the trace id, 16 for the span id, as in the W3C trace
// context.
const (
	TraceIDKey = "trace_id"
	SpanIDKey  = "span_id"
	// RootSpanNameKey carries the local root span's name when the user asked
	// for it (WithRootSpanName). It stays a sample attribute.
	RootSpanNameKey = "local_root_span_name"
)

// TraceLogCategory is the category of the runtime/trace log records that
// WrapTracerProvider's spans write while the execution tracer runs: at
// Start, on the goroutine the span's labels go to, with the trace id's 32
// hex digits followed by the span id's 16; at End, when it gives the
// goroutine back its previous labels, with the ids of the span those
// belong to, or an empty message for none. The execution trace carries no
// pprof labels, so these records are what ties its events to spans (the
// profiler's off-CPU profile reads them).
const TraceLogCategory = "pprofotel.span"
