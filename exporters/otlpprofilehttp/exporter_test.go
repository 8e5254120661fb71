package otlpprofilehttp

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/convert/otlpjson"
	"github.com/pprofotel/profiler/internal/export/report"
	"github.com/pprofotel/profiler/internal/testutil/receivertest"
	"github.com/pprofotel/profiler/internal/testutil/testcert"
)

// env is a getenv over a map.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// logBuffer is a logger whose output a test reads.
func logBuffer() (*slog.Logger, *syncBuffer) {
	var b syncBuffer
	return slog.New(slog.NewTextHandler(&b, nil)), &b
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fastRetry retries without waiting long.
var fastRetry = WithRetry(RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond, MaxInterval: 100 * time.Millisecond})

func TestExport(t *testing.T) {
	req := receivertest.Request(3)
	size := int64(proto.Size(req))
	for _, tt := range []struct {
		name        string
		opts        []Option
		env         map[string]string
		path        string
		contentType string
		gzip        bool
		header      map[string]string
	}{
		{
			name: "defaults from endpoint URL", path: "/v1development/profiles",
			contentType: "application/x-protobuf",
		},
		{
			name: "URL path, headers and gzip from options",
			opts: []Option{WithURLPath("/custom/profiles"), WithHeaders(map[string]string{"Authorization": "Bearer t0k3n"}), WithCompression(GzipCompression)},
			path: "/custom/profiles", contentType: "application/x-protobuf", gzip: true,
			header: map[string]string{"Authorization": "Bearer t0k3n"},
		},
		{
			name: "headers and compression from the environment, PROFILES form first",
			env: map[string]string{
				"OTEL_EXPORTER_OTLP_PROFILES_HEADERS":     "x-tenant=a%20b",
				"OTEL_EXPORTER_OTLP_HEADERS":              "x-tenant=generic",
				"OTEL_EXPORTER_OTLP_COMPRESSION":          "gzip",
				"OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION": "",
			},
			path: "/v1development/profiles", contentType: "application/x-protobuf", gzip: true,
			header: map[string]string{"X-Tenant": "a b"},
		},
		{
			name: "options win over the environment",
			opts: []Option{WithHeaders(map[string]string{"x-tenant": "option"}), WithCompression(NoCompression)},
			env:  map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "x-tenant=env", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"},
			path: "/v1development/profiles", contentType: "application/x-protobuf",
			header: map[string]string{"X-Tenant": "option"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var rcv receivertest.HTTPReceiver
			ts := receivertest.StartHTTP(t, &rcv)
			opts := append([]Option{WithEndpointURL(ts.URL + "/v1development/profiles")}, tt.opts...)
			e, err := newExporter(env(tt.env), nil, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Shutdown(context.Background())
			var rep report.Report
			if err := e.Export(report.NewContext(context.Background(), &rep), req); err != nil {
				t.Fatal(err)
			}
			calls := rcv.Calls()
			if len(calls) != 1 {
				t.Fatalf("%d calls, want 1", len(calls))
			}
			c := calls[0]
			if c.Path != tt.path {
				t.Errorf("path %q, want %q", c.Path, tt.path)
			}
			if got := c.Header.Get("Content-Type"); got != tt.contentType {
				t.Errorf("Content-Type %q, want %q", got, tt.contentType)
			}
			if got := c.Header.Get("Content-Encoding") == "gzip"; got != tt.gzip {
				t.Errorf("gzip %v, want %v", got, tt.gzip)
			}
			if ua := c.Header.Get("User-Agent"); !strings.HasPrefix(ua, "pprofotel-go/") {
				t.Errorf("User-Agent %q", ua)
			}
			for k, v := range tt.header {
				if got := c.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			got := rcv.Requests(t)[0]
			if !proto.Equal(got, req) {
				t.Error("the receiver got another request than was sent")
			}
			if rep.BytesSent() != size || rep.Retries() != 0 {
				t.Errorf("report: %d bytes, %d retries; want %d, 0", rep.BytesSent(), rep.Retries(), size)
			}
		})
	}
}

func TestExportJSON(t *testing.T) {
	var rcv receivertest.HTTPReceiver
	ts := receivertest.StartHTTP(t, &rcv)
	e, err := newExporter(env(nil), nil, []Option{WithEndpointURL(ts.URL + "/v1development/profiles"), WithJSON()})
	if err != nil {
		t.Fatal(err)
	}
	req := receivertest.Request(2)
	if err := e.Export(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	c := rcv.Calls()[0]
	if got := c.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type %q", got)
	}
	// OTLP/JSON spells ids in hex (otlpjson), protojson in base64.
	if !bytes.Contains(c.BodyRaw, []byte(`"profileId":"0102030405060708090a0b0c0d0e0f10"`)) {
		t.Errorf("profile id not in hex: %.200s", c.BodyRaw)
	}
	got, err := otlpjson.Unmarshal(c.BodyRaw)
	if err != nil {
		t.Fatalf("body is not OTLP/JSON: %v", err)
	}
	if !proto.Equal(got, req) {
		t.Error("the JSON body decodes to another request")
	}
}

// TestEndpointResolution checks the URL the exporter posts to, from the
// options and variables, against a receiver reached through a proxy
// function that records the URL and sends every request to the test
// server: the hosts named need not exist.
func TestEndpointResolution(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []Option
		env  map[string]string
		want string
	}{
		{"default", nil, nil, "http://localhost:4318/v1development/profiles"},
		{"generic variable gets the path", nil,
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/base"},
			"http://collector:4318/base/v1development/profiles"},
		{"PROFILES variable used as is", nil,
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://generic:1", "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT": "http://collector:4318/p"},
			"http://collector:4318/p"},
		{"invalid PROFILES variable falls back to the generic one", nil,
			map[string]string{"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT": "collector:4318", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://generic:4318"},
			"http://generic:4318/v1development/profiles"},
		{"WithEndpoint with WithInsecure", []Option{WithEndpoint("collector:9999"), WithInsecure()},
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://ignored:1"},
			"http://collector:9999/v1development/profiles"},
		{"WithEndpoint with the INSECURE variable", []Option{WithEndpoint("collector:9999")},
			map[string]string{"OTEL_EXPORTER_OTLP_INSECURE": "true"},
			"http://collector:9999/v1development/profiles"},
		{"WithURLPath on the variable's URL", []Option{WithURLPath("/x")},
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/base"},
			"http://collector:4318/x"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var rcv receivertest.HTTPReceiver
			ts := receivertest.StartHTTP(t, &rcv)
			target, _ := url.Parse(ts.URL)
			var mu sync.Mutex
			var seen []string
			proxy := func(r *http.Request) (*url.URL, error) {
				mu.Lock()
				seen = append(seen, r.URL.String())
				mu.Unlock()
				return target, nil
			}
			e, err := newExporter(env(tt.env), slog.New(slog.DiscardHandler), append(tt.opts, WithProxy(proxy)))
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Export(context.Background(), receivertest.Request(1)); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 1 || seen[0] != tt.want {
				t.Errorf("posted to %q, want %q", seen, tt.want)
			}
		})
	}
}

func TestNewRejectsOptions(t *testing.T) {
	for _, tt := range []struct {
		name string
		opt  Option
		want string
	}{
		{"endpoint with scheme", WithEndpoint("http://x:1"), `WithEndpoint("http://x:1")`},
		{"endpoint without port", WithEndpoint("collector"), `WithEndpoint("collector")`},
		{"endpoint URL scheme", WithEndpointURL("ftp://x:1"), `WithEndpointURL("ftp://x:1")`},
		{"relative path", WithURLPath("v1"), `WithURLPath("v1")`},
		{"timeout", WithTimeout(-time.Second), "WithTimeout(-1s)"},
		{"compression", WithCompression(Compression(7)), "WithCompression(7)"},
		{"nil TLS", WithTLSClientConfig(nil), "WithTLSClientConfig(nil)"},
		{"nil client", WithHTTPClient(nil), "WithHTTPClient(nil)"},
		{"nil proxy", WithProxy(nil), "WithProxy(nil)"},
		{"retry negative", WithRetry(RetryConfig{InitialInterval: -1}), "WithRetry("},
		{"retry cap below start", WithRetry(RetryConfig{InitialInterval: time.Second, MaxInterval: time.Millisecond}), "MaxInterval must not be less"},
		{"request too small", WithMaxRequestBytes(64<<10 - 1), "WithMaxRequestBytes(65535): must be at least 65536"},
		{"request too large", WithMaxRequestBytes(64<<20 + 1), "WithMaxRequestBytes(67108865): must be at most 67108864 (64 MiB)"},
		{"insecure with https", nil, `WithInsecure() conflicts with WithEndpointURL("https://x:1")`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := []Option{tt.opt}
			if tt.opt == nil {
				opts = []Option{WithInsecure(), WithEndpointURL("https://x:1")}
			}
			_, err := newExporter(env(nil), nil, opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "otlpprofilehttp: ") {
				t.Errorf("error %v, want one naming %q", err, tt.want)
			}
		})
	}
}

