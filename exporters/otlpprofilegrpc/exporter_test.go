package otlpprofilegrpc

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/pprofotel/profiler/internal/export/report"
	"github.com/pprofotel/profiler/internal/testutil/receivertest"
	"github.com/pprofotel/profiler/internal/testutil/testcert"
)

// env is a getenv over a map.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

var quiet = slog.New(slog.DiscardHandler)

// fastRetry retries without waiting long.
var fastRetry = WithRetry(RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond, MaxInterval: 100 * time.Millisecond})

func TestExport(t *testing.T) {
	req := receivertest.Request(3)
	size := int64(proto.Size(req))
	for _, tt := range []struct {
		name        string
		opts        []Option
		env         map[string]string
		compression string
		metadata    map[string]string
	}{
		{name: "defaults", compression: ""},
		{
			name:        "metadata and gzip from options",
			opts:        []Option{WithHeaders(map[string]string{"Authorization": "Bearer t0k3n"}), WithCompressor("gzip")},
			compression: "gzip", metadata: map[string]string{"authorization": "Bearer t0k3n"},
		},
		{
			name: "metadata and gzip from the environment, PROFILES form first",
			env: map[string]string{
				"OTEL_EXPORTER_OTLP_PROFILES_HEADERS": "x-tenant=a%20b",
				"OTEL_EXPORTER_OTLP_HEADERS":          "x-tenant=generic",
				"OTEL_EXPORTER_OTLP_COMPRESSION":      "gzip",
			},
			compression: "gzip", metadata: map[string]string{"x-tenant": "a b"},
		},
		{
			name:     "options win over the environment",
			opts:     []Option{WithHeaders(map[string]string{"x-tenant": "option"}), WithCompressor("none")},
			env:      map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "x-tenant=env", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"},
			metadata: map[string]string{"x-tenant": "option"},
		},
		{
			name: "endpoint from the PROFILES variable, plaintext by its scheme",
			env:  map[string]string{"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT": "http://{addr}", "OTEL_EXPORTER_OTLP_ENDPOINT": "https://127.0.0.1:1"},
		},
		{
			name: "endpoint from the generic variable, plaintext by INSECURE",
			env:  map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "{addr}", "OTEL_EXPORTER_OTLP_INSECURE": "true"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var rcv receivertest.GRPCReceiver
			addr := receivertest.StartGRPC(t, &rcv)
			vars := map[string]string{}
			for k, v := range tt.env {
				vars[k] = strings.ReplaceAll(v, "{addr}", addr)
			}
			opts := tt.opts
			if vars["OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT"] == "" && vars["OTEL_EXPORTER_OTLP_ENDPOINT"] == "" {
				opts = append([]Option{WithEndpoint(addr), WithInsecure()}, opts...)
			}
			e, err := newExporter(env(vars), nil, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Shutdown(context.Background())
			var rep report.Report
			if err := e.Export(report.NewContext(context.Background(), &rep), req); err != nil {
				t.Fatal(err)
			}
			reqs := rcv.Requests()
			if len(reqs) != 1 || !proto.Equal(reqs[0], req) {
				t.Fatalf("received %d requests, want the one sent", len(reqs))
			}
			md := rcv.Metadata()[0]
			for k, v := range tt.metadata {
				if got := md.Get(k); len(got) != 1 || got[0] != v {
					t.Errorf("metadata %s = %q, want %q", k, got, v)
				}
			}
			if ua := md.Get("user-agent"); len(ua) == 0 || !strings.HasPrefix(ua[0], "pprofotel-go/") {
				t.Errorf("user-agent %q", ua)
			}
			if got := rcv.Compression(); len(got) != 1 || got[0] != tt.compression {
				t.Errorf("compression %q, want %q", got, tt.compression)
			}
			if rep.BytesSent() != size || rep.Retries() != 0 {
				t.Errorf("report: %d bytes, %d retries; want %d, 0", rep.BytesSent(), rep.Retries(), size)
			}
		})
	}
}

func TestGRPCConn(t *testing.T) {
	var rcv receivertest.GRPCReceiver
	addr := receivertest.StartGRPC(t, &rcv)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The variables that make a connection are not read with the
	// application's: an invalid one is not even warned about.
	logger, buf := logBuffer()
	e, err := newExporter(env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":    "ftp://127.0.0.1:1",
		"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent",
	}), logger, []Option{WithGRPCConn(conn), WithCompressor("gzip")})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Export(context.Background(), receivertest.Request(1)); err != nil {
		t.Fatal(err)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := conn.GetState(); s == connectivity.Shutdown {
		t.Error("Shutdown closed the application's connection")
	}
	if got := rcv.Compression(); len(got) != 1 || got[0] != "gzip" {
		t.Errorf("compression %q, want gzip asked for per call", got)
	}
	if buf.Len() != 0 {
		t.Errorf("warnings about variables not used: %s", buf)
	}
}

// logBuffer is a logger whose output a test reads.
func logBuffer() (*slog.Logger, *bytes.Buffer) {
	var b bytes.Buffer
	return slog.New(slog.NewTextHandler(&b, nil)), &b
}

