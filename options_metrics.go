package profiler

import "go.opentelemetry.io/otel/metric"

// WithMeterProvider sets the MeterProvider that receives the profiler's own
// metrics (see Stats for what they count). By default they go to the global
// MeterProvider, otel.GetMeterProvider(), which discards them unless the
// application installs one, before or after Start. A nil provider keeps the
// default.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(o *options) { o.delivery.meterProvider = mp })
}