// TestHeaderValuesNeverShown checks that an invalid header, from an option
// or a variable, is reported by its name alone.
func TestHeaderValuesNeverShown(t *testing.T) {
	const secret = "s3cr3t\x01"
	_, err := newExporter(env(nil), nil, []Option{WithHeaders(map[string]string{"Authorization": secret})})
	if err == nil || !strings.Contains(err.Error(), `"Authorization"`) || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("error %v: want it to name the header and not show its value", err)
	}

	logger, buf := logBuffer()
	var rcv receivertest.HTTPReceiver
	ts := receivertest.StartHTTP(t, &rcv)
	e, err := newExporter(env(map[string]string{
		"OTEL_EXPORTER_OTLP_HEADERS": "Authorization: Bearer s3cr3t,x-ok=1,bad%zz=s3cr3t%zz",
	}), logger, []Option{WithEndpointURL(ts.URL)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Export(context.Background(), receivertest.Request(1)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "s3cr3t") || !strings.Contains(out, "OTEL_EXPORTER_OTLP_HEADERS") || strings.Count(out, "\n") != 1 {
		t.Errorf("log %q: want one warning naming the variable without its value", out)
	}
	if got := rcv.Calls()[0].Header.Get("X-Ok"); got != "1" {
		t.Errorf("the valid entry was not sent: X-Ok = %q", got)
	}
}

// TestInvalidVariablesWarnedOnce checks that an invalid variable is logged
// once, with its value cut, and ignored.
func TestInvalidVariablesWarnedOnce(t *testing.T) {
	logger, buf := logBuffer()
	long := strings.Repeat("9", 300) + "x"
	e, err := newExporter(env(map[string]string{
		"OTEL_EXPORTER_OTLP_TIMEOUT":     long,
		"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd",
		"OTEL_EXPORTER_OTLP_INSECURE":    "yes",
	}), logger, []Option{WithEndpoint("127.0.0.1:1")})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d warnings, want 3:\n%s", len(lines), buf.String())
	}
	for _, want := range []string{"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_INSECURE"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("no warning names %s", want)
		}
	}
	if strings.Contains(buf.String(), long[:200]) || !strings.Contains(buf.String(), long[:128]+"…(301 bytes)") {
		t.Errorf("the long value is not cut at 128 bytes: %s", lines[0])
	}
	if !strings.Contains(buf.String(), "level=WARN") || strings.Contains(buf.String(), "level=ERROR") {
		t.Errorf("want warnings, not errors: %s", buf.String())
	}
}

