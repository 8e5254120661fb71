package export

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/testutil/otlptest"

	"google.golang.org/grpc/credentials"

	"github.com/pprofotel/profiler/internal/testutil/testcert"
)

// BenchmarkTLS13ClientCertConnection measures what the wait for a TLS 1.3
// server's verdict on our certificate costs per new connection, side by
// side with the handshake alone: over HTTP, one export through a new
// exporter, with tlsDialer ("awaited") and with net/http's own handshake
// ("net-http"); over gRPC, one handshake through verdictCreds ("awaited")
// and through gRPC's TLS credentials ("grpc"). The servers send session
// tickets, as Go's do by default.
func BenchmarkTLS13ClientCertConnection(b *testing.B) {
	pki := testcert.New(b)
	clientTLS := &tls.Config{RootCAs: pki.Roots, Certificates: []tls.Certificate{pki.Client}}
	serverTLS := func() *tls.Config {
		c := pki.ServerConfig(true)
		c.MinVersion = tls.VersionTLS13
		return c
	}
	for _, proto := range []struct {
		name  string
		alpn  []string
		http1 bool
	}{{"http2", nil, false}, {"http1", []string{"http/1.1"}, true}} {
		ts := httptest.NewUnstartedServer(&httpCollector{})
		ts.TLS = serverTLS()
		ts.TLS.NextProtos = proto.alpn
		ts.EnableHTTP2 = !proto.http1
		ts.Config.ErrorLog = log.New(io.Discard, "", 0)
		ts.StartTLS()
		b.Cleanup(ts.Close)
		cfg := OTLPConfig{Protocol: ProtocolHTTPProtobuf, Endpoint: ts.URL + profilesPath, Timeout: 5 * time.Second}
		for _, awaited := range []bool{true, false} {
			name := proto.name + "/awaited"
			if !awaited {
				name = proto.name + "/net-http"
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					e, err := newHTTPExporter(cfg, privateTLS(clientTLS))
					if err != nil {
						b.Fatal(err)
					}
					if !awaited {
						e.transport.DialTLSContext = nil
					}
					if err := e.Export(context.Background(), otlptest.Request(1)); err != nil {
						b.Fatal(err)
					}
					_ = e.Shutdown(context.Background())
				}
			})
		}
	}

	lis, err := tls.Listen("tcp", "127.0.0.1:0", func() *tls.Config {
		c := serverTLS()
		c.NextProtos = []string{"h2"}
		return c
	}())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				_, _ = io.Copy(io.Discard, c)
				_ = c.Close()
			}()
		}
	}()
	creds := map[string]credentials.TransportCredentials{
		"grpc/awaited": newVerdictCreds(privateTLS(clientTLS), new(handshakeOutcome)),
		"grpc/grpc":    credentials.NewTLS(privateTLS(clientTLS)),
	}
	for _, name := range []string{"grpc/awaited", "grpc/grpc"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				raw, err := net.Dial("tcp", lis.Addr().String())
				if err != nil {
					b.Fatal(err)
				}
				conn, _, err := creds[name].ClientHandshake(context.Background(), lis.Addr().String(), raw)
				if err != nil {
					b.Fatal(err)
				}
				_ = conn.Close()
			}
		})
	}
}
