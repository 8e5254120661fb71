package export

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// statusWithRetryInfo returns a status carrying a RetryInfo of delay.
func statusWithRetryInfo(t *testing.T, c codes.Code, delay time.Duration) *status.Status {
	t.Helper()
	st, err := status.New(c, "slow down").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
	if err != nil {
		t.Fatalf("WithDetails: %v", err)
	}
	return st
}

func TestGRPCRetryable(t *testing.T) {
	tests := []struct {
		name      string
		st        *status.Status
		wantRetry bool
		wantDelay time.Duration
	}{
		{"ok", status.New(codes.OK, ""), false, 0},
		{"canceled", status.New(codes.Canceled, ""), true, 0},
		{"unknown", status.New(codes.Unknown, ""), false, 0},
		{"invalid argument", status.New(codes.InvalidArgument, ""), false, 0},
		{"deadline exceeded", status.New(codes.DeadlineExceeded, ""), true, 0},
		{"not found", status.New(codes.NotFound, ""), false, 0},
		{"already exists", status.New(codes.AlreadyExists, ""), false, 0},
		{"permission denied", status.New(codes.PermissionDenied, ""), false, 0},
		{"resource exhausted without RetryInfo", status.New(codes.ResourceExhausted, ""), false, 0},
		{"resource exhausted with RetryInfo", statusWithRetryInfo(t, codes.ResourceExhausted, 3*time.Second), true, 3 * time.Second},
		{"resource exhausted with zero RetryInfo", statusWithRetryInfo(t, codes.ResourceExhausted, 0), true, 0},
		{"resource exhausted with negative RetryInfo", statusWithRetryInfo(t, codes.ResourceExhausted, -time.Second), true, 0},
		{"failed precondition", status.New(codes.FailedPrecondition, ""), false, 0},
		{"aborted", status.New(codes.Aborted, ""), true, 0},
		{"out of range", status.New(codes.OutOfRange, ""), true, 0},
		{"unimplemented", status.New(codes.Unimplemented, ""), false, 0},
		{"internal", status.New(codes.Internal, ""), false, 0},
		{"unavailable", status.New(codes.Unavailable, ""), true, 0},
		{"unavailable with RetryInfo", statusWithRetryInfo(t, codes.Unavailable, 1500*time.Millisecond), true, 1500 * time.Millisecond},
		{"permission denied with RetryInfo", statusWithRetryInfo(t, codes.PermissionDenied, time.Second), false, 0},
		{"data loss", status.New(codes.DataLoss, ""), true, 0},
		{"unauthenticated", status.New(codes.Unauthenticated, ""), false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := &ExportError{Protocol: ProtocolGRPC, Status: tt.st, Err: tt.st.Err()}
			retry, delay := err.Retryable()
			if retry != tt.wantRetry || delay != tt.wantDelay {
				t.Fatalf("Retryable() = %v, %v; want %v, %v", retry, delay, tt.wantRetry, tt.wantDelay)
			}
			// The package-level function must see through wrapping.
			retry, delay = Retryable(fmt.Errorf("profiler: %w", err))
			if retry != tt.wantRetry || delay != tt.wantDelay {
				t.Fatalf("Retryable(wrapped) = %v, %v; want %v, %v", retry, delay, tt.wantRetry, tt.wantDelay)
			}
		})
	}
}

func TestHTTPRetryable(t *testing.T) {
	received := time.Date(2026, 11, 21, 23, 59, 0, 0, time.UTC)
	tests := []struct {
		name       string
		code       int
		retryAfter string
		wantRetry  bool
		wantDelay  time.Duration
	}{
		{"bad request", http.StatusBadRequest, "", false, 0},
		{"unauthorized", http.StatusUnauthorized, "", false, 0},
		{"not found", http.StatusNotFound, "", false, 0},
		{"payload too large", http.StatusRequestEntityTooLarge, "", false, 0},
		{"internal server error", http.StatusInternalServerError, "", false, 0},
		{"bad request ignores Retry-After", http.StatusBadRequest, "30", false, 0},
		{"too many requests", http.StatusTooManyRequests, "", true, 0},
		{"too many requests seconds", http.StatusTooManyRequests, "7", true, 7 * time.Second},
		{"too many requests padded seconds", http.StatusTooManyRequests, " 7 ", true, 7 * time.Second},
		{"too many requests date", http.StatusTooManyRequests, "Sun, 22 Nov 2026 00:00:30 GMT", true, 90 * time.Second},
		{"too many requests past date", http.StatusTooManyRequests, "Sat, 21 Nov 2026 23:00:00 GMT", true, 0},
		{"too many requests malformed", http.StatusTooManyRequests, "soon", true, 0},
		{"too many requests negative", http.StatusTooManyRequests, "-5", true, 0},
		{"bad gateway", http.StatusBadGateway, "", true, 0},
		{"service unavailable seconds", http.StatusServiceUnavailable, "120", true, 2 * time.Minute},
		{"service unavailable RFC 850 date", http.StatusServiceUnavailable, "Sunday, 22-Nov-26 00:01:00 GMT", true, 2 * time.Minute},
		{"gateway timeout", http.StatusGatewayTimeout, "", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := &ExportError{Protocol: ProtocolHTTPProtobuf, StatusCode: tt.code, RetryAfter: tt.retryAfter, received: received}
			retry, delay := err.Retryable()
			if retry != tt.wantRetry || delay != tt.wantDelay {
				t.Fatalf("Retryable() = %v, %v; want %v, %v", retry, delay, tt.wantRetry, tt.wantDelay)
			}
		})
	}
}

func TestRetryableOtherErrors(t *testing.T) {
	certErr := &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}
	tests := []struct {
		name      string
		err       error
		wantRetry bool
	}{
		{"nil", nil, false},
		{"shutdown", ErrShutdown, false},
		{"plain error", errors.New("marshal failed"), false},
		{"context deadline alone", context.DeadlineExceeded, false},
		{"http connection refused", &ExportError{Protocol: ProtocolHTTPProtobuf, Err: errors.New("dial tcp: connection refused")}, true},
		{"http timeout", &ExportError{Protocol: ProtocolHTTPJSON, Err: context.DeadlineExceeded, ctxErr: context.DeadlineExceeded}, true},
		{"http certificate rejected", &ExportError{Protocol: ProtocolHTTPProtobuf, Err: fmt.Errorf("Post: %w", certErr)}, false},
		{"http hostname mismatch", &ExportError{Protocol: ProtocolHTTPProtobuf, Err: x509.HostnameError{Host: "collector"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			retry, delay := Retryable(tt.err)
			if retry != tt.wantRetry || delay != 0 {
				t.Fatalf("Retryable(%v) = %v, %v; want %v, 0", tt.err, retry, delay, tt.wantRetry)
			}
		})
	}
}

func TestExportErrorMessage(t *testing.T) {
	tests := []struct {
		err  *ExportError
		want string
	}{
		{&ExportError{Protocol: ProtocolGRPC, Status: status.New(codes.Unavailable, "connection refused")},
			"otlp grpc export: Unavailable: connection refused"},
		{&ExportError{Protocol: ProtocolHTTPProtobuf, StatusCode: 400, Message: "bad dictionary"},
			"otlp http/protobuf export: HTTP 400 Bad Request: bad dictionary"},
		{&ExportError{Protocol: ProtocolHTTPJSON, StatusCode: 503},
			"otlp http/json export: HTTP 503 Service Unavailable"},
		{&ExportError{Protocol: ProtocolHTTPProtobuf, Err: errors.New("dial tcp: refused")},
			"otlp http/protobuf export: dial tcp: refused"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