func TestTLSFromEnvironment(t *testing.T) {
	pki := testcert.New(t)
	for _, tt := range []struct {
		name       string
		clientCert bool
		env        map[string]string
		wantErr    bool
	}{
		{"CA from the generic variable", false, map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": pki.CAFile}, false},
		{"no CA: the system roots refuse the test CA", false, nil, true},
		{"mutual TLS from the PROFILES variables", true, map[string]string{
			"OTEL_EXPORTER_OTLP_PROFILES_CERTIFICATE":        pki.CAFile,
			"OTEL_EXPORTER_OTLP_PROFILES_CLIENT_CERTIFICATE": pki.ClientCertFile,
			"OTEL_EXPORTER_OTLP_PROFILES_CLIENT_KEY":         pki.ClientKeyFile,
		}, false},
		{"mutual TLS without the client certificate", true, map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": pki.CAFile}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var rcv receivertest.HTTPReceiver
			ts := httptest.NewUnstartedServer(&rcv)
			ts.TLS = pki.ServerConfig(tt.clientCert)
			// The refused handshakes are expected.
			ts.Config.ErrorLog = log.New(io.Discard, "", 0)
			ts.StartTLS()
			defer ts.Close()
			e, err := newExporter(env(tt.env), slog.New(slog.DiscardHandler), []Option{
				WithEndpointURL(ts.URL + "/v1development/profiles"),
				WithRetry(RetryConfig{Enabled: false}),
			})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Shutdown(context.Background())
			err = e.Export(context.Background(), receivertest.Request(1))
			if (err != nil) != tt.wantErr {
				t.Fatalf("Export: %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && len(rcv.Calls()) != 1 {
				t.Errorf("%d calls, want 1", len(rcv.Calls()))
			}
		})
	}
}

func TestTLSClientConfigOption(t *testing.T) {
	pki := testcert.New(t)
	var rcv receivertest.HTTPReceiver
	ts := httptest.NewUnstartedServer(&rcv)
	ts.TLS = pki.ServerConfig(true)
	ts.StartTLS()
	defer ts.Close()
	cfg := &tls.Config{RootCAs: pki.Roots, Certificates: []tls.Certificate{pki.Client}}
	e, err := newExporter(env(nil), nil, []Option{WithEndpointURL(ts.URL), WithTLSClientConfig(cfg)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Export(context.Background(), receivertest.Request(1)); err != nil {
		t.Fatal(err)
	}
	if cfg.MinVersion != 0 || cfg.NextProtos != nil {
		t.Error("the application's TLS configuration was modified")
	}
}

// roundTripFunc is an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// countingTransport counts the requests sent through it and the calls
// that close its idle connections.
type countingTransport struct {
	mu                  sync.Mutex
	requests, closeIdle int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.requests++
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (c *countingTransport) CloseIdleConnections() {
	c.mu.Lock()
	c.closeIdle++
	c.mu.Unlock()
}

// TestHTTPClient sends through the application's client and checks that
// Shutdown leaves its connections alone and its redirect policy as it was.
func TestHTTPClient(t *testing.T) {
	var rcv receivertest.HTTPReceiver
	ts := receivertest.StartHTTP(t, &rcv)
	transport := new(countingTransport)
	client := &http.Client{Transport: transport}
	e, err := newExporter(env(nil), nil, []Option{WithEndpointURL(ts.URL), WithHTTPClient(client)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Export(context.Background(), receivertest.Request(1)); err != nil {
		t.Fatal(err)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	transport.mu.Lock()
	defer transport.mu.Unlock()
	if transport.requests != 1 || transport.closeIdle != 0 {
		t.Errorf("%d requests through the client, %d closings of its idle connections; want 1, 0", transport.requests, transport.closeIdle)
	}
	if client.CheckRedirect != nil {
		t.Error("the application's client was modified")
	}
}

// TestExportReturnsWhenContextDone checks that Export returns by its
// context's deadline even when the client's transport ignores the
// request's context.
func TestExportReturnsWhenContextDone(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	client := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		<-release
		return nil, errors.New("released")
	})}
	e, err := newExporter(env(nil), nil, []Option{WithEndpointURL("http://127.0.0.1:1"), WithHTTPClient(client)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = e.Export(ctx, receivertest.Request(1))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Export: %v, want context.DeadlineExceeded", err)
	}
}

func TestRetry(t *testing.T) {
	for _, tt := range []struct {
		name        string
		respond     func(n int, w http.ResponseWriter)
		opts        []Option
		wantCalls   int
		wantRetries int64
		wantErr     bool
	}{
		{
			name: "503 with Retry-After, then accepted",
			respond: func(n int, w http.ResponseWriter) {
				if n == 0 {
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(http.StatusServiceUnavailable)
				}
			},
			wantCalls: 2, wantRetries: 1,
		},
		{
			name: "429 twice, then accepted",
			respond: func(n int, w http.ResponseWriter) {
				if n < 2 {
					w.WriteHeader(http.StatusTooManyRequests)
				}
			},
			opts:      []Option{fastRetry},
			wantCalls: 3, wantRetries: 2,
		},
		{
			name:      "400 is permanent",
			respond:   func(n int, w http.ResponseWriter) { w.WriteHeader(http.StatusBadRequest) },
			opts:      []Option{fastRetry},
			wantCalls: 1, wantErr: true,
		},
		{
			name:      "retry disabled",
			respond:   func(n int, w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) },
			opts:      []Option{WithRetry(RetryConfig{Enabled: false})},
			wantCalls: 1, wantErr: true,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rcv := receivertest.HTTPReceiver{Respond: tt.respond}
			ts := receivertest.StartHTTP(t, &rcv)
			e, err := newExporter(env(nil), nil, append([]Option{WithEndpointURL(ts.URL)}, tt.opts...))
			if err != nil {
				t.Fatal(err)
			}
			var rep report.Report
			err = e.Export(report.NewContext(context.Background(), &rep), receivertest.Request(1))
			if (err != nil) != tt.wantErr {
				t.Fatalf("Export: %v, want error %v", err, tt.wantErr)
			}
			if n := len(rcv.Calls()); n != tt.wantCalls {
				t.Errorf("%d calls, want %d", n, tt.wantCalls)
			}
			if rep.Retries() != tt.wantRetries {
				t.Errorf("%d retries reported, want %d", rep.Retries(), tt.wantRetries)
			}
			if tt.wantErr && rep.BytesSent() != 0 {
				t.Errorf("%d bytes reported sent for a failed export", rep.BytesSent())
			}
		})
	}
}

func TestSplit(t *testing.T) {
	const limit = 64 << 10
	req := receivertest.Request(8000)
	if proto.Size(req) < 4*limit {
		t.Fatalf("request of %d bytes is too small to test splitting", proto.Size(req))
	}
	want := receivertest.Totals(req)
	for _, tt := range []struct {
		name      string
		failAt    int // the call that fails for good, -1 for none
		wantParts int
	}{
		{"all parts arrive", -1, 0},
		{"third part refused", 2, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rcv := receivertest.HTTPReceiver{Respond: func(n int, w http.ResponseWriter) {
				if n == tt.failAt {
					w.WriteHeader(http.StatusBadRequest)
				}
			}}
			ts := receivertest.StartHTTP(t, &rcv)
			e, err := newExporter(env(nil), nil, []Option{WithEndpointURL(ts.URL), WithMaxRequestBytes(limit)})
			if err != nil {
				t.Fatal(err)
			}
			var rep report.Report
			err = e.Export(report.NewContext(context.Background(), &rep), req)
			parts := rcv.Requests(t)
			var sent int64
			for i, p := range parts {
				if n := proto.Size(p); n > limit {
					t.Errorf("part %d: %d bytes, over the limit of %d", i, n, limit)
				}
				if i != tt.failAt {
					sent += int64(proto.Size(p))
				}
			}
			if rep.BytesSent() != sent {
				t.Errorf("report: %d bytes sent, want %d", rep.BytesSent(), sent)
			}
			if tt.failAt < 0 {
				if err != nil {
					t.Fatal(err)
				}
				if len(parts) < 4 {
					t.Errorf("%d parts, want at least 4", len(parts))
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
				return
			}
			if len(parts) != tt.wantParts {
				t.Errorf("%d parts sent, want %d: none after the failed one", len(parts), tt.wantParts)
			}
			if err == nil || !strings.Contains(err.Error(), "part 3 of ") || !strings.Contains(err.Error(), "(2 arrived)") {
				t.Errorf("error %v: want it to say which part failed and how many arrived", err)
			}
		})
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

	rcv := receivertest.HTTPReceiver{Respond: func(n int, w http.ResponseWriter) {
		body, _ := proto.Marshal(&collectorpb.ExportProfilesServiceResponse{
			PartialSuccess: &collectorpb.ExportProfilesPartialSuccess{RejectedProfiles: 2, ErrorMessage: "too old"},
		})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(body)
	}}
	ts := receivertest.StartHTTP(t, &rcv)
	e, err := newExporter(env(nil), nil, []Option{WithEndpointURL(ts.URL)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Export(context.Background(), receivertest.Request(1)); err != nil {
		t.Fatalf("a partial success is not an error: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(handled) != 1 || !strings.Contains(handled[0].Error(), "2 profiles rejected: too old") {
		t.Errorf("otel.Handle got %v", handled)
	}
}

func TestShutdown(t *testing.T) {
	var rcv receivertest.HTTPReceiver
	ts := receivertest.StartHTTP(t, &rcv)
	e, err := newExporter(env(nil), nil, []Option{WithEndpointURL(ts.URL)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.Export(context.Background(), receivertest.Request(1)); err == nil {
		t.Error("Export after Shutdown succeeded")
	}
	if n := len(rcv.Calls()); n != 0 {
		t.Errorf("%d calls after Shutdown", n)
	}
}
