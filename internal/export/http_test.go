package export

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/convert/otlpjson"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

const profilesPath = "/v1development/profiles"

// httpCall is what the test server saw of one request.
type httpCall struct {
	method string
	path   string
	header http.Header
	body   []byte // decompressed
}

// httpCollector records calls and answers each with respond.
type httpCollector struct {
	mu      sync.Mutex
	calls   []httpCall
	respond func(w http.ResponseWriter, r *http.Request)
}

func (c *httpCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.calls = append(c.calls, httpCall{r.Method, r.URL.Path, r.Header.Clone(), data})
	c.mu.Unlock()
	if c.respond != nil {
		c.respond(w, r)
	}
}

func startHTTP(t *testing.T, c *httpCollector) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(c)
	t.Cleanup(ts.Close)
	return ts
}

func newTestHTTP(t *testing.T, cfg OTLPConfig) Exporter {
	t.Helper()
	if cfg.Protocol == "" {
		cfg.Protocol = ProtocolHTTPProtobuf
	}
	e, err := NewOTLP(cfg)
	if err != nil {
		t.Fatalf("NewOTLP: %v", err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return e
}

// decodeBody decodes a request body in the format its Content-Type names.
func decodeBody(t *testing.T, call httpCall) *collectorpb.ExportProfilesServiceRequest {
	t.Helper()
	switch ct := call.header.Get("Content-Type"); ct {
	case "application/x-protobuf":
		req := new(collectorpb.ExportProfilesServiceRequest)
		if err := proto.Unmarshal(call.body, req); err != nil {
			t.Fatalf("decode protobuf body: %v", err)
		}
		return req
	case "application/json":
		req, err := otlpjson.Unmarshal(call.body)
		if err != nil {
			t.Fatalf("decode JSON body: %v", err)
		}
		return req
	default:
		t.Fatalf("Content-Type %q", ct)
	}
	return nil
}

func TestHTTPExport(t *testing.T) {
	tests := []struct {
		name        string
		protocol    string
		compression string
		headers     map[string]string
		userAgent   string
		wantType    string
	}{
		{name: "protobuf", protocol: ProtocolHTTPProtobuf, wantType: "application/x-protobuf"},
		{
			name: "protobuf gzip", protocol: ProtocolHTTPProtobuf, compression: "gzip",
			headers:   map[string]string{"Authorization": "Bearer s3cret", "X-Scope": "profiles"},
			userAgent: "pprofotel/0.1.0", wantType: "application/x-protobuf",
		},
		{name: "json", protocol: ProtocolHTTPJSON, compression: "none", userAgent: "pprofotel/0.1.0", wantType: "application/json"},
		{
			name: "json gzip", protocol: ProtocolHTTPJSON, compression: "gzip",
			// A user header must not override the protocol's own.
			headers:  map[string]string{"Content-Type": "text/plain", "X-Tenant": "a", "OTLP-Profiles-Development-Version": "2"},
			wantType: "application/json",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &httpCollector{}
			ts := startHTTP(t, c)
			e := newTestHTTP(t, OTLPConfig{
				Protocol:    tt.protocol,
				Endpoint:    ts.URL + profilesPath,
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
			if len(c.calls) != len(sent) {
				t.Fatalf("server got %d requests, want %d", len(c.calls), len(sent))
			}
			for i, call := range c.calls {
				if call.method != http.MethodPost || call.path != profilesPath {
					t.Errorf("request %d: %s %s, want POST %s", i, call.method, call.path, profilesPath)
				}
				if got := call.header.Get("Content-Type"); got != tt.wantType {
					t.Errorf("request %d Content-Type = %q, want %q", i, got, tt.wantType)
				}
				wantEncoding := ""
				if tt.compression == "gzip" {
					wantEncoding = "gzip"
				}
				if got := call.header.Get("Content-Encoding"); got != wantEncoding {
					t.Errorf("request %d Content-Encoding = %q, want %q", i, got, wantEncoding)
				}
				for k, v := range tt.headers {
					if strings.EqualFold(k, "Content-Type") || strings.EqualFold(k, profilesVersionKey) {
						continue
					}
					if got := call.header.Get(k); got != v {
						t.Errorf("request %d header %q = %q, want %q", i, k, got, v)
					}
				}
				if got := call.header.Values(profilesVersionKey); len(got) != 1 || got[0] != "1" {
					t.Errorf("request %d %s = %q, want [1]", i, profilesVersionKey, got)
				}
				if tt.userAgent != "" && call.header.Get("User-Agent") != tt.userAgent {
					t.Errorf("request %d User-Agent = %q, want %q", i, call.header.Get("User-Agent"), tt.userAgent)
				}
				if got := decodeBody(t, call); !proto.Equal(got, sent[i]) {
					t.Errorf("request %d body differs:\ngot  %v\nwant %v", i, got, sent[i])
				}
			}
		})
	}
}

func TestHTTPJSONUsesHexIDs(t *testing.T) {
	c := &httpCollector{}
	ts := startHTTP(t, c)
	e := newTestHTTP(t, OTLPConfig{Protocol: ProtocolHTTPJSON, Endpoint: ts.URL + profilesPath, Insecure: true})
	if err := e.Export(context.Background(), otlptest.Request(7)); err != nil {
		t.Fatalf("Export: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	body := string(c.calls[0].body)
	for _, want := range []string{
		`"traceId":"4bf92f3577b34da6a3ce929d0e0e4736"`,
		`"spanId":"00f067aa0ba902b7"`,
		`"profileId":"deadbeef000102030405060708090a07"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("JSON body lacks %s:\n%s", want, body)
		}
	}
}

// writeProto writes m as a response body in the given format.
func writeProto(t *testing.T, w http.ResponseWriter, code int, contentType string, m proto.Message) {
	var data []byte
	var err error
	if strings.HasPrefix(contentType, "application/json") {
		data, err = protojson.Marshal(m)
	} else {
		data, err = proto.Marshal(m)
	}
	if err != nil {
		t.Errorf("marshal response: %v", err)
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

func TestHTTPResponses(t *testing.T) {
	partial := &collectorpb.ExportProfilesServiceResponse{PartialSuccess: &collectorpb.ExportProfilesPartialSuccess{
		RejectedProfiles: 2, ErrorMessage: "profiles without samples",
	}}
	tests := []struct {
		name         string
		protocol     string
		respond      func(t *testing.T, w http.ResponseWriter)
		wantErr      bool
		wantCode     int
		wantMessage  string
		wantRejected int64 // -1: OnPartialSuccess must not be called
		wantPartial  string
		wantRetry    bool
		wantDelay    time.Duration
	}{
		{
			name: "200 empty body", protocol: ProtocolHTTPProtobuf,
			respond:      func(t *testing.T, w http.ResponseWriter) { w.WriteHeader(http.StatusOK) },
			wantRejected: -1,
		},
		{
			name: "200 partial success protobuf", protocol: ProtocolHTTPProtobuf,
			respond: func(t *testing.T, w http.ResponseWriter) {
				writeProto(t, w, http.StatusOK, "application/x-protobuf", partial)
			},
			wantRejected: 2, wantPartial: "profiles without samples",
		},
		{
			name: "200 partial success json", protocol: ProtocolHTTPJSON,
			respond: func(t *testing.T, w http.ResponseWriter) {
				writeProto(t, w, http.StatusOK, "application/json; charset=utf-8", partial)
			},
			wantRejected: 2, wantPartial: "profiles without samples",
		},
		{
			// OTLP/HTTP servers must answer in the request's Content-Type.
			// An exporter that sends protobuf has no JSON decoder linked
			// (see OTLPJSON), so such an answer counts as a plain success.
			name: "202 json answer to protobuf request", protocol: ProtocolHTTPProtobuf,
			respond: func(t *testing.T, w http.ResponseWriter) {
				writeProto(t, w, http.StatusAccepted, "application/json", partial)
			},
			wantRejected: -1,
		},
		{
			name: "200 undecodable body", protocol: ProtocolHTTPProtobuf,
			respond: func(t *testing.T, w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/x-protobuf")
				_, _ = w.Write([]byte{0xff, 0xff, 0xff})
			},
			wantRejected: -1,
		},
		{
			name: "400 with Status", protocol: ProtocolHTTPProtobuf,
			respond: func(t *testing.T, w http.ResponseWriter) {
				writeProto(t, w, http.StatusBadRequest, "application/x-protobuf", &spb.Status{Code: 3, Message: "stack_index out of range"})
			},
			wantErr: true, wantCode: 400, wantMessage: "stack_index out of range", wantRejected: -1,
		},
		{
			name: "400 with JSON Status", protocol: ProtocolHTTPJSON,
			respond: func(t *testing.T, w http.ResponseWriter) {
				writeProto(t, w, http.StatusBadRequest, "application/json", &spb.Status{Code: 3, Message: "bad json"})
			},
			wantErr: true, wantCode: 400, wantMessage: "bad json", wantRejected: -1,
		},
		{
			name: "429 Retry-After seconds", protocol: ProtocolHTTPProtobuf,
			respond: func(t *testing.T, w http.ResponseWriter) {
				w.Header().Set("Retry-After", "30")
				http.Error(w, "slow down", http.StatusTooManyRequests)
			},
			wantErr: true, wantCode: 429, wantMessage: "slow down", wantRejected: -1,
			wantRetry: true, wantDelay: 30 * time.Second,
		},
		{
			name: "429 Retry-After date in the past", protocol: ProtocolHTTPProtobuf,
			respond: func(t *testing.T, w http.ResponseWriter) {
				w.Header().Set("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT")
				w.WriteHeader(http.StatusTooManyRequests)
			},
			wantErr: true, wantCode: 429, wantRejected: -1, wantRetry: true, wantDelay: 0,
		},
		{
			name: "503", protocol: ProtocolHTTPJSON,
			respond: func(t *testing.T, w http.ResponseWriter) {
				w.WriteHeader(http.StatusServiceUnavailable)
			},
			wantErr: true, wantCode: 503, wantRejected: -1, wantRetry: true,
		},
		{
			name: "502 from a proxy", protocol: ProtocolHTTPProtobuf,
			respond: func(t *testing.T, w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusBadGateway)
				_, _ = w.Write([]byte("<html>upstream down</html>"))
			},
			wantErr: true, wantCode: 502, wantMessage: "<html>upstream down</html>", wantRejected: -1, wantRetry: true,
		},
		{
			name: "500", protocol: ProtocolHTTPProtobuf,
			respond: func(t *testing.T, w http.ResponseWriter) {
				w.WriteHeader(http.StatusInternalServerError)
			},
			wantErr: true, wantCode: 500, wantRejected: -1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &httpCollector{respond: func(w http.ResponseWriter, _ *http.Request) { tt.respond(t, w) }}
			ts := startHTTP(t, c)
			rejected := int64(-1)
			var message string
			e := newTestHTTP(t, OTLPConfig{
				Protocol: tt.protocol,
				Endpoint: ts.URL + profilesPath,
				Insecure: true,
				OnPartialSuccess: func(r int64, m string) {
					rejected, message = r, m
				},
			})
			err := e.Export(context.Background(), otlptest.Request(1))
			if rejected != tt.wantRejected || message != tt.wantPartial {
				t.Errorf("partial success = (%d, %q), want (%d, %q)", rejected, message, tt.wantRejected, tt.wantPartial)
			}
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Export = %v, want nil", err)
				}
				return
			}
			var ee *ExportError
			if !errors.As(err, &ee) {
				t.Fatalf("Export = %v (%T), want *ExportError", err, err)
			}
			if ee.StatusCode != tt.wantCode || ee.Message != tt.wantMessage || ee.Protocol != tt.protocol {
				t.Errorf("ExportError = {%s %d %q}, want {%s %d %q}", ee.Protocol, ee.StatusCode, ee.Message, tt.protocol, tt.wantCode, tt.wantMessage)
			}
			retry, delay := Retryable(err)
			if retry != tt.wantRetry || delay != tt.wantDelay {
				t.Errorf("Retryable = %v, %v; want %v, %v", retry, delay, tt.wantRetry, tt.wantDelay)
			}
		})
	}
}

func TestHTTPRetryAfterDate(t *testing.T) {
	// An HTTP-date is measured from when the response arrived. The server
	// names a time well ahead, so the delay is positive and at most that.
	const ahead = time.Hour
	c := &httpCollector{respond: func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", time.Now().Add(ahead).UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusServiceUnavailable)
	}}
	ts := startHTTP(t, c)
	e := newTestHTTP(t, OTLPConfig{Endpoint: ts.URL + profilesPath, Insecure: true})
	err := e.Export(context.Background(), otlptest.Request(1))
	var ee *ExportError
	if !errors.As(err, &ee) {
		t.Fatalf("Export = %v, want *ExportError", err)
	}
	retry, delay := ee.Retryable()
	if !retry || delay <= ahead-time.Minute || delay > ahead {
		t.Fatalf("Retryable = %v, %v; want true and about %v", retry, delay, ahead)
	}
	if _, err := http.ParseTime(ee.RetryAfter); err != nil {
		t.Errorf("RetryAfter %q is not the raw HTTP-date: %v", ee.RetryAfter, err)
	}
}

func TestHTTPTimeout(t *testing.T) {
	release := make(chan struct{})
	c := &httpCollector{respond: func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}}
	ts := startHTTP(t, c)
	// Registered after startHTTP, so it runs before ts.Close.
	t.Cleanup(func() { close(release) })
	e := newTestHTTP(t, OTLPConfig{Endpoint: ts.URL + profilesPath, Insecure: true, Timeout: 200 * time.Millisecond})
	err := e.Export(context.Background(), otlptest.Request(1))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Export = %v, want context.DeadlineExceeded", err)
	}
	var ee *ExportError
	if !errors.As(err, &ee) || ee.StatusCode != 0 {
		t.Fatalf("Export = %v, want an *ExportError without status", err)
	}
	if retry, _ := Retryable(err); !retry {
		t.Errorf("a timed-out attempt must be retryable")
	}
}

func TestHTTPCallerDeadline(t *testing.T) {
	// With no Timeout set, the caller's context alone bounds the attempt.
	release := make(chan struct{})
	c := &httpCollector{respond: func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}}
	ts := startHTTP(t, c)
	t.Cleanup(func() { close(release) })
	e := newTestHTTP(t, OTLPConfig{Endpoint: ts.URL + profilesPath, Insecure: true})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := e.Export(ctx, otlptest.Request(1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Export = %v, want context.DeadlineExceeded", err)
	}
}

func TestHTTPTLS(t *testing.T) {
	c := &httpCollector{}
	ts := httptest.NewUnstartedServer(c)
	// The rejected handshake below is expected; keep it out of the log.
	ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	ts.StartTLS()
	defer ts.Close()
	roots := x509.NewCertPool()
	roots.AddCert(ts.Certificate())

	cfg := OTLPConfig{Protocol: ProtocolHTTPProtobuf, Endpoint: ts.URL + profilesPath}
	trusting, err := newHTTPExporter(cfg, &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	defer trusting.Shutdown(context.Background())
	if err := trusting.Export(context.Background(), otlptest.Request(1)); err != nil {
		t.Fatalf("Export over TLS with trusted root: %v", err)
	}

	// NewOTLP trusts only the system roots: the test certificate is
	// rejected, and waiting will not change that.
	e := newTestHTTP(t, cfg)
	err = e.Export(context.Background(), otlptest.Request(2))
	if err == nil {
		t.Fatal("Export to an untrusted server succeeded")
	}
	if retry, _ := Retryable(err); retry {
		t.Errorf("Retryable(%v) = true, want a permanent certificate error", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.calls) != 1 {
		t.Fatalf("server got %d requests, want only the trusted one", len(c.calls))
	}
}

func TestHTTPUnreachable(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL + profilesPath
	ts.Close()
	e := newTestHTTP(t, OTLPConfig{Endpoint: url, Insecure: true, Timeout: 5 * time.Second})
	err := e.Export(context.Background(), otlptest.Request(1))
	var ee *ExportError
	if !errors.As(err, &ee) || ee.StatusCode != 0 || ee.Err == nil {
		t.Fatalf("Export = %v, want an *ExportError with a transport error", err)
	}
	if retry, _ := Retryable(err); !retry {
		t.Errorf("an unreachable collector must be retryable")
	}
}

func TestHTTPShutdown(t *testing.T) {
	c := &httpCollector{}
	ts := startHTTP(t, c)
	e := newTestHTTP(t, OTLPConfig{Endpoint: ts.URL + profilesPath, Insecure: true})
	if err := e.Export(context.Background(), otlptest.Request(1)); err != nil {
		t.Fatalf("Export: %v", err)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := e.Export(context.Background(), otlptest.Request(2)); !errors.Is(err, ErrShutdown) {
		t.Fatalf("Export after Shutdown = %v, want ErrShutdown", err)
	}
	if err := e.Export(context.Background(), nil); !errors.Is(err, ErrShutdown) {
		t.Fatalf("Export(nil) after Shutdown = %v, want ErrShutdown", err)
	}
}

func TestHTTPGzipBodyIsCompressed(t *testing.T) {
	// The body on the wire, before the test server decompresses it, must be
	// a gzip stream of the protobuf encoding.
	var mu sync.Mutex
	var raw []byte
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		raw, _ = io.ReadAll(r.Body)
	}))
	defer ts.Close()
	e := newTestHTTP(t, OTLPConfig{Endpoint: ts.URL + profilesPath, Insecure: true, Compression: "gzip"})
	req := otlptest.Request(3)
	if err := e.Export(context.Background(), req); err != nil {
		t.Fatalf("Export: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("body is not gzip: %v", err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := proto.Marshal(req)
	got := new(collectorpb.ExportProfilesServiceRequest)
	if err := proto.Unmarshal(plain, got); err != nil || !proto.Equal(got, req) || len(plain) != len(want) {
		t.Fatalf("decompressed body does not decode to the request (err %v)", err)
	}
}

func BenchmarkHTTPEncode(b *testing.B) {
	for _, bb := range []struct {
		name     string
		protocol string
		gzip     bool
	}{
		{"protobuf", ProtocolHTTPProtobuf, false},
		{"protobuf-gzip", ProtocolHTTPProtobuf, true},
		{"json", ProtocolHTTPJSON, false},
		{"json-gzip", ProtocolHTTPJSON, true},
	} {
		b.Run(bb.name, func(b *testing.B) {
			e := &httpExporter{gzip: bb.gzip}
			if bb.protocol == ProtocolHTTPJSON {
				e.json = OTLPJSON()
			}
			req := otlptest.Request(1)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.encode(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

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
			err = e.Export(context.Background(), otlptest.Request(1))
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
				check(t, e.Export(context.Background(), otlptest.Request(1)))
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
			check(t, e.Export(context.Background(), otlptest.Request(1)))
		})
	}
}

// TestHTTPErrorMessageKeepsBothEnds checks that a long plain-text error body
// keeps its end, where servers put the reason, within the bound.
func TestHTTPErrorMessageKeepsBothEnds(t *testing.T) {
	body := "profile series '{" + strings.Repeat(`a="x", `, 200) + "}' has 55 label names; limit 30"
	msg := errorMessage("text/plain; charset=utf-8", []byte(body))
	if !strings.HasPrefix(msg, "profile series '{") || !strings.HasSuffix(msg, "has 55 label names; limit 30") || len(msg) > maxErrorMessage+5 {
		t.Errorf("message %q (%d bytes): want both ends of the body within %d bytes", msg, len(msg), maxErrorMessage)
	}
}
