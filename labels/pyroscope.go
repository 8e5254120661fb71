package labels

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// PyroscopeProfileIDKey is the span attribute that Grafana's trace view
// looks for to offer "Profiles for this span": its value is the span id,
// in lower-case hex, that the span's profile samples carry. Set with
// [WithPyroscopeProfileID].
const PyroscopeProfileIDKey = attribute.Key("pyroscope.profile.id")

// WithPyroscopeProfileID sets the attribute [PyroscopeProfileIDKey] on
// every sampled local root span, at Start, to the span's own id in
// lower-case hex (16 digits), as Grafana's otel-profiling-go does; other
// spans are left without it. Grafana, given a Tempo data source whose
// "Traces to profiles" names a Pyroscope data source, then offers the
// span's profile: the samples whose span_id is the root's, which are all
// of the request's with [WithLocalRootSpansOnly], and only those taken
// while no child span was current without it (docs/pyroscope.md).
// Without this option the wrapper sets no span attribute.
func WithPyroscopeProfileID() Option {
	return optionFunc(func(c *config) { c.pyroscopeProfileID = true })
}

// setPyroscopeProfileID gives the local root span span, whose id in hex is
// spanID, its PyroscopeProfileIDKey attribute. It is set on span, the
// wrapped tracer's, so that the wrapper does not look for a route in it.
func setPyroscopeProfileID(span trace.Span, spanID string) {
	span.SetAttributes(PyroscopeProfileIDKey.String(spanID))
}
