package export

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/testutil/otlptest"

	"github.com/pprofotel/profiler/internal/testutil/testcert"
)

// transportsUnderTest are the exporter's transports over TLS: gRPC, and
// HTTP over HTTP/2 and over HTTP/1.1 (a server that offers only that).
var transportsUnderTest = []struct {
	name     string
	protocol string
	http1    bool
}{
	{"grpc", ProtocolGRPC, false},
	{"http2", ProtocolHTTPProtobuf, false},
	{"http1", ProtocolHTTPProtobuf, true},
}

// startVerdictCollector starts a receiver over TLS with serverTLS, limited
// to HTTP/1.1 when http1 is set.
func startVerdictCollector(t *testing.T, protocol string, http1 bool, serverTLS *tls.Config) (string, func() int) {
	t.Helper()
	if http1 {
		serverTLS.NextProtos = []string{"http/1.1"}
	}
	return startTLSCollector(t, protocol, serverTLS)
}

// exportOnce exports one request through a new exporter, so that every
// attempt makes its own connection and handshake.
func exportOnce(t *testing.T, protocol, endpoint string, clientTLS *tls.Config) error {
	t.Helper()
	e, err := NewOTLP(OTLPConfig{Protocol: protocol, Endpoint: endpoint, TLS: clientTLS, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("NewOTLP: %v", err)
	}
	defer func() { _ = e.Shutdown(context.Background()) }()
	return e.Export(context.Background(), otlptest.Request(1))
}

// TestCertificateFailuresArePermanent checks that a certificate the
// exporter refuses (unknown authority, wrong name) and a client certificate
// the server refuses (missing, or from another authority) fail the export
// as permanent over every transport, TLS 1.2 and 1.3: sending again would
// meet the same certificate.
func TestCertificateFailuresArePermanent(t *testing.T) {
	pki := testcert.New(t)
	other := testcert.New(t)
	tests := []struct {
		name              string
		requireClientCert bool
		tls               *tls.Config
	}{
		{"unknown authority", false, &tls.Config{RootCAs: other.Roots}},
		{"wrong name", false, &tls.Config{RootCAs: pki.Roots, ServerName: "collector.example"}},
		{"client certificate missing", true, &tls.Config{RootCAs: pki.Roots}},
		{"client certificate from another authority", true, &tls.Config{RootCAs: pki.Roots, Certificates: []tls.Certificate{other.Client}}},
	}
	for _, tr := range transportsUnderTest {
		for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
			for _, tt := range tests {
				t.Run(tr.name+"/"+tls.VersionName(version)+"/"+tt.name, func(t *testing.T) {
					serverTLS := pki.ServerConfig(tt.requireClientCert)
					serverTLS.MaxVersion = version
					endpoint, received := startVerdictCollector(t, tr.protocol, tr.http1, serverTLS)
					err := exportOnce(t, tr.protocol, endpoint, tt.tls)
					if err == nil {
						t.Fatal("Export succeeded, want the certificate refused")
					}
					if retry, _ := Retryable(err); retry {
						t.Errorf("Retryable(%v) = true, want a permanent failure", err)
					}
					if got := received(); got != 0 {
						t.Errorf("server received %d requests, want 0", got)
					}
				})
			}
		}
	}
}

