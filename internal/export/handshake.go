package export

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/credentials"
)

// A TLS 1.3 server that asks for a client certificate verifies it after the
// client considers the handshake done (RFC 8446, section 4.4.2): its refusal
// is an alert that arrives after the client's first write may have gone
// out, and a reset connection, or a transport that closed before its first
// request, can then hide the alert. The dialers below wait, on such a
// connection only, for the server's first record after the handshake, which
// is the server's verdict: an alert when it refuses our certificate, a
// NewSessionTicket (sent once the certificate is accepted) or, over
// HTTP/2, the SETTINGS frame that must open the server's side, when it
// accepts. The wait costs one round trip per new connection.

const (
	// recordHeaderLen is the length of a TLS record header.
	recordHeaderLen = 5
	// handshakeTimeout bounds the TLS handshake and the wait for the
	// verdict, as http.DefaultTransport's TLSHandshakeTimeout does.
	handshakeTimeout = 10 * time.Second
	// minSilentWait is the least time to wait for the verdict of a server
	// that may send nothing until asked (HTTP/1.1 without session
	// tickets): see verdictWait.
	minSilentWait = 100 * time.Millisecond
)

// recordConn is the connection beneath a client tls.Conn. While probing it
// hands the tls.Conn one record at a time and, once a record has been
// consumed without a Read returning (a post-handshake handshake message:
// a session ticket), answers errVerdictSeen instead of reading further, so
// that no application data is decrypted and taken from its reader.
type recordConn struct {
	net.Conn
	// probing is set and cleared by the goroutine that probes, before the
	// connection is handed over.
	probing bool
	header  [recordHeaderLen]byte
	got     int // header bytes of the current record read
	body    int // body bytes of the current record still to read
	records int // records read while probing
}

// errVerdictSeen ends a probe's Read after a post-handshake handshake
// message. It is a temporary net.Error, which crypto/tls does not keep as
// the connection's error.
var errVerdictSeen = &verdictSeenError{}

type verdictSeenError struct{}

func (*verdictSeenError) Error() string   { return "tls: server's post-handshake message read" }
func (*verdictSeenError) Timeout() bool   { return true }
func (*verdictSeenError) Temporary() bool { return true }

func (c *recordConn) Read(p []byte) (int, error) {
	if !c.probing {
		return c.Conn.Read(p)
	}
	if c.got < recordHeaderLen {
		if c.got == 0 && c.records > 0 {
			return 0, errVerdictSeen
		}
		n, err := c.Conn.Read(p[:min(len(p), recordHeaderLen-c.got)])
		copy(c.header[c.got:], p[:n])
		c.got += n
		if c.got == recordHeaderLen {
			c.body = int(c.header[3])<<8 | int(c.header[4])
			c.endRecord()
		}
		return n, err
	}
	n, err := c.Conn.Read(p[:min(len(p), c.body)])
	c.body -= n
	c.endRecord()
	return n, err
}

// endRecord starts the next record once the current one has been read.
func (c *recordConn) endRecord() {
	if c.got == recordHeaderLen && c.body == 0 {
		c.got = 0
		c.records++
	}
}

// verdictConfig returns a copy of cfg that sets asked when the server asks
// for a certificate (choosing it as crypto/tls does) and, unless cfg has a
// session cache or disables tickets, a cache that keeps nothing: crypto/tls
// asks a server for session tickets only when it has a cache, and the
// ticket is the verdict of a server that accepts us.
func verdictConfig(cfg *tls.Config, asked *atomic.Bool) *tls.Config {
	if cfg == nil {
		cfg = &tls.Config{}
	}
	c := cfg.Clone()
	get, certs := cfg.GetClientCertificate, cfg.Certificates
	c.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		asked.Store(true)
		if get != nil {
			return get(cri)
		}
		for i := range certs {
			if cri.SupportsCertificate(&certs[i]) == nil {
				return &certs[i], nil
			}
		}
		return new(tls.Certificate), nil
	}
	if c.ClientSessionCache == nil {
		c.ClientSessionCache = noResumption{}
	}
	return c
}

// noResumption is a session cache that keeps nothing, so that no session is
// resumed: the exporter's identity is its certificate on every connection.
type noResumption struct{}

func (noResumption) Get(string) (*tls.ClientSessionState, bool) { return nil, false }
func (noResumption) Put(string, *tls.ClientSessionState)        {}

// verdictWait is how long to wait for a server's verdict after a handshake
// that lasted took. An HTTP/2 server must speak first, so its verdict comes
// without a bound but the context's; a server that may stay silent until
// asked is given twice the handshake's time (in which its first flight
// came, signed and verified), and at least minSilentWait.
func verdictWait(cs tls.ConnectionState, took time.Duration) time.Duration {
	if cs.NegotiatedProtocol == "h2" {
		return handshakeTimeout
	}
	return max(2*took, minSilentWait)
}

