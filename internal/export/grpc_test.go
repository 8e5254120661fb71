package export

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/testutil/otlptest"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// fakeCollector is an in-process ProfilesService. It records what it
// receives and answers with resp or err. With block set it never answers:
// the call returns only when the client gives up.
type fakeCollector struct {
	collectorpb.UnimplementedProfilesServiceServer

	mu          sync.Mutex
	requests    []*collectorpb.ExportProfilesServiceRequest
	md          []metadata.MD
	compression []string

	resp  *collectorpb.ExportProfilesServiceResponse
	err   error
	block bool
}

func (c *fakeCollector) Export(ctx context.Context, req *collectorpb.ExportProfilesServiceRequest) (*collectorpb.ExportProfilesServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	c.mu.Lock()
	c.requests = append(c.requests, req)
	c.md = append(c.md, md)
	c.mu.Unlock()
	if c.block {
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	if c.err != nil {
		return nil, c.err
	}
	if c.resp != nil {
		return c.resp, nil
	}
	return &collectorpb.ExportProfilesServiceResponse{}, nil
}

// The stats.Handler methods record the compression of each incoming call,
// which the server does not expose as metadata.

func (c *fakeCollector) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return ctx
}

func (c *fakeCollector) HandleRPC(_ context.Context, s stats.RPCStats) {
	if h, ok := s.(*stats.InHeader); ok {
		c.mu.Lock()
		c.compression = append(c.compression, h.Compression)
		c.mu.Unlock()
	}
}

func (c *fakeCollector) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}

func (c *fakeCollector) HandleConn(context.Context, stats.ConnStats) {}

// startGRPC serves c on a loopback port and returns its address.
func startGRPC(t *testing.T, c *fakeCollector, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	srv := grpc.NewServer(append(opts, grpc.StatsHandler(c))...)
	collectorpb.RegisterProfilesServiceServer(srv, c)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return lis.Addr().String()
}

func newTestGRPC(t *testing.T, cfg OTLPConfig) Exporter {
	t.Helper()
	cfg.Protocol = ProtocolGRPC
	e, err := NewOTLP(cfg)
	if err != nil {
		t.Fatalf("NewOTLP: %v", err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return e
}

func TestGRPCExport(t *testing.T) {
	tests := []struct {
		name            string
		compression     string
		headers         map[string]string
		userAgent       string
		wantCompression string
	}{
		{name: "plain", compression: "", wantCompression: ""},
		{name: "none", compression: "none", headers: map[string]string{"X-Tenant": "team-a"}, wantCompression: ""},
		{
			// A user header must not override the protocol's own.
			name: "version header", headers: map[string]string{"OTLP-Profiles-Development-Version": "2", "X-Tenant": "b"},
		},
		{
			name:            "gzip with headers and user agent",
			compression:     "gzip",
			headers:         map[string]string{"Authorization": "Bearer s3cret", "x-scope": "profiles"},
			userAgent:       "pprofotel/0.1.0",
			wantCompression: "gzip",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &fakeCollector{}
			addr := startGRPC(t, c)
			e := newTestGRPC(t, OTLPConfig{
				Endpoint:    addr,
				Insecure:    true,
				Headers:     tt.headers,
				Timeout:     10 * time.Second,
				Compression: tt.compression,
				UserAgent:   tt.userAgent,
			})
			sent := []*collectorpb.ExportProfilesServiceRequest{otlptest.Request(1), otlptest.Request(2)}
			for _, req := range sent {
				if err := e.Export(context.Background(), req); err != nil {
					t.Fatalf("Export: %v", err)
				}
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			if len(c.requests) != len(sent) {
				t.Fatalf("server got %d requests, want %d", len(c.requests), len(sent))
			}
			for i := range sent {
				if !proto.Equal(c.requests[i], sent[i]) {
					t.Errorf("request %d differs:\ngot  %v\nwant %v", i, c.requests[i], sent[i])
				}
				md := c.md[i]
				if got := md.Get(profilesVersionKey); len(got) != 1 || got[0] != "1" {
					t.Errorf("request %d metadata %s = %q, want [1]", i, profilesVersionKey, got)
				}
				for k, v := range tt.headers {
					if strings.EqualFold(k, profilesVersionKey) {
						continue
					}
					if got := md.Get(k); len(got) != 1 || got[0] != v {
						t.Errorf("request %d metadata %q = %q, want [%q]", i, k, got, v)
					}
				}
				ua := md.Get("user-agent")
				if len(ua) != 1 || (tt.userAgent != "" && !strings.HasPrefix(ua[0], tt.userAgent+" ")) {
					t.Errorf("request %d user-agent = %q, want prefix %q", i, ua, tt.userAgent)
				}
				if c.compression[i] != tt.wantCompression {
					t.Errorf("request %d compression = %q, want %q", i, c.compression[i], tt.wantCompression)
				}
			}
		})
	}
}

func TestGRPCPartialSuccess(t *testing.T) {
	tests := []struct {
		name         string
		ps           *collectorpb.ExportProfilesPartialSuccess
		wantCalls    int
		wantRejected int64
		wantMessage  string
	}{
		{"unset", nil, 0, 0, ""},
		{"empty is full success", &collectorpb.ExportProfilesPartialSuccess{}, 0, 0, ""},
		{"rejected", &collectorpb.ExportProfilesPartialSuccess{RejectedProfiles: 3, ErrorMessage: "too old"}, 1, 3, "too old"},
		{"warning only", &collectorpb.ExportProfilesPartialSuccess{ErrorMessage: "deprecated field"}, 1, 0, "deprecated field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &fakeCollector{resp: &collectorpb.ExportProfilesServiceResponse{PartialSuccess: tt.ps}}
			addr := startGRPC(t, c)
			var calls int
			var rejected int64
			var message string
			e := newTestGRPC(t, OTLPConfig{
				Endpoint: addr,
				Insecure: true,
				OnPartialSuccess: func(r int64, m string) {
					calls++
					rejected, message = r, m
				},
			})
			if err := e.Export(context.Background(), otlptest.Request(1)); err != nil {
				t.Fatalf("Export = %v, want nil for a partial success", err)
			}
			if calls != tt.wantCalls || rejected != tt.wantRejected || message != tt.wantMessage {
				t.Fatalf("OnPartialSuccess calls=%d (%d, %q); want calls=%d (%d, %q)",
					calls, rejected, message, tt.wantCalls, tt.wantRejected, tt.wantMessage)
			}
		})
	}
}

func TestGRPCErrors(t *testing.T) {
	tests := []struct {
		name      string
		st        *status.Status
		wantRetry bool
		wantDelay time.Duration
	}{
		{"invalid argument", status.New(codes.InvalidArgument, "bad dictionary"), false, 0},
		{"unauthenticated", status.New(codes.Unauthenticated, "no token"), false, 0},
		{"unavailable", status.New(codes.Unavailable, "draining"), true, 0},
		{"resource exhausted", status.New(codes.ResourceExhausted, "too big"), false, 0},
		{"resource exhausted with RetryInfo", statusWithRetryInfo(t, codes.ResourceExhausted, 2*time.Second), true, 2 * time.Second},
		{"aborted", status.New(codes.Aborted, "conflict"), true, 0},
		{"data loss", status.New(codes.DataLoss, "lost"), true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &fakeCollector{err: tt.st.Err()}
			addr := startGRPC(t, c)
			e := newTestGRPC(t, OTLPConfig{Endpoint: addr, Insecure: true})
			err := e.Export(context.Background(), otlptest.Request(1))
			var ee *ExportError
			if !errors.As(err, &ee) {
				t.Fatalf("Export = %v (%T), want *ExportError", err, err)
			}
			if ee.Status.Code() != tt.st.Code() || ee.Status.Message() != tt.st.Message() {
				t.Fatalf("status = %v %q, want %v %q", ee.Status.Code(), ee.Status.Message(), tt.st.Code(), tt.st.Message())
			}
			if status.Code(err) != tt.st.Code() {
				t.Errorf("status.Code(err) = %v, want %v", status.Code(err), tt.st.Code())
			}
			retry, delay := Retryable(err)
			if retry != tt.wantRetry || delay != tt.wantDelay {
				t.Errorf("Retryable = %v, %v; want %v, %v", retry, delay, tt.wantRetry, tt.wantDelay)
			}
		})
	}
}

