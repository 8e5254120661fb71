package profiler

import (
	"fmt"

	"go.opentelemetry.io/otel/metric"
)

// minMaxRequestBytes is the smallest WithMaxRequestBytes accepts: below it
// the resource, a scope and a single deep stack might not fit in one
// request, and the window could not be sent at all.
const minMaxRequestBytes = 64 << 10

// deliverySettings is what the delivery options asked for. Zero values take
// the defaults of package delivery.
type deliverySettings struct {
	maxWindows      int
	maxBytes        int64
	maxRequestBytes int
	// meterProvider is nil unless WithMeterProvider was given.
	meterProvider metric.MeterProvider
}

// WithQueueLimits bounds the windows waiting to be exported while the
// receiver is slow or unreachable: at most windows of them, whose requests
// take at most bytes in protobuf encoding (the decoded requests the queue
// holds take a few times that in memory). When a new window does not fit,
// the oldest queued windows are dropped; drops are counted (Stats) and
// logged, at most one line a minute. The newest window is always kept,
// even when it alone exceeds bytes. The window being exported is not
// counted. The defaults are 10 windows and 16 MiB.
func WithQueueLimits(windows int, bytes int64) Option {
	return optionFunc(func(o *options) {
		if windows <= 0 || bytes <= 0 {
			o.fail("WithQueueLimits", fmt.Sprintf("%d, %d", windows, bytes), "both limits must be positive")
			return
		}
		o.delivery.maxWindows, o.delivery.maxBytes = windows, bytes
	})
}

// WithMaxRequestBytes sets the largest request, in bytes of its protobuf
// encoding, that is sent whole. A larger window is split into several
// requests that each fit: by profile type first, then by samples, each with
// the part of the dictionary it uses, so the receiver gets every sample
// and nothing is cut. The default, 4 MiB, is the default receive limit of
// gRPC servers and so of the OpenTelemetry Collector's OTLP/gRPC receiver
// (its OTLP/HTTP receiver accepts 20 MiB); raise it together with the
// receiver's limit (max_recv_msg_size_mib). OTLP/JSON bodies are larger than
// the protobuf size measured here. The minimum is 64 KiB.
func WithMaxRequestBytes(bytes int) Option {
	return optionFunc(func(o *options) {
		if bytes < minMaxRequestBytes {
			o.fail("WithMaxRequestBytes", bytes, fmt.Sprintf("must be at least %d (64 KiB)", minMaxRequestBytes))
			return
		}
		o.delivery.maxRequestBytes = bytes
	})
}
