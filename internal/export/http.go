package export

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/pprofotel/profiler/internal/convert/otlp"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
)

const (
	contentTypeProtobuf = "application/x-protobuf"
	contentTypeJSON     = "application/json"

	// maxResponseBody bounds what is read of a response. Collector
	// responses are a few bytes; anything longer is not worth the memory.
	maxResponseBody = 64 << 10
	// maxErrorMessage bounds the text of a non-Status error body kept in
	// ExportError.Message: its first and last halves are kept.
	maxErrorMessage = 512
	// maxResponseHeaderBytes bounds the header of a response, which
	// net/http would otherwise read up to 10 MB of (1 MB over HTTP/2) and
	// keep while the response is handled. A receiver's response header is
	// a few hundred bytes.
	maxResponseHeaderBytes = 64 << 10
)

// httpExporter POSTs each request to one URL.
type httpExporter struct {
	client *http.Client
	// transport is the exporter's own, nil when the application gave the
	// client.
	transport *http.Transport
	url       string
	// json is the OTLP/JSON codec, nil for binary protobuf bodies.
	json      *JSONCodec
	gzip      bool
	header    http.Header
	timeout   time.Duration
	onPartial func(int64, string)
	shutdown  atomic.Bool

	// encMu guards the encoding state reused from one request to the next:
	// the gzip writer and the buffer the protobuf encoding is marshalled
	// into before compression. The compressed body itself is new for every
	// request, because the transport may still read it after Do returns.
	encMu sync.Mutex
	gz    Gzip
	raw   []byte
	// size sizes the buffer of an uncompressed encoding, which cannot be
	// reused.
	size sizeHint
}

// sizeHint remembers the size of the last protobuf encoding of a request.
// Requests of consecutive windows are about the same size, so a buffer an
// eighth larger than the last encoding usually holds the next one: without
// it otlp.AppendRequest would grow a megabyte-sized request from nothing,
// copying it many times over. It is safe for concurrent use.
type sizeHint struct{ last atomic.Int64 }

// size returns the capacity to allocate for the next encoding.
func (h *sizeHint) size() int {
	n := int(h.last.Load())
	return n + n/8
}

// buffer returns an empty buffer of the capacity size gives.
func (h *sizeHint) buffer() []byte { return make([]byte, 0, h.size()) }

// record notes the size of an encoding.
func (h *sizeHint) record(b []byte) { h.last.Store(int64(len(b))) }

// newHTTPExporter builds the exporter. tlsConfig is used for https URLs;
// tests pass one that trusts their server.
func newHTTPExporter(cfg OTLPConfig, tlsConfig *tls.Config) (*httpExporter, error) {
	u, err := checkHTTPEndpoint(cfg.Endpoint, cfg.Insecure)
	if err != nil {
		return nil, err
	}
	e := &httpExporter{
		url:       u.String(),
		json:      cfg.JSON,
		gzip:      cfg.Compression == compressionGzip,
		header:    make(http.Header),
		timeout:   cfg.Timeout,
		onPartial: cfg.OnPartialSuccess,
	}
	if cfg.HTTPClient != nil {
		// A copy, so that the application's client keeps its own
		// redirect policy.
		client := *cfg.HTTPClient
		client.CheckRedirect = refuseRedirect
		e.client = &client
	} else {
		e.transport = newTransport(tlsConfig, cfg.Proxy)
		e.client = &http.Client{Transport: e.transport, CheckRedirect: refuseRedirect}
	}
	// User headers first: the protocol's own headers must win.
	for _, k := range sortedKeys(cfg.Headers) {
		e.header.Set(k, cfg.Headers[k])
	}
	if cfg.UserAgent != "" {
		e.header.Set("User-Agent", cfg.UserAgent)
	}
	e.header.Set("Content-Type", contentTypeProtobuf)
	if e.json != nil {
		e.header.Set("Content-Type", contentTypeJSON)
	}
	e.header.Set(profilesVersionKey, profilesVersion)
	e.header.Del("Content-Encoding")
	if e.gzip {
		e.header.Set("Content-Encoding", "gzip")
	}
	return e, nil
}