func TestGRPCTimeout(t *testing.T) {
	c := &fakeCollector{block: true}
	addr := startGRPC(t, c)
	e := newTestGRPC(t, OTLPConfig{Endpoint: addr, Insecure: true, Timeout: 200 * time.Millisecond})
	err := e.Export(context.Background(), otlptest.Request(1))
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("Export = %v, want DeadlineExceeded status", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("errors.Is(%v, context.DeadlineExceeded) = false", err)
	}
	if retry, _ := Retryable(err); !retry {
		t.Errorf("a timed-out attempt must be retryable")
	}
}

func TestGRPCUnreachable(t *testing.T) {
	// A port that was just free: nothing listens there.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	e := newTestGRPC(t, OTLPConfig{Endpoint: addr, Insecure: true, Timeout: 5 * time.Second})
	err = e.Export(context.Background(), otlptest.Request(1))
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("Export = %v, want Unavailable", err)
	}
	if retry, _ := Retryable(err); !retry {
		t.Errorf("an unreachable collector must be retryable")
	}
}

func TestGRPCTLS(t *testing.T) {
	// httptest holds a certificate valid for 127.0.0.1; borrow it.
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	cert := ts.TLS.Certificates[0]
	roots := x509.NewCertPool()
	roots.AddCert(ts.Certificate())
	ts.Close()

	c := &fakeCollector{}
	addr := startGRPC(t, c, grpc.Creds(credentials.NewServerTLSFromCert(&cert)))

	trusting, err := newGRPCExporter(OTLPConfig{Protocol: ProtocolGRPC, Endpoint: addr},
		&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	defer trusting.Shutdown(context.Background())
	if err := trusting.Export(context.Background(), otlptest.Request(1)); err != nil {
		t.Fatalf("Export over TLS with trusted root: %v", err)
	}

	// The exporter built by NewOTLP trusts only the system roots.
	e := newTestGRPC(t, OTLPConfig{Endpoint: addr, Timeout: 5 * time.Second})
	if err := e.Export(context.Background(), otlptest.Request(2)); status.Code(err) != codes.Unavailable {
		t.Fatalf("Export to untrusted server = %v, want Unavailable", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.requests) != 1 || !proto.Equal(c.requests[0], otlptest.Request(1)) {
		t.Fatalf("server got %d requests, want only the trusted one", len(c.requests))
	}
}

func TestGRPCShutdown(t *testing.T) {
	c := &fakeCollector{}
	addr := startGRPC(t, c)
	e := newTestGRPC(t, OTLPConfig{Endpoint: addr, Insecure: true})
	if err := e.Export(context.Background(), otlptest.Request(1)); err != nil {
		t.Fatalf("Export: %v", err)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := e.Export(context.Background(), otlptest.Request(2)); !errors.Is(err, ErrShutdown) {
		t.Fatalf("Export after Shutdown = %v, want ErrShutdown", err)
	}
	if retry, _ := Retryable(ErrShutdown); retry {
		t.Errorf("ErrShutdown must be permanent")
	}
}
