package profiler

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
)

// startForOneWindow starts a profiler of goroutines only with opts, stops
// it, which exports the one window, and returns Stop's error and the
// windows that failed. A window whose export fails before Stop begins its
// shutdown is counted as failed but is not in Stop's error.
func startForOneWindow(t *testing.T, opts ...Option) (stopErr error, failed int64) {
	t.Helper()
	opts = append([]Option{WithProfileTypes(GoroutineProfile), WithProcessContext(false),
		WithRetry(RetryConfig{Enabled: false})}, opts...)
	p, err := Start(opts...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	stopErr = p.Stop(context.Background())
	return stopErr, p.Stats().WindowsFailed
}

// goroutineTotal returns the sum of the goroutine samples of req.
func goroutineTotal(req *collectorpb.ExportProfilesServiceRequest) int64 {
	var n int64
	for _, rp := range req.GetResourceProfiles() {
		for _, sp := range rp.GetScopeProfiles() {
			for _, p := range sp.GetProfiles() {
				for _, s := range p.GetSamples() {
					for _, v := range s.GetValues() {
						n += v
					}
				}
			}
		}
	}
	return n
}

// TestExportThroughTheApplicationsGRPCConn sends a window through a
// connection the application dialled, with gzip asked for per call, and
// checks that Stop leaves the connection open and usable.
func TestExportThroughTheApplicationsGRPCConn(t *testing.T) {
	r := newReceiver()
	ln := startReceiverWith(t, r)
	var calls atomic.Int64
	var encoding atomic.Value
	conn, err := grpc.NewClient(ln, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			calls.Add(1)
			for _, o := range opts {
				if c, ok := o.(grpc.CompressorCallOption); ok {
					encoding.Store(c.CompressorType)
				}
			}
			return invoker(ctx, method, req, reply, cc, opts...)
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The endpoint variables name a port nobody listens on: the
	// application's connection takes their place.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")

	if err, _ := startForOneWindow(t, WithGRPCConn(conn), WithCompression(GzipCompression)); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	r.wait(t, 1)
	if n := goroutineTotal(r.requests[0]); n < 1 {
		t.Errorf("the window counts %d goroutines, want at least 1", n)
	}
	if calls.Load() != 1 {
		t.Errorf("%d calls went through the application's connection, want 1", calls.Load())
	}
	if e, _ := encoding.Load().(string); e != "gzip" {
		t.Errorf("the call asked for compressor %q, want gzip", e)
	}

	if s := conn.GetState(); s == connectivity.Shutdown {
		t.Fatal("Stop closed the application's connection")
	}
	if _, err := collectorpb.NewProfilesServiceClient(conn).Export(context.Background(), &collectorpb.ExportProfilesServiceRequest{}); err != nil {
		t.Errorf("the application's connection fails after Stop: %v", err)
	}
}

// TestDialOption checks that dial options reach the connection the
// exporter dials.
func TestDialOption(t *testing.T) {
	r := newReceiver()
	endpoint := startReceiver(t, "grpc", r)
	var calls atomic.Int64
	count := grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		calls.Add(1)
		return invoker(ctx, method, req, reply, cc, opts...)
	})
	if err, _ := startForOneWindow(t, WithEndpointURL(endpoint), WithProtocol(ProtocolGRPC), WithDialOption(count)); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	r.wait(t, 1)
	if calls.Load() != 1 {
		t.Errorf("%d calls went through the dial option's interceptor, want 1", calls.Load())
	}
}

// countingTransport counts the requests sent through it and the calls
// that close its idle connections.
type countingTransport struct {
	next      *http.Transport
	requests  atomic.Int64
	closeIdle atomic.Int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.requests.Add(1)
	return c.next.RoundTrip(req)
}

func (c *countingTransport) CloseIdleConnections() { c.closeIdle.Add(1) }