// TestTLS13ClientCertificateVerdict repeats TLS 1.3 handshakes with servers
// that verify the client's certificate after the client's handshake has
// completed, with and without session tickets (without them the server's
// first record is its HTTP/2 SETTINGS, or nothing over HTTP/1.1): every
// refusal is permanent, with the server's alert in the error, and every
// accepted certificate delivers the request.
func TestTLS13ClientCertificateVerdict(t *testing.T) {
	const attempts = 50
	pki := testcert.New(t)
	other := testcert.New(t)
	tests := []struct {
		name      string
		tls       *tls.Config
		wantAlert string // empty when the certificate is accepted
	}{
		{"missing", &tls.Config{RootCAs: pki.Roots}, "tls: certificate required"},
		{"from another authority", &tls.Config{RootCAs: pki.Roots, Certificates: []tls.Certificate{other.Client}}, "tls: unknown certificate authority"},
		{"accepted", &tls.Config{RootCAs: pki.Roots, Certificates: []tls.Certificate{pki.Client}}, ""},
	}
	for _, tr := range transportsUnderTest {
		for _, tickets := range []bool{true, false} {
			for _, tt := range tests {
				name := tr.name + "/tickets/" + tt.name
				if !tickets {
					name = tr.name + "/no tickets/" + tt.name
				}
				t.Run(name, func(t *testing.T) {
					serverTLS := pki.ServerConfig(true)
					serverTLS.MinVersion = tls.VersionTLS13
					serverTLS.SessionTicketsDisabled = !tickets
					endpoint, received := startVerdictCollector(t, tr.protocol, tr.http1, serverTLS)
					for i := range attempts {
						err := exportOnce(t, tr.protocol, endpoint, tt.tls)
						if tt.wantAlert == "" {
							if err != nil {
								t.Fatalf("attempt %d: Export: %v", i, err)
							}
							continue
						}
						if err == nil {
							t.Fatalf("attempt %d: Export succeeded, want the certificate refused", i)
						}
						if retry, _ := Retryable(err); retry {
							t.Fatalf("attempt %d: Retryable(%v) = true, want a permanent failure", i, err)
						}
						if !strings.Contains(err.Error(), tt.wantAlert) {
							t.Fatalf("attempt %d: %v does not carry the alert %q", i, err, tt.wantAlert)
						}
					}
					want := 0
					if tt.wantAlert == "" {
						want = attempts
					}
					if got := received(); got != want {
						t.Errorf("server received %d requests, want %d", got, want)
					}
				})
			}
		}
	}
}

// TestHandshakeNetworkFailuresAreRetryable checks that a receiver that is
// down, or that resets the connection right after a TLS 1.3 handshake in
// which it asked for our certificate (a server going away), fails the export
// as retryable on every transport.
func TestHandshakeNetworkFailuresAreRetryable(t *testing.T) {
	pki := testcert.New(t)
	clientTLS := &tls.Config{RootCAs: pki.Roots, Certificates: []tls.Certificate{pki.Client}}
	receivers := []struct {
		name  string
		start func(t *testing.T) string // returns host:port
	}{
		{"down", func(t *testing.T) string {
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := lis.Addr().String()
			_ = lis.Close()
			return addr
		}},
		{"reset after handshake", func(t *testing.T) string {
			serverTLS := pki.ServerConfig(true)
			serverTLS.MinVersion = tls.VersionTLS13
			// Without a session ticket the reset is what the client's
			// wait for the verdict reads.
			serverTLS.SessionTicketsDisabled = true
			return startResetter(t, serverTLS)
		}},
	}
	for _, tr := range transportsUnderTest {
		for _, r := range receivers {
			t.Run(tr.name+"/"+r.name, func(t *testing.T) {
				addr := r.start(t)
				endpoint := addr
				if tr.protocol != ProtocolGRPC {
					endpoint = "https://" + addr + profilesPath
				}
				for i := range 5 {
					err := exportOnce(t, tr.protocol, endpoint, clientTLS)
					if err == nil {
						t.Fatalf("attempt %d: Export succeeded, want a network failure", i)
					}
					if retry, _ := Retryable(err); !retry {
						t.Fatalf("attempt %d: Retryable(%v) = false, want a retryable failure", i, err)
					}
				}
			})
		}
	}
}

// startResetter accepts TLS connections, completes the handshake, verifying
// the client's certificate, and resets the connection.
func startResetter(t *testing.T, serverTLS *tls.Config) string {
	t.Helper()
	serverTLS.NextProtos = []string{"h2", "http/1.1"}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			tc := tls.Server(c, serverTLS)
			_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
			if tc.Handshake() == nil {
				_ = c.(*net.TCPConn).SetLinger(0)
			}
			_ = c.Close()
		}
	}()
	t.Cleanup(func() {
		_ = lis.Close()
		<-done
	})
	return lis.Addr().String()
}
