package export

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pprofotel/profiler/internal/convert/otlp"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	// Registers gzip for the responses a receiver chooses to compress.
	_ "google.golang.org/grpc/encoding/gzip"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// grpcConn is what the OTLP/gRPC exporters of every signal share: one
// client connection, the metadata sent with each call, the attempt timeout,
// and the way a failed call becomes an *ExportError.
type grpcConn struct {
	conn *grpc.ClientConn
	// owned is set when the exporter dialled conn, and so closes it.
	owned bool
	// callOpts go with every call: gzip, on a connection the application
	// gave, where the per-connection compressor cannot be set.
	callOpts  []grpc.CallOption
	headers   []string // metadata key/value pairs
	timeout   time.Duration
	onPartial func(int64, string)
	shutdown  atomic.Bool
	// handshake is the outcome of the connection's latest TLS handshake,
	// which a failed call's text may report.
	handshake handshakeOutcome
}

// grpcExporter calls ProfilesService/Export.
type grpcExporter struct {
	*grpcConn
	client collectorpb.ProfilesServiceClient
	// callOpts makes each call encode its request with requestCodec.
	callOpts []grpc.CallOption
}

func newGRPCExporter(cfg OTLPConfig, tlsConfig *tls.Config) (*grpcExporter, error) {
	c, err := newGRPCConn(cfg, tlsConfig)
	if err != nil {
		return nil, err
	}
	// The protocol's own metadata wins over a user header of its name.
	c.headers = append(withoutKey(c.headers, profilesVersionKey), profilesVersionKey, profilesVersion)
	codec := &requestCodec{proto: encoding.GetCodecV2(grpcproto.Name)}
	return &grpcExporter{
		grpcConn: c,
		client:   collectorpb.NewProfilesServiceClient(c.conn),
		callOpts: append(slices.Clip(c.callOpts), grpc.ForceCodecV2(codec)),
	}, nil
}

// requestCodec is the codec of the profiles exporter's calls: gRPC's
// registered protobuf codec, except that the request is encoded by
// otlp.AppendRequest, several times faster than protobuf-go and byte for
// byte the same. It is forced per call rather than registered, because a
// registered codec replaces the one of every gRPC call of the process.
type requestCodec struct {
	proto encoding.CodecV2 // the registered "proto" codec
	size  sizeHint
}