// awaitVerdict reads, through tc on rc, the server's first record after a
// TLS 1.3 handshake, for at most wait and within ctx. It returns the
// application data it had to read (at most one byte; the server accepted),
// nil (a session ticket came, or nothing did in time), or the error that
// ended the connection: the server's alert, or a network failure.
func awaitVerdict(ctx context.Context, tc *tls.Conn, rc *recordConn, wait time.Duration) ([]byte, error) {
	deadline := time.Now().Add(wait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := tc.SetReadDeadline(deadline); err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = tc.SetReadDeadline(time.Unix(1, 0)) })
	rc.probing = true
	var b [1]byte
	n, err := tc.Read(b[:])
	rc.probing = false
	if !stop() {
		return nil, ctx.Err()
	}
	if err := tc.SetReadDeadline(time.Time{}); err != nil {
		return nil, err
	}
	switch {
	case n > 0:
		return b[:n], nil
	case err == nil, errors.Is(err, errVerdictSeen), errors.Is(err, os.ErrDeadlineExceeded):
		return nil, nil
	}
	return nil, err
}

// probe waits for the verdict on a connection whose handshake took took,
// when the server asked for our certificate under TLS 1.3.
func probe(ctx context.Context, tc *tls.Conn, rc *recordConn, asked bool, took time.Duration) ([]byte, error) {
	cs := tc.ConnectionState()
	if !asked || cs.Version != tls.VersionTLS13 {
		return nil, nil
	}
	return awaitVerdict(ctx, tc, rc, verdictWait(cs, took))
}

// tlsDialer is the DialTLSContext of the HTTP exporter's transport: the
// handshake net/http would make, then the wait for the verdict.
type tlsDialer struct {
	dialer    *net.Dialer
	transport *http.Transport
}

// errProbeReadData reports a probe that had to read application data,
// which a *tls.Conn cannot be given back.
var errProbeReadData = errors.New("tls: server sent application data first")

func (d *tlsDialer) DialTLSContext(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := d.dial(ctx, network, addr, true)
	if errors.Is(err, errProbeReadData) {
		// The server accepted us and spoke first (HTTP/2 without
		// session tickets): the verdict is known; dial again without
		// reading.
		conn, err = d.dial(ctx, network, addr, false)
	}
	return conn, err
}

func (d *tlsDialer) dial(ctx context.Context, network, addr string, await bool) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	raw, err := d.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	// net/http has added its protocols to the transport's configuration
	// before the first dial.
	var asked atomic.Bool
	cfg := verdictConfig(d.transport.TLSClientConfig, &asked)
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	rc := &recordConn{Conn: raw}
	tc := tls.Client(rc, cfg)
	start := time.Now()
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, err
	}
	if await {
		early, err := probe(ctx, tc, rc, asked.Load(), time.Since(start))
		if err == nil && len(early) > 0 {
			err = errProbeReadData
		}
		if err != nil {
			_ = raw.Close()
			return nil, err
		}
	}
	return tc, nil
}

// verdictCreds are gRPC's TLS credentials followed by the wait for the
// verdict. Each handshake's outcome is kept in last, because gRPC reports
// a failed connection to the call as text only.
type verdictCreds struct {
	credentials.TransportCredentials
	config *tls.Config
	last   *handshakeOutcome
}

func newVerdictCreds(cfg *tls.Config, last *handshakeOutcome) *verdictCreds {
	return &verdictCreds{TransportCredentials: credentials.NewTLS(cfg), config: cfg, last: last}
}

func (c *verdictCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	var asked atomic.Bool
	rc := &recordConn{Conn: raw}
	start := time.Now()
	conn, info, err := credentials.NewTLS(verdictConfig(c.config, &asked)).ClientHandshake(ctx, authority, rc)
	if tc, ok := conn.(*tls.Conn); ok && err == nil {
		var early []byte
		early, err = probe(ctx, tc, rc, asked.Load(), time.Since(start))
		if err != nil {
			_ = tc.Close()
			conn, info = nil, nil
		} else if len(early) > 0 {
			conn = &prefixConn{Conn: tc, prefix: early}
		}
	}
	c.last.set(err)
	return conn, info, err
}

// Clone keeps the wait and the shared outcome.
func (c *verdictCreds) Clone() credentials.TransportCredentials {
	return newVerdictCreds(c.config.Clone(), c.last)
}

// prefixConn returns the bytes a probe read before those of its Conn.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// handshakeOutcome is the error of a gRPC connection's latest handshake.
type handshakeOutcome struct {
	mu  sync.Mutex
	err error
}

func (h *handshakeOutcome) set(err error) {
	h.mu.Lock()
	h.err = err
	h.mu.Unlock()
}

// cause returns the latest handshake's error if a call's status message
// reports it: gRPC quotes the error's text in it.
func (h *handshakeOutcome) cause(message string) error {
	h.mu.Lock()
	err := h.err
	h.mu.Unlock()
	if err == nil {
		return nil
	}
	text := err.Error()
	quoted := strconv.Quote(text)
	if strings.Contains(message, text) || strings.Contains(message, quoted[1:len(quoted)-1]) {
		return err
	}
	return nil
}
