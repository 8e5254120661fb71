package opamp

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server"
	servertypes "github.com/open-telemetry/opamp-go/server/types"

	"github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/internal/testutil/polltest"
)

// logBuffer is a log sink safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// offeringServer is an OpAMP server that offers a remote configuration in
// reply to every message, and counts the requests it receives and those
// that carried an Authorization header.
type offeringServer struct {
	*httptest.Server
	requests, authorized atomic.Int64
}

func startOfferingServer(t *testing.T, tlsServer bool, body string) *offeringServer {
	t.Helper()
	s := &offeringServer{}
	offer := remoteConfig("hostile", body)
	handler, connContext, err := server.New(nil).Attach(server.Settings{Callbacks: servertypes.Callbacks{
		OnConnecting: func(*http.Request) servertypes.ConnectionResponse {
			return servertypes.ConnectionResponse{Accept: true, ConnectionCallbacks: servertypes.ConnectionCallbacks{
				OnMessage: func(_ context.Context, _ servertypes.Connection, msg *protobufs.AgentToServer) *protobufs.ServerToAgent {
					return &protobufs.ServerToAgent{InstanceUid: msg.InstanceUid, RemoteConfig: offer}
				},
			}}
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if r.Header.Get("Authorization") != "" {
			s.authorized.Add(1)
		}
		handler(w, r)
	}))
	s.Config.ConnContext = connContext
	if tlsServer {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

// TestRedirectRefused: an endpoint over TLS that redirects to cleartext,
// or to another host, is not followed, over WebSocket or plain HTTP. The
// Authorization header never reaches the other server, the configuration
// it offers is never applied, the client keeps its endpoint (it tries it
// again), and the refusal is logged once.
func TestRedirectRefused(t *testing.T) {
	for _, tt := range []struct {
		name      string
		scheme    string // of the endpoint
		tls       bool   // of the server redirected to
		toScheme  string
		status    int
		wantInLog string
	}{
		{"wss to ws", "wss", false, "ws", http.StatusTemporaryRedirect, "from TLS to cleartext"},
		{"wss to http", "wss", false, "http", http.StatusMovedPermanently, "from TLS to cleartext"},
		// net/http follows a 302 of a POST (as a GET), not a 307.
		{"https to http", "https", false, "http", http.StatusFound, "from TLS to cleartext"},
		{"wss to another host", "wss", true, "wss", http.StatusTemporaryRedirect, "to another host"},
		{"https to another host", "https", true, "https", http.StatusFound, "to another host"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			other := startOfferingServer(t, tt.tls, `{"enabled":false}`)
			location := tt.toScheme + "://" + other.Listener.Addr().String() + "/v1/opamp"
			var attempts atomic.Int64
			endpoint := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				attempts.Add(1)
				http.Redirect(w, r, location, tt.status)
			}))
			defer endpoint.Close()
			roots := x509.NewCertPool()
			roots.AddCert(endpoint.Certificate())

			logs := &logBuffer{}
			u := tt.scheme + strings.TrimPrefix(endpoint.URL, "https") + "/v1/opamp"
			cfg, err := newConfig([]Option{
				WithEndpointURL(u), WithHeaders(map[string]string{"Authorization": "Bearer secret"}),
				WithTLSClientConfig(&tls.Config{RootCAs: roots}), WithHeartbeatInterval(time.Second),
				WithLogger(slog.New(slog.NewTextHandler(logs, nil))),
			}, func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			target := newFakeTarget()
			c := newClient(cfg, target, func() profiler.Stats { return profiler.Stats{} })
			if cfg.transport() == "WebSocket" {
				c.opamp = client.NewWebSocket(clientLogger{cfg.logger})
			} else {
				c.opamp = client.NewHTTP(clientLogger{cfg.logger})
			}
			if err := c.connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			go c.run()
			defer c.Shutdown(context.Background())

			polltest.Until(t, "a second attempt at the endpoint", func() bool { return attempts.Load() >= 2 })
			if n := other.requests.Load(); n != 0 {
				t.Errorf("%d requests reached the server redirected to, %d with the Authorization header",
					n, other.authorized.Load())
			}
			target.mu.Lock()
			applies := target.applies
			target.mu.Unlock()
			if applies != 0 {
				t.Errorf("%d configurations applied", applies)
			}
			if got := strings.Count(logs.String(), "redirect from the OpAMP server refused"); got != 1 || !strings.Contains(logs.String(), tt.wantInLog) {
				t.Errorf("refusal logged %d times, want once with %q:\n%s", got, tt.wantInLog, logs)
			}
		})
	}
}
