package export

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/testutil/otlptest"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/pprofotel/profiler/internal/testutil/testcert"
)

// TestOTLPTLS exports over TLS and mutual TLS with OTLPConfig.TLS, over
// gRPC and HTTP, against servers that trust only the test authority.
func TestOTLPTLS(t *testing.T) {
	pki := testcert.New(t)
	tests := []struct {
		name              string
		requireClientCert bool
		tls               *tls.Config
		wantOK            bool
	}{
		{"roots", false, &tls.Config{RootCAs: pki.Roots}, true},
		{"system roots only", false, nil, false},
		{"mutual", true, &tls.Config{RootCAs: pki.Roots, Certificates: []tls.Certificate{pki.Client}}, true},
		{"mutual without client certificate", true, &tls.Config{RootCAs: pki.Roots}, false},
	}
	for _, protocol := range []string{ProtocolGRPC, ProtocolHTTPProtobuf, ProtocolHTTPJSON} {
		for _, tt := range tests {
			t.Run(protocol+"/"+tt.name, func(t *testing.T) {
				endpoint, received := startTLSCollector(t, protocol, pki.ServerConfig(tt.requireClientCert))
				var nextProtos []string
				if tt.tls != nil {
					nextProtos = tt.tls.NextProtos
				}

				e, err := NewOTLP(OTLPConfig{Protocol: protocol, Endpoint: endpoint, TLS: tt.tls, Timeout: 5 * time.Second})
				if err != nil {
					t.Fatalf("NewOTLP: %v", err)
				}
				t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
				err = e.Export(context.Background(), otlptest.Request(1))
				switch {
				case tt.wantOK && err != nil:
					t.Fatalf("Export: %v", err)
				case !tt.wantOK && err == nil:
					t.Fatal("Export succeeded, want the handshake to fail")
				}
				want := 0
				if tt.wantOK {
					want = 1
				}
				if got := received(); got != want {
					t.Errorf("server received %d requests, want %d", got, want)
				}
				if tt.tls != nil && len(tt.tls.NextProtos) != len(nextProtos) {
					t.Errorf("the caller's tls.Config was modified: NextProtos = %q", tt.tls.NextProtos)
				}
			})
		}
	}
}

// startTLSCollector starts a receiver of protocol over TLS with serverTLS
// and returns its endpoint and a count of the requests it received.
func startTLSCollector(t *testing.T, protocol string, serverTLS *tls.Config) (endpoint string, received func() int) {
	t.Helper()
	if protocol == ProtocolGRPC {
		c := &fakeCollector{}
		endpoint = startGRPC(t, c, grpc.Creds(credentials.NewTLS(serverTLS)))
		return endpoint, func() int {
			c.mu.Lock()
			defer c.mu.Unlock()
			return len(c.requests)
		}
	}
	c := &httpCollector{}
	ts := httptest.NewUnstartedServer(c)
	ts.TLS = serverTLS
	ts.EnableHTTP2 = true
	// The rejected handshakes are expected; keep them out of the log.
	ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	ts.StartTLS()
	t.Cleanup(ts.Close)
	return ts.URL + profilesPath, func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.calls)
	}
}