// Marshal encodes a request into a buffer of gRPC's pool sized after the
// previous one, as the proto codec does after sizing the message, and any
// other message through the proto codec.
func (c *requestCodec) Marshal(v any) (mem.BufferSlice, error) {
	req, ok := v.(*collectorpb.ExportProfilesServiceRequest)
	if !ok {
		return c.proto.Marshal(v)
	}
	n := c.size.size()
	if mem.IsBelowBufferPoolingThreshold(n) {
		b, err := otlp.AppendRequest(make([]byte, 0, n), req)
		if err != nil {
			return nil, err
		}
		c.size.record(b)
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	pool := mem.DefaultBufferPool()
	buf := pool.Get(n)
	b, err := otlp.AppendRequest((*buf)[:0], req)
	if err != nil {
		pool.Put(buf)
		return nil, err
	}
	c.size.record(b)
	if len(b) > cap(*buf) {
		// The request outgrew the buffer and append moved it out of the
		// pool's memory.
		pool.Put(buf)
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	*buf = b
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

// Unmarshal decodes through the proto codec.
func (c *requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return c.proto.Unmarshal(data, v)
}

// Name is empty on purpose. gRPC derives the content-subtype of a call
// from the name of a forced codec; with "proto" requests would go out as
// application/grpc+proto, where every OTLP exporter sends plain
// application/grpc, which the gRPC protocol defines to mean protobuf.
func (c *requestCodec) Name() string { return "" }

// newGRPCConn builds the connection, or takes the application's
// (cfg.GRPCConn). tlsConfig is used unless cfg.Insecure; tests pass one
// that trusts their server.
func newGRPCConn(cfg OTLPConfig, tlsConfig *tls.Config) (*grpcConn, error) {
	headers, err := grpcMetadata(cfg.Headers)
	if err != nil {
		return nil, err
	}
	c := &grpcConn{
		headers:   headers,
		timeout:   cfg.Timeout,
		onPartial: cfg.OnPartialSuccess,
	}
	if cfg.GRPCConn != nil {
		c.conn = cfg.GRPCConn
		if cfg.Compression == compressionGzip {
			// The connection's compressor is the application's to set; per
			// call, the registered gzip at the level the application
			// chose.
			c.callOpts = []grpc.CallOption{grpc.UseCompressor(compressionGzip)}
		}
		return c, nil
	}
	if err := CheckGRPCEndpoint(cfg.Endpoint); err != nil {
		return nil, err
	}
	var creds credentials.TransportCredentials = newVerdictCreds(tlsConfig, &c.handshake)
	if cfg.Insecure {
		creds = insecure.NewCredentials()
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		// gRPC accepts 16 MB of response headers by default.
		grpc.WithMaxHeaderListSize(maxResponseHeaderBytes),
	}
	if cfg.Compression == compressionGzip {
		// See grpcGzip for why this is not grpc.UseCompressor.
		opts = append(opts, grpc.WithCompressor(new(grpcGzip))) //nolint:staticcheck // the only per-connection compressor
	}
	if cfg.UserAgent != "" {
		opts = append(opts, grpc.WithUserAgent(cfg.UserAgent))
	}
	opts = append(opts, cfg.DialOptions...)
	// NewClient does not connect; the first Export does, so building an
	// exporter never blocks on or fails because of the network.
	conn, err := grpc.NewClient(cfg.Endpoint, opts...)
	if err != nil {
		return nil, fmt.Errorf("otlp endpoint %q: %w", cfg.Endpoint, err)
	}
	c.conn, c.owned = conn, true
	return c, nil
}

// grpcMetadata turns headers into metadata pairs, rejecting what gRPC would
// refuse at call time (CheckHeader).
func grpcMetadata(headers map[string]string) ([]string, error) {
	pairs := make([]string, 0, 2*len(headers))
	for _, k := range sortedKeys(headers) {
		if err := CheckHeader(true, k, headers[k]); err != nil {
			return nil, err
		}
		pairs = append(pairs, strings.ToLower(k), headers[k])
	}
	return pairs, nil
}

// withoutKey returns the metadata pairs whose key is not key (lower case).
func withoutKey(pairs []string, key string) []string {
	out := pairs[:0:0]
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] != key {
			out = append(out, pairs[i], pairs[i+1])
		}
	}
	return out
}

// Export makes one call. A failed call returns an *ExportError holding the
// call's status.
func (e *grpcExporter) Export(ctx context.Context, req *collectorpb.ExportProfilesServiceRequest) error {
	if req == nil {
		return errNilRequest
	}
	return e.call(ctx, func(ctx context.Context) (int64, string, error) {
		resp, err := e.client.Export(ctx, req, e.callOpts...)
		ps := resp.GetPartialSuccess()
		return ps.GetRejectedProfiles(), ps.GetErrorMessage(), err
	})
}

// call makes one attempt through invoke, which performs the RPC and returns
// the partial success the response reported.
func (c *grpcConn) call(ctx context.Context, invoke func(context.Context) (rejected int64, message string, err error)) error {
	if c.shutdown.Load() {
		return ErrShutdown
	}
	ctx, cancel := attemptContext(ctx, c.timeout)
	defer cancel()
	if len(c.headers) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, c.headers...)
	}
	rejected, message, err := invoke(ctx)
	if err != nil {
		// FromError gives UNKNOWN for an error that carries no status.
		st, _ := status.FromError(err)
		ctxErr := ctx.Err()
		if ctxErr == nil && st.Code() == codes.DeadlineExceeded {
			// The server saw the deadline we sent it expire and reset the
			// stream a moment before our own timer fired: the attempt did
			// time out all the same.
			ctxErr = context.DeadlineExceeded
		}
		ee := &ExportError{Protocol: ProtocolGRPC, Status: st, Err: err, ctxErr: ctxErr}
		if st.Code() == codes.Unavailable {
			ee.handshakeErr = c.handshake.cause(st.Message())
		}
		return ee
	}
	reportPartialSuccess(c.onPartial, rejected, message)
	return nil
}

// Shutdown closes the connection the exporter dialled; calls in flight
// fail with CANCELLED. The application's connection stays open.
func (c *grpcConn) Shutdown(ctx context.Context) error {
	if c.shutdown.Swap(true) || !c.owned {
		return nil
	}
	if err := c.conn.Close(); err != nil {
		return fmt.Errorf("otlp grpc shutdown: %w", err)
	}
	return nil
}
