package export

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// recorder is a plain-http server that records what reaches it.
type recorder struct {
	mu      sync.Mutex
	headers []http.Header
	bodies  []int
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	n, _ := io.Copy(io.Discard, req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.headers = append(r.headers, req.Header.Clone())
	r.bodies = append(r.bodies, int(n))
}

// TestHTTPRedirectNotFollowed points the exporter, with credentials in its
// headers, at an https endpoint that redirects (307, 308, 302) to a plain
// http server on another port: nothing may reach that server, and the
// export fails permanently, naming where the redirect pointed.
func TestHTTPRedirectNotFollowed(t *testing.T) {
	stolen := new(recorder)
	plain := httptest.NewServer(stolen)
	t.Cleanup(plain.Close)
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, plain.URL+"/stolen", code)
			}))
			t.Cleanup(secure.Close)
			roots := x509.NewCertPool()
			roots.AddCert(secure.Certificate())
			e, err := NewOTLP(OTLPConfig{
				Protocol: ProtocolHTTPProtobuf, Endpoint: secure.URL + profilesPath, Compression: compressionGzip,
				Headers: map[string]string{"Authorization": "Bearer secret", "X-API-Key": "key"},
				TLS:     &tls.Config{RootCAs: roots}, Timeout: 5 * time.Second,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
			err = e.Export(context.Background(), testRequest(1))
			var ee *ExportError
			if !errors.As(err, &ee) || ee.StatusCode != code || !strings.Contains(ee.Message, plain.URL+"/stolen") {
				t.Fatalf("Export: %v, want an HTTP %d naming the redirect's target", err, code)
			}
			if retry, _ := Retryable(err); retry {
				t.Errorf("a refused redirect is retryable: %v", err)
			}
			stolen.mu.Lock()
			defer stolen.mu.Unlock()
			if len(stolen.headers) != 0 {
				t.Fatalf("the plain http server got %d requests (headers %v, bodies %v bytes)", len(stolen.headers), stolen.headers, stolen.bodies)
			}
		})
	}
}

// TestOversizedResponseHeaders checks that a response header larger than
// maxResponseHeaderBytes fails the export over HTTP/1.1, HTTP/2 and gRPC
// instead of being read into memory, while one within the bound is
// accepted.
func TestOversizedResponseHeaders(t *testing.T) {
	for _, tt := range []struct {
		name string
		size int
		ok   bool
	}{
		{"within the bound", maxResponseHeaderBytes / 2, true},
		{"past the bound", 4 * maxResponseHeaderBytes, false},
	} {
		value := strings.Repeat("x", tt.size)
		check := func(t *testing.T, err error) {
			t.Helper()
			if tt.ok && err != nil {
				t.Fatalf("Export: %v", err)
			}
			if !tt.ok && err == nil {
				t.Fatalf("Export of a response with %d bytes of headers succeeded", tt.size)
			}
		}
		for _, h2 := range []bool{false, true} {
			name := "http1"
			if h2 {
				name = "http2"
			}
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					w.Header().Set("X-Padding", value)
					w.WriteHeader(http.StatusOK)
				}))
				ts.EnableHTTP2 = h2
				ts.StartTLS()
				t.Cleanup(ts.Close)
				roots := x509.NewCertPool()
				roots.AddCert(ts.Certificate())
				e, err := NewOTLP(OTLPConfig{Protocol: ProtocolHTTPProtobuf, Endpoint: ts.URL + profilesPath,
					TLS: &tls.Config{RootCAs: roots}, Timeout: 5 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
				check(t, e.Export(context.Background(), testRequest(1)))
			})
		}
		t.Run(tt.name+"/grpc", func(t *testing.T) {
			c := &fakeCollector{}
			endpoint := startGRPC(t, c, grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
				if err := grpc.SetHeader(ctx, metadata.Pairs("x-padding", value)); err != nil {
					return nil, err
				}
				return handler(ctx, req)
			}))
			e := newTestGRPC(t, OTLPConfig{Endpoint: endpoint, Insecure: true, Timeout: 5 * time.Second})
			check(t, e.Export(context.Background(), testRequest(1)))
		})
	}
}
