package splunk

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/pprofotel/profiler/internal/export"
)

var errNilRequest = errors.New("splunk: nil logs request")

// LogsExporter sends logs requests to an OTLP/gRPC collector with
// LogsService/Export. Its failures are *export.ExportError values, so
// export.Retryable classifies them exactly as it classifies the profiles
// exporter's. It is safe for use by one goroutine at a time, like
// export.Exporter.
type LogsExporter struct {
	conn      *grpc.ClientConn
	client    collogspb.LogsServiceClient
	headers   []string // metadata key/value pairs
	callOpts  []grpc.CallOption
	timeout   time.Duration
	onPartial func(int64, string)
	shutdown  atomic.Bool
}

// NewLogsExporter returns an exporter for cfg, whose Protocol must be gRPC
// (or empty) and whose Endpoint is host:port. cfg.TLS secures the
// connection unless cfg.Insecure. Like export.NewOTLP it does not touch the
// network: the first Export connects. Every invalid setting is reported
// with its value.
func NewLogsExporter(cfg export.OTLPConfig) (*LogsExporter, error) {
	if cfg.Protocol != "" && cfg.Protocol != export.ProtocolGRPC {
		return nil, fmt.Errorf("splunk logs exporter: protocol %q: only %q is supported", cfg.Protocol, export.ProtocolGRPC)
	}
	if err := checkHostPort(cfg.Endpoint); err != nil {
		return nil, fmt.Errorf("splunk logs exporter: endpoint %q: %w", cfg.Endpoint, err)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("splunk logs exporter: timeout %v: must not be negative", cfg.Timeout)
	}
	var callOpts []grpc.CallOption
	switch cfg.Compression {
	case "", "none":
	case "gzip":
		callOpts = append(callOpts, grpc.UseCompressor(gzip.Name))
	default:
		return nil, fmt.Errorf("splunk logs exporter: compression %q: want %q or %q", cfg.Compression, "gzip", "none")
	}
	headers, err := grpcMetadata(cfg.Headers)
	if err != nil {
		return nil, err
	}

	var creds credentials.TransportCredentials
	if cfg.Insecure {
		creds = insecure.NewCredentials()
	} else {
		// A private copy: the transport fills in fields of it.
		tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
		if cfg.TLS != nil {
			tlsConfig = cfg.TLS.Clone()
			if tlsConfig.MinVersion == 0 {
				tlsConfig.MinVersion = tls.VersionTLS12
			}
		}
		creds = credentials.NewTLS(tlsConfig)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	if cfg.UserAgent != "" {
		opts = append(opts, grpc.WithUserAgent(cfg.UserAgent))
	}
	conn, err := grpc.NewClient(cfg.Endpoint, opts...)
	if err != nil {
		return nil, fmt.Errorf("splunk logs exporter: endpoint %q: %w", cfg.Endpoint, err)
	}
	return &LogsExporter{
		conn:      conn,
		client:    collogspb.NewLogsServiceClient(conn),
		headers:   headers,
		callOpts:  callOpts,
		timeout:   cfg.Timeout,
		onPartial: cfg.OnPartialSuccess,
	}, nil
}

// Export makes one call, bounded by the configured timeout within ctx. A
// failed call returns an *export.ExportError holding the call's status; a
// partial success is reported to OTLPConfig.OnPartialSuccess and is not an
// error. After Shutdown it returns export.ErrShutdown.
func (e *LogsExporter) Export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) error {
	if e.shutdown.Load() {
		return export.ErrShutdown
	}
	if req == nil {
		return errNilRequest
	}
	if e.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.timeout)
		defer cancel()
	}
	if len(e.headers) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, e.headers...)
	}
	resp, err := e.client.Export(ctx, req, e.callOpts...)
	if err != nil {
		st, _ := status.FromError(err)
		ctxErr := ctx.Err()
		if ctxErr == nil && st.Code() == codes.DeadlineExceeded {
			// The server reset the stream when the deadline we sent it
			// expired, a moment before our own timer fired.
			ctxErr = context.DeadlineExceeded
		}
		if ctxErr != nil {
			// ExportError keeps the context's error in a field of its
			// own package; joining it here gives the same errors.Is
			// answers for this exporter as for the profiles one.
			err = errors.Join(err, ctxErr)
		}
		return &export.ExportError{Protocol: export.ProtocolGRPC, Status: st, Err: err}
	}
	if ps := resp.GetPartialSuccess(); e.onPartial != nil && ps != nil &&
		(ps.GetRejectedLogRecords() != 0 || ps.GetErrorMessage() != "") {
		e.onPartial(ps.GetRejectedLogRecords(), ps.GetErrorMessage())
	}
	return nil
}

// Shutdown closes the connection; calls in flight fail with CANCELLED.
// Later calls do nothing.
func (e *LogsExporter) Shutdown(ctx context.Context) error {
	if e.shutdown.Swap(true) {
		return nil
	}
	if err := e.conn.Close(); err != nil {
		return fmt.Errorf("splunk logs exporter: shutdown: %w", err)
	}
	return nil
}

// checkHostPort accepts host:port with a port in 1-65535.
func checkHostPort(endpoint string) error {
	if endpoint == "" {
		return errors.New("empty: want host:port")
	}
	_, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		return fmt.Errorf("want host:port: %w", err)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("port %q is not a number in 1-65535", port)
	}
	return nil
}

// grpcMetadata turns headers into metadata pairs in a stable order,
// rejecting what gRPC would refuse at call time: keys outside [0-9a-z-_.]
// once lower-cased, and values that are not printable ASCII on keys other
// than binary (-bin) ones.
func grpcMetadata(headers map[string]string) ([]string, error) {
	keys := make([]string, 0, len(headers))
	for k := range headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pairs := make([]string, 0, 2*len(headers))
	for _, k := range keys {
		key := strings.ToLower(k)
		if key == "" {
			return nil, errors.New("splunk logs exporter: header with an empty name")
		}
		for i := 0; i < len(key); i++ {
			c := key[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
				return nil, fmt.Errorf("splunk logs exporter: header %q: gRPC metadata keys allow only 0-9 a-z - _ .", k)
			}
		}
		v := headers[k]
		if !strings.HasSuffix(key, "-bin") {
			for i := 0; i < len(v); i++ {
				if v[i] < 0x20 || v[i] > 0x7e {
					return nil, fmt.Errorf("splunk logs exporter: header %q: gRPC metadata values must be printable ASCII", k)
				}
			}
		}
		pairs = append(pairs, key, v)
	}
	return pairs, nil
}