// TestExportThroughTheApplicationsHTTPClient sends a window with the
// application's client and checks that Stop leaves its connections alone
// and its redirect policy as it was, while the exporter still refuses
// redirects.
func TestExportThroughTheApplicationsHTTPClient(t *testing.T) {
	r := newReceiver()
	endpoint := startReceiver(t, "http/protobuf", r)
	transport := &countingTransport{next: &http.Transport{}}
	defer transport.next.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	// The protocol variable says gRPC: the client decides for HTTP.
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")

	if err, _ := startForOneWindow(t, WithHTTPClient(client), WithEndpointURL(endpoint+"/v1development/profiles")); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	r.wait(t, 1)
	if n := goroutineTotal(r.requests[0]); n < 1 {
		t.Errorf("the window counts %d goroutines, want at least 1", n)
	}
	if transport.requests.Load() != 1 {
		t.Errorf("%d requests went through the application's client, want 1", transport.requests.Load())
	}
	if transport.closeIdle.Load() != 0 {
		t.Error("Stop closed the idle connections of the application's client")
	}
	if client.CheckRedirect != nil {
		t.Error("the application's client got another redirect policy")
	}
	resp, err := client.Post(endpoint+"/v1development/profiles", "application/x-protobuf", nil)
	if err != nil {
		t.Fatalf("the application's client fails after Stop: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the application's client got %s after Stop", resp.Status)
	}

	t.Run("redirects are still refused", func(t *testing.T) {
		redirect := httptest.NewServer(http.RedirectHandler(endpoint+"/v1development/profiles", http.StatusTemporaryRedirect))
		defer redirect.Close()
		before := len(r.requests)
		seen := new(errorsSeen)
		otelHandler := otel.GetErrorHandler()
		otel.SetErrorHandler(seen)
		defer otel.SetErrorHandler(otelHandler)
		_, failed := startForOneWindow(t, WithHTTPClient(client), WithEndpointURL(redirect.URL+"/v1development/profiles"))
		if failed != 1 || len(seen.about("not followed")) != 1 {
			t.Fatalf("%d windows failed, errors %v; want the window undelivered because of the redirect", failed, seen.errs)
		}
		if len(r.requests) != before {
			t.Error("the exporter followed the redirect")
		}
	})
}

// TestProxy checks that the proxy function chooses the proxy of every
// request of the exporter's own transport.
func TestProxy(t *testing.T) {
	r := newReceiver()
	endpoint := startReceiver(t, "http/protobuf", r)
	var asked atomic.Int64
	proxy := func(*http.Request) (*url.URL, error) { asked.Add(1); return nil, nil }
	if err, _ := startForOneWindow(t, WithEndpointURL(endpoint+"/v1development/profiles"), WithProxy(proxy)); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	r.wait(t, 1)
	if asked.Load() != 1 {
		t.Errorf("the proxy function was asked %d times, want 1", asked.Load())
	}
}

func TestConnectionOptionErrors(t *testing.T) {
	conn, err := grpc.NewClient("127.0.0.1:1", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tests := []struct {
		opts []Option
		want string
	}{
		{[]Option{WithGRPCConn(nil)}, "profiler: WithGRPCConn(nil): connection must not be nil"},
		{[]Option{WithHTTPClient(nil)}, "profiler: WithHTTPClient(nil): client must not be nil"},
		{[]Option{WithProxy(nil)}, "profiler: WithProxy(nil): proxy function must not be nil"},
		{[]Option{WithGRPCConn(conn), WithHTTPClient(http.DefaultClient)}, "profiler: WithGRPCConn and WithHTTPClient: choose one transport"},
		{[]Option{WithGRPCConn(conn), WithProtocol(ProtocolHTTPJSON)}, "profiler: WithGRPCConn(conn): conflicts with WithProtocol(http/json): the connection speaks gRPC"},
		{[]Option{WithHTTPClient(http.DefaultClient), WithProtocol(ProtocolGRPC)}, "profiler: WithHTTPClient(client): conflicts with WithProtocol(grpc): the client speaks HTTP"},
	}
	for _, tt := range tests {
		_, err := newConfig(tt.opts, envOf(nil))
		if err == nil || err.Error() != tt.want {
			t.Errorf("err = %v, want %q", err, tt.want)
		}
	}
	// The HTTP client keeps http/json when asked for.
	c := mustConfig(t, []Option{WithHTTPClient(http.DefaultClient)}, map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})
	if c.otlp.Protocol != "http/json" || c.otlp.HTTPClient != http.DefaultClient {
		t.Errorf("protocol %q, client %v; want http/json with the given client", c.otlp.Protocol, c.otlp.HTTPClient)
	}
}

// startReceiverWith serves r over gRPC on loopback with the server options
// given and returns its host:port.
func startReceiverWith(t *testing.T, r *receiver, opts ...grpc.ServerOption) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	collectorpb.RegisterProfilesServiceServer(srv, r)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}
