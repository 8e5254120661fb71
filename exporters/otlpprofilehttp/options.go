package otlpprofilehttp

import (
	"crypto/tls"
	"net/http"
	"net/url"
	"time"

	"github.com/pprofotel/profiler/internal/export"
	"github.com/pprofotel/profiler/internal/export/otlpconfig"
)

// Option configures an Exporter.
type Option interface {
	apply(*otlpconfig.Settings)
}

type optionFunc func(*otlpconfig.Settings)

func (f optionFunc) apply(s *otlpconfig.Settings) { f(s) }

// WithEndpoint sets the receiver as "host:port", without a scheme; the
// request path is "/v1development/profiles" unless WithURLPath says
// otherwise. TLS is used unless WithInsecure is given (or an INSECURE
// variable is "true"). It replaces an earlier WithEndpointURL and takes
// precedence over the ENDPOINT variables.
func WithEndpoint(endpoint string) Option {
	return optionFunc(func(s *otlpconfig.Settings) { s.SetEndpoint(endpoint) })
}

// WithEndpointURL sets the receiver as a URL, used as given, path
// included; its scheme, http or https, selects plaintext or TLS. It
// replaces an earlier WithEndpoint and takes precedence over the ENDPOINT
// variables.
func WithEndpointURL(rawURL string) Option {
	return optionFunc(func(s *otlpconfig.Settings) { s.SetEndpointURL(rawURL) })
}

// WithURLPath sets the path of the requests, replacing the path of the
// endpoint however it was given. The default is "/v1development/profiles".
func WithURLPath(urlPath string) Option {
	return optionFunc(func(s *otlpconfig.Settings) { s.SetURLPath(urlPath) })
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
// effect on a plaintext endpoint. The configuration is copied.
func WithTLSClientConfig(tlsCfg *tls.Config) Option {
	return optionFunc(func(s *otlpconfig.Settings) { s.SetTLSClientConfig(tlsCfg) })
}

// WithHeaders sets the headers sent with every request. They replace,
// rather than add to, those of the HEADERS variables. The map is copied.
// New fails on a header net/http could not send, naming the header but
// never its value.
func WithHeaders(headers map[string]string) Option {
	return optionFunc(func(s *otlpconfig.Settings) { s.SetHeaders(headers) })
}

// WithTimeout bounds each attempt to send a request; retries get a bound
// of their own. The default is 10s, overridden by the TIMEOUT variables.
func WithTimeout(duration time.Duration) Option {
	return optionFunc(func(s *otlpconfig.Settings) { s.SetTimeout(duration) })
}

// Compression is the compression of request bodies.
type Compression int

const (
	// NoCompression sends bodies uncompressed (the default).
	NoCompression Compression = iota
	// GzipCompression compresses bodies with gzip.
	GzipCompression
)

// WithCompression sets the compression of request bodies. The default is
// NoCompression, overridden by the COMPRESSION variables.
func WithCompression(compression Compression) Option {
	return optionFunc(func(s *otlpconfig.Settings) {
		switch compression {
		case NoCompression:
			s.SetCompression("WithCompression", otlpconfig.CompressionNone)
		case GzipCompression:
			s.SetCompression("WithCompression", otlpconfig.CompressionGzip)
		default:
			s.Fail("WithCompression", int(compression), "want NoCompression or GzipCompression")
		}
	})
}

// WithProxy sets the function that chooses the proxy of each request, as
// http.Transport.Proxy does; by default it is http.ProxyFromEnvironment.
// It has no effect with WithHTTPClient.
func WithProxy(pf func(*http.Request) (*url.URL, error)) Option {
	return optionFunc(func(s *otlpconfig.Settings) { s.SetProxy(pf) })
}

// WithHTTPClient makes the exporter send with client. The client's
// transport takes the place of the exporter's own: WithTLSClientConfig,
// WithProxy and the certificate variables are not used, and Shutdown does
// not close the client's connections. The exporter still never follows a
// redirect (it sets its own CheckRedirect on a copy of client), bounds each
// attempt by WithTimeout, and returns when Export's context is done even if
// the client's transport ignores the request's context.
func WithHTTPClient(client *http.Client) Option {
	return optionFunc(func(s *otlpconfig.Settings) { s.SetHTTPClient(client) })
}

// WithJSON makes the exporter send OTLP/JSON bodies (the http/json
// protocol) instead of binary protobuf. OTLP/JSON is several times larger
// and slower to encode; it is for receivers that take nothing else. The
// JSON encoder is linked into a program only if it calls WithJSON.
func WithJSON() Option {
	codec := export.OTLPJSON()
	return optionFunc(func(s *otlpconfig.Settings) { s.SetJSON(codec) })
}

// RetryConfig says how a request the receiver could not take for now is
// sent again: after HTTP 429, 502, 503 or 504, or when no response
// arrived. When the receiver names a delay (Retry-After) the exporter
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

// WithMaxRequestBytes sets the largest request, in bytes of its protobuf
// encoding, that is sent whole. A larger one is split into requests that
// each fit, sent in order: by profile type first, then by samples, each
// with the part of the dictionary it uses, so the receiver gets every
// sample. The default, 4 MiB, is the default receive limit of gRPC
// servers, and so of the OpenTelemetry Collector's OTLP/gRPC receiver (its
// OTLP/HTTP receiver takes 20 MiB). New refuses less than 64 KiB, and more
// than 64 MiB, the largest request OTLP lets a client send. OTLP/JSON
// bodies are larger than the protobuf size measured here.
func WithMaxRequestBytes(bytes int) Option {
	return optionFunc(func(s *otlpconfig.Settings) { s.SetMaxRequestBytes(bytes) })
}