func TestNewRejectsOptions(t *testing.T) {
	for _, tt := range []struct {
		name string
		opt  Option
		want string
	}{
		{"endpoint with scheme", WithEndpoint("http://x:1"), `WithEndpoint("http://x:1")`},
		{"endpoint URL scheme", WithEndpointURL("unix:///x"), `WithEndpointURL("unix:///x")`},
		{"timeout", WithTimeout(0), "WithTimeout(0s)"},
		{"compressor", WithCompressor("zstd"), `WithCompressor("zstd"): compression must be "gzip" or "none"`},
		{"metadata key", WithHeaders(map[string]string{"Bad Key": "s3cr3t"}), `WithHeaders(header "Bad Key")`},
		{"metadata key gRPC refuses", WithHeaders(map[string]string{"x:y": "s3cr3t"}), `WithHeaders(header "x:y")`},
		{"nil conn", WithGRPCConn(nil), "WithGRPCConn(nil)"},
		{"nil TLS", WithTLSClientConfig(nil), "WithTLSClientConfig(nil)"},
		{"retry negative", WithRetry(RetryConfig{MaxElapsedTime: -1}), "WithRetry("},
		{"request too small", WithMaxRequestBytes(1000), "WithMaxRequestBytes(1000): must be at least 65536"},
		{"request too large", WithMaxRequestBytes(64<<20 + 1), "WithMaxRequestBytes(67108865): must be at most 67108864 (64 MiB)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newExporter(env(nil), nil, []Option{tt.opt})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "otlpprofilegrpc: ") {
				t.Errorf("error %v, want one naming %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error %v shows a header value", err)
			}
		})
	}
	if _, err := newExporter(env(nil), nil, []Option{WithMaxRequestBytes(64 << 20)}); err != nil {
		t.Errorf("64 MiB refused: %v", err)
	}
}

