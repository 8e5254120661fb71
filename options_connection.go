package profiler

import (
	"errors"
	"net/http"
	"net/url"
	"slices"

	"google.golang.org/grpc"
)

// connectionOptions are the options that hand the OTLP exporter a
// connection, or a way to make one, that the application owns; their names
// and meaning are those of otel-go's otlptracegrpc and otlptracehttp.
type connectionOptions struct {
	grpcConn    *grpc.ClientConn
	dialOptions []grpc.DialOption
	httpClient  *http.Client
	proxy       func(*http.Request) (*url.URL, error)
}

// WithGRPCConn makes the OTLP exporter send over conn, a gRPC connection the
// application already has (to its Collector, say), and selects gRPC as the
// protocol. It takes precedence over the settings that make a connection:
// WithEndpoint, WithEndpointURL, WithInsecure, WithTLSClientConfig,
// WithDialOption and their environment variables are not used; headers,
// timeout and gzip compression (asked for per call) still apply. The
// profiler never closes conn: closing it, after Stop, is the caller's
// responsibility. Together with WithProtocol naming an HTTP protocol, or
// with WithHTTPClient, Start fails.
func WithGRPCConn(conn *grpc.ClientConn) Option {
	return optionFunc(func(o *options) {
		if conn == nil {
			o.fail("WithGRPCConn", "nil", "connection must not be nil")
			return
		}
		o.conn.grpcConn = conn
	})
}

// WithDialOption adds options to those the OTLP exporter dials its gRPC
// connection with, after its own, so that they win where they conflict
// (interceptors, keepalive, a custom dialer). Calls add up. They have no
// effect over HTTP or with WithGRPCConn.
func WithDialOption(opts ...grpc.DialOption) Option {
	opts = slices.Clone(opts)
	return optionFunc(func(o *options) {
		o.conn.dialOptions = append(o.conn.dialOptions, opts...)
	})
}

// WithHTTPClient makes the OTLP exporter send with client, and selects
// OTLP/HTTP: http/protobuf, or http/json when WithProtocol or the protocol
// variables say so. The client's transport takes the place of the
// exporter's own: WithTLSClientConfig, WithProxy and the certificate
// variables are not used, and Stop does not close the client's
// connections. The exporter still never follows a redirect (it sets its
// own CheckRedirect on a copy of client, which stays as given) and still
// bounds each attempt by WithTimeout. Bounding the size of response
// headers is left to the client's transport
// (http.Transport.MaxResponseHeaderBytes; the exporter's own allows 64
// KiB). Together with WithProtocol(ProtocolGRPC), or with WithGRPCConn,
// Start fails. It has no effect on the Splunk exporter, which speaks gRPC.
func WithHTTPClient(client *http.Client) Option {
	return optionFunc(func(o *options) {
		if client == nil {
			o.fail("WithHTTPClient", "nil", "client must not be nil")
			return
		}
		o.conn.httpClient = client
	})
}

// WithProxy sets the function that chooses the proxy of each OTLP/HTTP
// request, as http.Transport.Proxy does; by default it is
// http.ProxyFromEnvironment (HTTPS_PROXY, HTTP_PROXY, NO_PROXY). It has no
// effect over gRPC or with WithHTTPClient.
func WithProxy(proxy func(*http.Request) (*url.URL, error)) Option {
	return optionFunc(func(o *options) {
		if proxy == nil {
			o.fail("WithProxy", "nil", "proxy function must not be nil")
			return
		}
		o.conn.proxy = proxy
	})
}

// protocol returns the protocol the connection options leave of the one
// the options and variables chose: an application's connection decides
// the transport. Conflicts between options are programming errors,
// recorded in o.
func (c connectionOptions) protocol(o *options, chosen string) string {
	switch {
	case c.grpcConn != nil && c.httpClient != nil:
		o.errs = append(o.errs, errors.New("profiler: WithGRPCConn and WithHTTPClient: choose one transport"))
	case c.grpcConn != nil:
		if o.protocol != nil && *o.protocol != ProtocolGRPC {
			o.fail("WithGRPCConn", "conn", "conflicts with WithProtocol("+string(*o.protocol)+"): the connection speaks gRPC")
		}
		return string(ProtocolGRPC)
	case c.httpClient != nil:
		if o.protocol != nil && *o.protocol == ProtocolGRPC {
			o.fail("WithHTTPClient", "client", "conflicts with WithProtocol(grpc): the client speaks HTTP")
		}
		if chosen == string(ProtocolGRPC) {
			return string(ProtocolHTTPProtobuf)
		}
	}
	return chosen
}
