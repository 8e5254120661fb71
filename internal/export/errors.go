package export

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrShutdown is returned by Export after Shutdown.
var ErrShutdown = errors.New("export: exporter is shut down")

// ExportError is a failed export attempt. It keeps what the transport
// reported so that a retry policy can decide, through Retryable, whether and
// when to send the same request again.
type ExportError struct {
	// Protocol is the protocol of the attempt, e.g. ProtocolGRPC.
	Protocol string
	// Status is the status of a failed gRPC call, details included. It is
	// nil for HTTP.
	Status *status.Status
	// StatusCode is the HTTP status of the response, or 0 when no response
	// arrived or the protocol is gRPC.
	StatusCode int
	// RetryAfter is the raw Retry-After header of the HTTP response.
	RetryAfter string
	// Message is the receiver's explanation of an HTTP failure: the
	// message of the google.rpc.Status body, or the start of a body in
	// another format.
	Message string
	// Err is the underlying error: the gRPC status error, or the HTTP
	// client's error when no response arrived. It is nil for an HTTP
	// response with a failure status.
	Err error

	// handshakeErr is the error of the TLS handshake that a failed gRPC
	// call reports as text: gRPC does not keep the error itself.
	handshakeErr error
	// ctxErr is the attempt context's error when it had expired, so that
	// errors.Is(err, context.DeadlineExceeded) holds for both transports.
	ctxErr error
	// received is when the HTTP response arrived; an HTTP-date in
	// Retry-After is relative to it.
	received time.Time
}

// Error describes the failure with the protocol it happened on.
func (e *ExportError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "otlp %s export: ", e.Protocol)
	switch {
	case e.Status != nil:
		fmt.Fprintf(&b, "%s: %s", e.Status.Code(), e.Status.Message())
	case e.StatusCode != 0:
		fmt.Fprintf(&b, "HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
		if e.Message != "" {
			fmt.Fprintf(&b, ": %s", e.Message)
		}
	case e.Err != nil:
		b.WriteString(e.Err.Error())
	default:
		b.WriteString("failed")
	}
	return b.String()
}

// Unwrap returns the underlying error and, when the attempt ran out of time
// or was cancelled, the context's error.
func (e *ExportError) Unwrap() []error {
	var errs []error
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	if e.handshakeErr != nil {
		errs = append(errs, e.handshakeErr)
	}
	if e.ctxErr != nil {
		errs = append(errs, e.ctxErr)
	}
	return errs
}

// Retryable reports whether the same request may be sent again and how long
// the receiver asked to wait first (0 when it did not say), by the OTLP
// specification's rules. grpcRetryable and httpRetryable hold the list of
// retryable codes, the one list: the public documentation (the root
// package's RetryConfig) is checked against them by a test. A RetryInfo or
// Retry-After delay is honoured; an attempt that got no response is
// retryable unless a TLS handshake failed: a server certificate we refuse
// (unknown authority, wrong name, expired) or a client certificate the
// server refuses would meet the same refusal on the next attempt, so on both
// transports they are permanent. Everything else is permanent.
func (e *ExportError) Retryable() (bool, time.Duration) {
	if isCertificateError(e.Err) || isCertificateError(e.handshakeErr) {
		return false, 0
	}
	switch {
	case e.Status != nil:
		return grpcRetryable(e.Status)
	case e.StatusCode != 0:
		received := e.received
		if received.IsZero() {
			received = time.Now()
		}
		return httpRetryable(e.StatusCode, e.RetryAfter, received)
	case e.Err != nil:
		return !isCertificateError(e.Err), 0
	}
	return false, 0
}

// Retryable classifies any error returned by an Exporter: an *ExportError
// anywhere in err's chain decides as ExportError.Retryable does; any other
// error (an invalid request, a shut-down exporter, a file system failure) is
// permanent.
func Retryable(err error) (bool, time.Duration) {
	var ee *ExportError
	if errors.As(err, &ee) {
		return ee.Retryable()
	}
	return false, 0
}

func grpcRetryable(st *status.Status) (bool, time.Duration) {
	delay, hasInfo := retryInfoDelay(st)
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded, codes.Aborted,
		codes.OutOfRange, codes.Unavailable, codes.DataLoss:
		return true, delay
	case codes.ResourceExhausted:
		// Without RetryInfo the receiver is out of a resource that
		// waiting will not bring back (e.g. the message is too large).
		return hasInfo, delay
	}
	return false, 0
}

// retryInfoDelay returns the delay of the first google.rpc.RetryInfo detail.
func retryInfoDelay(st *status.Status) (time.Duration, bool) {
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return max(ri.GetRetryDelay().AsDuration(), 0), true
		}
	}
	return 0, false
}

func httpRetryable(code int, retryAfter string, received time.Time) (bool, time.Duration) {
	switch code {
	case http.StatusTooManyRequests, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true, parseRetryAfter(retryAfter, received)
	}
	return false, 0
}

// parseRetryAfter reads a Retry-After value (RFC 9110, section 10.2.3):
// either delay-seconds or an HTTP-date. Missing or malformed values yield 0,
// leaving the wait to the retry policy's own backoff.
func parseRetryAfter(v string, received time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(received), 0)
	}
	return 0
}

// isCertificateError reports a TLS handshake that will fail on a later
// attempt too: our verification of the server's certificate, or the
// server's refusal of the handshake or of our certificate.
//
// net/http keeps the error chain, and the gRPC exporter finds its
// handshake's error (handshakeOutcome), so the verification errors are
// found by type. A peer's refusal reaches us as an alert, whose type
// crypto/tls does not export, inside a *net.OpError with Op "remote
// error". Under TLS 1.3 a server verifies our certificate after our
// handshake has completed; the dialers wait for its verdict (handshake.go)
// so that its alert, not a reset connection, is what a refusal returns.
func isCertificateError(err error) bool {
	if err == nil {
		return false
	}
	var verr *tls.CertificateVerificationError
	var uerr x509.UnknownAuthorityError
	var herr x509.HostnameError
	var cerr x509.CertificateInvalidError
	if errors.As(err, &verr) || errors.As(err, &uerr) ||
		errors.As(err, &herr) || errors.As(err, &cerr) {
		return true
	}
	var oerr *net.OpError
	return errors.As(err, &oerr) && oerr.Op == "remote error" && oerr.Err != nil && refusalAlert(oerr.Err.Error())
}

// refusalAlert reports the text of a TLS alert by which a peer refuses the
// handshake or a certificate (RFC 8446, section 6.2), as crypto/tls
// spells it.
func refusalAlert(text string) bool {
	switch strings.TrimPrefix(text, "tls: ") {
	case "handshake failure", "bad certificate", "unsupported certificate",
		"revoked certificate", "expired certificate", "unknown certificate",
		"unknown certificate authority", "access denied", "certificate required":
		return true
	}
	return false
}