// refuseRedirect makes the client return a redirect response instead of
// following it. The exporter sends to one configured URL: a redirect could
// take the body and the configured headers, which are often credentials
// that net/http cannot tell apart from other headers, to another host or
// from https to plain http. The redirect is reported as a permanent
// failure that names where it pointed.
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// newTransport is http.DefaultTransport's configuration (proxy from the
// environment unless proxy says otherwise, dial and handshake timeouts,
// HTTP/2) with a private connection pool, so that Shutdown closes only this
// exporter's connections, and a bound on response headers.
func newTransport(tlsConfig *tls.Config, proxy func(*http.Request) (*url.URL, error)) *http.Transport {
	if proxy == nil {
		proxy = http.ProxyFromEnvironment
	}
	dialer := &net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
	}
	t := &http.Transport{
		Proxy:                  proxy,
		DialContext:            dialer.DialContext,
		TLSClientConfig:        tlsConfig,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           4,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    handshakeTimeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
	}
	// Direct https connections are dialled by tlsDialer, which waits for
	// a TLS 1.3 server's verdict on our certificate (see handshake.go).
	t.DialTLSContext = (&tlsDialer{dialer: dialer, transport: t}).DialTLSContext
	return t
}

// Export makes one POST. A failure status or a failed round trip returns an
// *ExportError.
func (e *httpExporter) Export(ctx context.Context, req *collectorpb.ExportProfilesServiceRequest) error {
	if e.shutdown.Load() {
		return ErrShutdown
	}
	if req == nil {
		return errNilRequest
	}
	body, err := e.encode(req)
	if err != nil {
		return err
	}
	ctx, cancel := attemptContext(ctx, e.timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("otlp endpoint %q: %w", e.url, err)
	}
	hreq.Header = e.header.Clone()
	resp, err := do(ctx, e.client, hreq)
	if err != nil {
		return &ExportError{Protocol: e.protocol(), Err: err, ctxErr: ctx.Err()}
	}
	received := time.Now()
	// Reading to EOF before closing lets the connection be reused.
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBody))
		_ = resp.Body.Close()
	}()
	data, readErr := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody))

	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		// The receiver has accepted the data, so a body that cannot be
		// read or decoded must not turn into an error that would make a
		// retry policy send it again.
		if readErr == nil {
			ps := e.decodeResponse(resp.Header.Get("Content-Type"), data).GetPartialSuccess()
			reportPartialSuccess(e.onPartial, ps.GetRejectedProfiles(), ps.GetErrorMessage())
		}
		return nil
	}
	msg := errorMessage(resp.Header.Get("Content-Type"), data)
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		msg = fmt.Sprintf("redirect to %q not followed: configure the endpoint it names", truncate(resp.Header.Get("Location")))
	}
	return &ExportError{
		Protocol:   e.protocol(),
		StatusCode: resp.StatusCode,
		RetryAfter: resp.Header.Get("Retry-After"),
		Message:    msg,
		received:   received,
	}
}

// do sends hreq with client and returns when the response arrives or ctx
// is done, whichever comes first. A client's transport that ignores the
// request's context (an application's http.RoundTripper can) would
// otherwise keep Export past its deadline, and with it the profiler's
// Stop. The round trip is then left to finish on its own goroutine; its
// late response is closed unread. The body is a buffer of this request
// alone, so nothing the exporter reuses is read after do returns.
func do(ctx context.Context, client *http.Client, hreq *http.Request) (*http.Response, error) {
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := client.Do(hreq)
		done <- result{resp, err}
	}()
	select {
	case r := <-done:
		return r.resp, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.resp != nil {
				_ = r.resp.Body.Close()
			}
		}()
		return nil, fmt.Errorf("%w (the HTTP client did not return)", ctx.Err())
	}
}

func (e *httpExporter) protocol() string {
	if e.json != nil {
		return ProtocolHTTPJSON
	}
	return ProtocolHTTPProtobuf
}