func TestTLS(t *testing.T) {
	pki := testcert.New(t)
	for _, tt := range []struct {
		name    string
		opts    []Option
		env     map[string]string
		wantErr bool
	}{
		{"mutual TLS from the variables", nil, map[string]string{
			"OTEL_EXPORTER_OTLP_CERTIFICATE":        pki.CAFile,
			"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": pki.ClientCertFile,
			"OTEL_EXPORTER_OTLP_CLIENT_KEY":         pki.ClientKeyFile,
		}, false},
		{"mutual TLS from the option", []Option{WithTLSClientConfig(&tls.Config{RootCAs: pki.Roots, Certificates: []tls.Certificate{pki.Client}})}, nil, false},
		{"no client certificate", nil, map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": pki.CAFile}, true},
		{"system roots refuse the test CA", nil, nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var rcv receivertest.GRPCReceiver
			addr := receivertest.StartGRPC(t, &rcv, grpc.Creds(credentials.NewTLS(pki.ServerConfig(true))))
			opts := append([]Option{WithEndpoint(addr), WithRetry(RetryConfig{Enabled: false})}, tt.opts...)
			e, err := newExporter(env(tt.env), quiet, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Shutdown(context.Background())
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound against a hang
			defer cancel()
			err = e.Export(ctx, receivertest.Request(1))
			if (err != nil) != tt.wantErr {
				t.Fatalf("Export: %v, want error %v", err, tt.wantErr)
			}
			if n := len(rcv.Requests()); (n == 1) == tt.wantErr {
				t.Errorf("%d requests received", n)
			}
		})
	}
}

func retryInfo(t *testing.T, c codes.Code, delay time.Duration) error {
	t.Helper()
	st, err := status.New(c, "busy").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

func TestRetry(t *testing.T) {
	for _, tt := range []struct {
		name        string
		fail        func(t *testing.T, n int) error
		opts        []Option
		wantCalls   int
		wantRetries int64
		wantErr     bool
	}{
		{
			name: "UNAVAILABLE with RetryInfo, then accepted",
			fail: func(t *testing.T, n int) error {
				if n == 0 {
					return retryInfo(t, codes.Unavailable, 20*time.Millisecond)
				}
				return nil
			},
			wantCalls: 2, wantRetries: 1,
		},
		{
			name: "RESOURCE_EXHAUSTED with RetryInfo is retried",
			fail: func(t *testing.T, n int) error {
				if n == 0 {
					return retryInfo(t, codes.ResourceExhausted, time.Millisecond)
				}
				return nil
			},
			wantCalls: 2, wantRetries: 1,
		},
		{
			name:      "RESOURCE_EXHAUSTED without RetryInfo is permanent",
			fail:      func(*testing.T, int) error { return status.Error(codes.ResourceExhausted, "too large") },
			opts:      []Option{fastRetry},
			wantCalls: 1, wantErr: true,
		},
		{
			name:      "INVALID_ARGUMENT is permanent",
			fail:      func(*testing.T, int) error { return status.Error(codes.InvalidArgument, "bad") },
			opts:      []Option{fastRetry},
			wantCalls: 1, wantErr: true,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rcv := receivertest.GRPCReceiver{Respond: func(n int) (*collectorpb.ExportProfilesServiceResponse, error) {
				if err := tt.fail(t, n); err != nil {
					return nil, err
				}
				return &collectorpb.ExportProfilesServiceResponse{}, nil
			}}
			addr := receivertest.StartGRPC(t, &rcv)
			e, err := newExporter(env(nil), nil, append([]Option{WithEndpoint(addr), WithInsecure()}, tt.opts...))
			if err != nil {
				t.Fatal(err)
			}
			defer e.Shutdown(context.Background())
			var rep report.Report
			err = e.Export(report.NewContext(context.Background(), &rep), receivertest.Request(1))
			if (err != nil) != tt.wantErr {
				t.Fatalf("Export: %v, want error %v", err, tt.wantErr)
			}
			if n := len(rcv.Requests()); n != tt.wantCalls {
				t.Errorf("%d calls, want %d", n, tt.wantCalls)
			}
			if rep.Retries() != tt.wantRetries {
				t.Errorf("%d retries reported, want %d", rep.Retries(), tt.wantRetries)
			}
		})
	}
}

func TestExportReturnsWhenContextDone(t *testing.T) {
	release := make(chan struct{})
	rcv := receivertest.GRPCReceiver{Respond: func(int) (*collectorpb.ExportProfilesServiceResponse, error) {
		<-release
		return &collectorpb.ExportProfilesServiceResponse{}, nil
	}}
	addr := receivertest.StartGRPC(t, &rcv)
	defer close(release)
	e, err := newExporter(env(nil), nil, []Option{WithEndpoint(addr), WithInsecure()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := e.Export(ctx, receivertest.Request(1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Export: %v, want context.DeadlineExceeded", err)
	}
}

func TestSplit(t *testing.T) {
	const limit = 64 << 10
	req := receivertest.Request(8000)
	want := receivertest.Totals(req)
	var rcv receivertest.GRPCReceiver
	addr := receivertest.StartGRPC(t, &rcv)
	e, err := newExporter(env(nil), nil, []Option{WithEndpoint(addr), WithInsecure(), WithMaxRequestBytes(limit)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	var rep report.Report
	if err := e.Export(report.NewContext(context.Background(), &rep), req); err != nil {
		t.Fatal(err)
	}
	parts := rcv.Requests()
	if len(parts) < 4 {
		t.Fatalf("%d parts, want at least 4 for a request of %d bytes", len(parts), proto.Size(req))
	}
	var sent int64
	for i, p := range parts {
		n := proto.Size(p)
		if n > limit {
			t.Errorf("part %d: %d bytes, over the limit", i, n)
		}
		sent += int64(n)
	}
	if rep.BytesSent() != sent {
		t.Errorf("report: %d bytes, want %d", rep.BytesSent(), sent)
	}
	got := receivertest.Totals(parts...)
	if len(got) != len(want) {
		t.Fatalf("%d functions arrived, want %d", len(got), len(want))
	}
	for fn, v := range want {
		if got[fn] != v {
			t.Errorf("%s: %d arrived, want %d", fn, got[fn], v)
		}
	}
}

func TestPartialSuccessGoesToOtelHandle(t *testing.T) {
	var mu sync.Mutex
	var handled []error
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		mu.Lock()
		handled = append(handled, err)
		mu.Unlock()
	}))
	defer otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {}))
	rcv := receivertest.GRPCReceiver{Respond: func(int) (*collectorpb.ExportProfilesServiceResponse, error) {
		return &collectorpb.ExportProfilesServiceResponse{
			PartialSuccess: &collectorpb.ExportProfilesPartialSuccess{RejectedProfiles: 1, ErrorMessage: "no samples"},
		}, nil
	}}
	addr := receivertest.StartGRPC(t, &rcv)
	e, err := newExporter(env(nil), nil, []Option{WithEndpoint(addr), WithInsecure()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	if err := e.Export(context.Background(), receivertest.Request(1)); err != nil {
		t.Fatalf("a partial success is not an error: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(handled) != 1 || !strings.Contains(handled[0].Error(), "otlpprofilegrpc: the receiver accepted the request in part: 1 profiles rejected: no samples") {
		t.Errorf("otel.Handle got %v", handled)
	}
}

func TestDialOption(t *testing.T) {
	var rcv receivertest.GRPCReceiver
	addr := receivertest.StartGRPC(t, &rcv)
	var mu sync.Mutex
	var methods []string
	count := grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		mu.Lock()
		methods = append(methods, method)
		mu.Unlock()
		return invoker(ctx, method, req, reply, cc, opts...)
	})
	e, err := newExporter(env(nil), nil, []Option{WithEndpointURL("http://" + addr), WithDialOption(count)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	if err := e.Export(context.Background(), receivertest.Request(1)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(methods) != 1 || methods[0] != "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export" {
		t.Errorf("calls through the dial option's interceptor: %q", methods)
	}
}
