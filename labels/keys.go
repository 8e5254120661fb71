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
