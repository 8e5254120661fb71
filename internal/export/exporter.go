package export

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/url"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/grpc"
)

// Exporter sends one OTLP profiles request per collection window.
type Exporter = Sender[*collectorpb.ExportProfilesServiceRequest]

// Sender delivers requests of one kind: OTLP profiles requests, or the OTLP
// logs requests of the Splunk encoding. Retries and queueing work on any
// Sender, so both encodings share one delivery path. Export must honour
// ctx's deadline and must not retain req after it returns; when it does
// not return (an application's transport may ignore ctx), the delivery
// queue gives it up at its shutdown deadline. Implementations
// are safe for use by one goroutine at a time; the profiler serialises calls.
type Sender[R any] interface {
	Export(ctx context.Context, req R) error
	// Shutdown releases connections and files. Export must not be called after.
	Shutdown(ctx context.Context) error
}

// Protocol values, as spelled by OTEL_EXPORTER_OTLP_PROTOCOL.
const (
	ProtocolGRPC         = "grpc"
	ProtocolHTTPProtobuf = "http/protobuf"
	ProtocolHTTPJSON     = "http/json"
)

// OTLPConfig is the fully resolved configuration of an OTLP exporter. The
// root package turns options and environment variables into this; exporters
// never read the environment themselves.
type OTLPConfig struct {
	// Protocol is one of ProtocolGRPC, ProtocolHTTPProtobuf, ProtocolHTTPJSON.
	Protocol string
	// Endpoint is "host:port" for gRPC and the full URL (scheme, host, port
	// and path, e.g. "http://localhost:4318/v1development/profiles") for HTTP.
	Endpoint string
	// Insecure selects plaintext. For HTTP it must agree with the URL scheme.
	Insecure bool
	// TLS configures the client side of TLS: the roots that verify the
	// collector (RootCAs) and the certificate that proves the client for
	// mutual TLS (Certificates or GetClientCertificate). Nil verifies the
	// collector against the system roots without a client certificate. It
	// is ignored when Insecure is set, and copied, never modified.
	TLS *tls.Config
	// Headers are sent with every request (gRPC metadata or HTTP headers).
	Headers map[string]string
	// Timeout bounds one export attempt. Zero leaves the bound to the
	// context passed to Export; a negative value is rejected.
	Timeout time.Duration
	// Compression is "gzip" or "none".
	Compression string
	// UserAgent is sent as the User-Agent of HTTP requests and gRPC calls.
	UserAgent string
	// GRPCConn, if set, is the application's own connection: every gRPC
	// call goes through it, Endpoint, Insecure, TLS, DialOptions and
	// UserAgent are not used, gzip is asked for per call (gRPC's registered
	// compressor), and Shutdown leaves it open.
	GRPCConn *grpc.ClientConn
	// DialOptions are appended to the exporter's own when it dials its gRPC
	// connection, so they win where they conflict.
	DialOptions []grpc.DialOption
	// HTTPClient, if set, sends every HTTP request in place of the
	// exporter's own client: TLS and Proxy are not used, and Shutdown
	// leaves its connections alone. The exporter still refuses redirects
	// (on its own copy of the client); the bound on response headers is
	// the client's transport's (http.Transport.MaxResponseHeaderBytes).
	HTTPClient *http.Client
	// Proxy chooses the proxy of the exporter's own HTTP transport; nil
	// means http.ProxyFromEnvironment.
	Proxy func(*http.Request) (*url.URL, error)
	// JSON, if set, makes the HTTP exporter send OTLP/JSON bodies with it
	// (the http/json protocol). It is a value rather than a flag so that
	// the JSON codec, and protojson with it, is linked only into programs
	// that ask for it: see OTLPJSON.
	JSON *JSONCodec
	// OnPartialSuccess, if set, is called synchronously by Export when the
	// receiver accepted the request but rejected some profiles or attached
	// a warning. A partial success is not an error: the rejected profiles
	// must not be sent again, so Export returns nil.
	OnPartialSuccess func(rejected int64, message string)
}