// encode marshals req for the wire, compressed if asked.
func (e *httpExporter) encode(req *collectorpb.ExportProfilesServiceRequest) ([]byte, error) {
	if e.gzip {
		e.encMu.Lock()
		defer e.encMu.Unlock()
	}
	var body []byte
	var err error
	switch {
	case e.json != nil:
		body, err = e.json.Marshal(req)
	case e.gzip:
		// Only the compressed copy leaves encode, so the encoding can be
		// marshalled into the buffer kept for that, with room for an
		// eighth more than the last one: grown by append, it would stay
		// a quarter or more larger for good.
		body, err = otlp.AppendRequest(slices.Grow(e.raw[:0], len(e.raw)+len(e.raw)/8), req)
		if err == nil {
			e.raw = body
		}
	default:
		body, err = otlp.AppendRequest(e.size.buffer(), req)
		if err == nil {
			e.size.record(body)
		}
	}
	if err != nil {
		if e.json == nil {
			err = fmt.Errorf("otlp protobuf: %w", err)
		}
		return nil, err
	}
	if !e.gzip {
		return body, nil
	}
	return e.gz.Append(nil, body), nil
}

// decodeResponse decodes a success body in the format its Content-Type
// names, or in the request's format when none is named. It returns nil for
// an empty or undecodable body, and for a JSON body when the exporter sends
// protobuf and so has no JSON codec.
func (e *httpExporter) decodeResponse(contentType string, data []byte) *collectorpb.ExportProfilesServiceResponse {
	if len(data) == 0 {
		return nil
	}
	resp := new(collectorpb.ExportProfilesServiceResponse)
	var err error
	switch mediaType(contentType, e.json != nil) {
	case contentTypeJSON:
		if e.json == nil {
			return nil
		}
		err = e.json.Unmarshal(data, resp)
	case contentTypeProtobuf:
		err = proto.Unmarshal(data, resp)
	default:
		return nil
	}
	if err != nil {
		return nil
	}
	return resp
}

// errorMessage extracts the explanation from a failure body: OTLP/HTTP
// servers send a google.rpc.Status; proxies in between often send text.
func errorMessage(contentType string, data []byte) string {
	if len(data) == 0 {
		return ""
	}
	st := new(spb.Status)
	mt := ""
	if contentType != "" {
		mt = mediaType(contentType, false)
	}
	switch mt {
	case contentTypeProtobuf:
		if proto.Unmarshal(data, st) == nil {
			return st.GetMessage()
		}
	case contentTypeJSON:
		// Only the message is wanted, which encoding/json reads without
		// linking protojson into programs that send protobuf.
		var js struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(data, &js) == nil {
			return truncate(js.Message)
		}
	}
	if !utf8.Valid(data) {
		return ""
	}
	return truncate(strings.TrimSpace(string(data)))
}

// truncate bounds a text taken from a response to maxErrorMessage bytes.
func truncate(msg string) string {
	if len(msg) > maxErrorMessage {
		// Both ends: servers tend to put the reason last, after what
		// they refused (Pyroscope: a series' labels, then "has 55 label
		// names; limit 30").
		half := maxErrorMessage / 2
		msg = strings.ToValidUTF8(msg[:half], "") + " ... " + strings.ToValidUTF8(msg[len(msg)-half:], "")
	}
	return msg
}

// mediaType returns the media type of a Content-Type header, folding the
// protobuf aliases into contentTypeProtobuf. An absent header means the
// request's own format.
func mediaType(contentType string, requestJSON bool) string {
	if contentType == "" {
		if requestJSON {
			return contentTypeJSON
		}
		return contentTypeProtobuf
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	if mt == "application/protobuf" {
		return contentTypeProtobuf
	}
	return mt
}

// Shutdown closes the idle connections of the exporter's own transport,
// and leaves those of a client the application gave alone. A request in
// flight is not interrupted: its context bounds it, or, with a transport
// that ignores its context, the delivery queue gives it up.
func (e *httpExporter) Shutdown(ctx context.Context) error {
	e.shutdown.Store(true)
	if e.transport != nil {
		e.transport.CloseIdleConnections()
	}
	return nil
}
