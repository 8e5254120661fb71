package otlpconfig

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pprofotel/profiler/internal/export"
)

// lockedBuffer is a log sink safe for the exporter's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// unimplementedProfiles answers every profiles export with code, as a
// receiver without the service (Unimplemented) or failing (Internal) does.
type unimplementedProfiles struct {
	collectorpb.UnimplementedProfilesServiceServer
	code codes.Code
}

func (u unimplementedProfiles) Export(context.Context, *collectorpb.ExportProfilesServiceRequest) (*collectorpb.ExportProfilesServiceResponse, error) {
	return nil, status.Error(u.code, "refused")
}

// grpcReceiver serves gRPC on loopback: with the profiles service
// answering code, or without it when register is false.
func grpcReceiver(t *testing.T, register bool, code codes.Code) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	if register {
		collectorpb.RegisterProfilesServiceServer(srv, unimplementedProfiles{code: code})
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

// httpReceiver answers every request with code, as a Collector's OTLP
// receiver without a profiles pipeline does with 404.
func httpReceiver(t *testing.T, code int) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, http.StatusText(code), code)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + ProfilesPath
}

// TestNoProfilesPipelineIsExplained checks that a receiver without a
// profiles pipeline (HTTP 404, gRPC Unimplemented, whether the server
// lacks the service or answers so) gets one warning over two exports,
// naming where the exporter sent and what to enable, and that other
// failures get none.
func TestNoProfilesPipelineIsExplained(t *testing.T) {
	tests := []struct {
		name     string
		protocol Transport
		endpoint func(t *testing.T) string
		warned   bool
	}{
		{"http 404", HTTP, func(t *testing.T) string { return httpReceiver(t, http.StatusNotFound) }, true},
		{"http 400", HTTP, func(t *testing.T) string { return httpReceiver(t, http.StatusBadRequest) }, false},
		{"grpc no service", GRPC, func(t *testing.T) string { return grpcReceiver(t, false, codes.OK) }, true},
		{"grpc unimplemented", GRPC, func(t *testing.T) string { return grpcReceiver(t, true, codes.Unimplemented) }, true},
		{"grpc invalid argument", GRPC, func(t *testing.T) string { return grpcReceiver(t, true, codes.InvalidArgument) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			endpoint := tt.endpoint(t)
			s := New("testpkg", tt.protocol)
			if tt.protocol == HTTP {
				s.SetEndpointURL(endpoint)
			} else {
				s.SetEndpoint(endpoint)
			}
			s.SetInsecure()
			s.SetRetry(export.RetryConfig{Enabled: false})
			var logs lockedBuffer
			newTransport := export.NewHTTP
			if tt.protocol == GRPC {
				newTransport = export.NewGRPC
			}
			e, err := NewExporter(s, func(string) string { return "" }, slog.New(slog.NewTextHandler(&logs, nil)), newTransport)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Shutdown(context.Background())
			for range 2 {
				if err := e.Export(t.Context(), &collectorpb.ExportProfilesServiceRequest{}); err == nil {
					t.Fatal("Export succeeded, want the receiver's refusal")
				} else if got := export.NoProfilesPipeline(err); got != tt.warned {
					t.Errorf("NoProfilesPipeline(%v) = %v, want %v", err, got, tt.warned)
				}
			}
			log := logs.String()
			n := strings.Count(log, "takes no profiles")
			if !tt.warned {
				if n != 0 {
					t.Errorf("warned about a missing pipeline:\n%s", log)
				}
				return
			}
			if n != 1 {
				t.Errorf("%d warnings, want 1:\n%s", n, log)
			}
			for _, want := range []string{endpoint, "profiles pipeline", "--feature-gates=service.profilesSupport"} {
				if !strings.Contains(log, want) {
					t.Errorf("the warning lacks %q:\n%s", want, log)
				}
			}
		})
	}
}
