package splunk

import (
	"crypto/tls"
	"slices"
	"time"

	"google.golang.org/grpc"

	"github.com/pprofotel/profiler/internal/export"
	"github.com/pprofotel/profiler/internal/export/otlpconfig"
)

// Option configures an Exporter.
type Option interface {
	apply(*otlpconfig.Settings)
}

type optionFunc func(*otlpconfig.Settings)

func (f optionFunc) apply(s *otlpconfig.Settings) { f(s) }

// WithEndpoint sets the receiver as "host:port", without a scheme. TLS is
// used unless WithInsecure is given (or an INSECURE variable is "true").
// It replaces an earlier WithEndpointURL and takes precedence over
// SPLUNK_PROFILER_LOGS_ENDPOINT and OTEL_EXPORTER_OTLP_ENDPOINT.
func WithEndpoint(endpoint string) Option {
	return optionFunc(func(s *otlpconfig.Settings) { s.SetEndpoint(endpoint) })
}

// WithEndpointURL sets the receiver as a URL whose scheme, http or https,
// selects plaintext or TLS; only its host and port are used, a missing
// port being the scheme's (80 or 443). It replaces an earlier WithEndpoint
// and takes precedence over SPLUNK_PROFILER_LOGS_ENDPOINT and
// OTEL_EXPORTER_OTLP_ENDPOINT.
func WithEndpointURL(rawURL string) Option {
	return optionFunc(func(s *otlpconfig.Settings) { s.SetEndpointURL(rawURL) })
}

// WithInsecure disables TLS for an endpoint given as host:port. An
// endpoint given as a URL is secured according to its scheme instead, so
// WithInsecure with an https URL in WithEndpointURL makes New fail.
func WithInsecure() Option {
	return optionFunc(func(s *otlpconfig.Settings) { s.SetInsecure() })
}

// WithTLSClientConfig sets the TLS configuration: the roots that verify the
// receiver (RootCAs) and, for mutual TLS, the client's certificate
// (Certificates or GetClientCertificate). It replaces the CERTIFICATE,
// CLIENT_CERTIFICATE and CLIENT_KEY variables, all at once, and has no
// effect on a plaintext endpoint or with WithGRPCConn. The configuration is
// copied.
func WithTLSClientConfig(tlsCfg *tls.Config) Option {
	return optionFunc(func(s *otlpconfig.Settings) { s.SetTLSClientConfig(tlsCfg) })
}

// WithHeaders sets the metadata sent with every call. They replace, rather
// than add to, those of the HEADERS variables. The map is copied. New fails
// on a key gRPC could not send (outside 0-9 a-z - _ . once lower-cased) or
// a value that is not printable ASCII on a key without the -bin suffix,
// naming the key but never the value.
func WithHeaders(headers map[string]string) Option {
	return optionFunc(func(s *otlpconfig.Settings) { s.SetHeaders(headers) })
}

// WithTimeout bounds each attempt to send a request; retries get a bound
// of their own. The default is 10s, overridden by the TIMEOUT variables.
func WithTimeout(duration time.Duration) Option {
	return optionFunc(func(s *otlpconfig.Settings) { s.SetTimeout(duration) })
}

// WithCompressor sets the compression of requests: "gzip" or "none". The
// default is "none", overridden by the COMPRESSION variables. On the
// exporter's own connection gzip is a compressor of that connection alone,
// whatever level the application set for gRPC's registered one; with
// WithGRPCConn it is the registered one, asked for per call.
func WithCompressor(compressor string) Option {
	return optionFunc(func(s *otlpconfig.Settings) { s.SetCompression("WithCompressor", compressor) })
}

// WithGRPCConn makes the exporter send over conn, a connection the
// application already has (to its Collector, say), which must serve the
// OTLP LogsService. It takes precedence
// over the settings that make a connection: WithEndpoint, WithEndpointURL,
// WithInsecure, WithTLSClientConfig, WithDialOption and their variables
// are not used; headers, timeout and compression still apply. The exporter
// never closes conn: closing it, after Shutdown, is the caller's
// responsibility.
func WithGRPCConn(conn *grpc.ClientConn) Option {
	return optionFunc(func(s *otlpconfig.Settings) { s.SetGRPCConn(conn) })
}

// WithDialOption adds options to those the exporter dials its connection
// with, after its own, so that they win where they conflict (interceptors,
// keepalive, a custom dialer). Calls add up. They have no effect with
// WithGRPCConn.
func WithDialOption(opts ...grpc.DialOption) Option {
	opts = slices.Clone(opts)
	return optionFunc(func(s *otlpconfig.Settings) { s.AddDialOptions(opts) })
}

// RetryConfig says how a request the receiver could not take for now is
// sent again: after the codes CANCELLED, DEADLINE_EXCEEDED, ABORTED,
// OUT_OF_RANGE, UNAVAILABLE and DATA_LOSS, and RESOURCE_EXHAUSTED with a
// RetryInfo. When the receiver names a delay (RetryInfo) the exporter
// waits exactly that long; otherwise it backs off exponentially, each wait
// drawn at random from the upper half of the current interval, which
// grows by half after each retry. No retry starts after the deadline of
// Export's context.
type RetryConfig struct {
	// Enabled turns retrying on. When false every request is attempted
	// once.
	Enabled bool
	// InitialInterval is the longest wait before the first retry. Zero
	// means 5s.
	InitialInterval time.Duration
	// MaxInterval caps the interval. Zero means 30s. It does not shorten
	// a delay named by the receiver.
	MaxInterval time.Duration
	// MaxElapsedTime bounds the time spent on one request, retries
	// included: a retry that would start later is not made. Zero means 1m.
	MaxElapsedTime time.Duration
}

// WithRetry sets the retry policy. The default is enabled, with
// InitialInterval 5s, MaxInterval 30s and MaxElapsedTime 1m, as in the
// OpenTelemetry Go OTLP exporters. New fails on a negative duration or a
// MaxInterval below InitialInterval.
func WithRetry(rc RetryConfig) Option {
	return optionFunc(func(s *otlpconfig.Settings) { s.SetRetry(export.RetryConfig(rc)) })
}

// WithMaxRequestBytes sets the largest logs request, in bytes of its
// protobuf encoding, that is sent whole. A larger one is split between its
// records into requests that each fit, sent in order; a record cannot be
// cut without breaking its pprof body, so a window whose one record is
// larger fails to export, with an error saying so. The default, 4 MiB, is the default receive limit of gRPC servers
// and so of the OpenTelemetry Collector's OTLP/gRPC receiver; raise it
// together with the receiver's (max_recv_msg_size_mib). New refuses less
// than 64 KiB, and more than 64 MiB, the largest request OTLP lets a
// client send.
func WithMaxRequestBytes(bytes int) Option {
	return optionFunc(func(s *otlpconfig.Settings) { s.SetMaxRequestBytes(bytes) })
}
