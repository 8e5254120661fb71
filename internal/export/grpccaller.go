package export

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
)

// GRPCCaller is the gRPC side of an OTLP exporter of another signal than
// profiles (the Splunk exporter's logs, package logsgrpc): the connection,
// the metadata sent with each call, the attempt timeout, and the way a
// failed call becomes an *ExportError that Retryable and WithRetry
// classify as they classify the profiles exporter's. Keeping the other
// signal's generated code out of this package keeps it out of programs
// that export profiles only.
type GRPCCaller struct {
	c *grpcConn
}

// NewGRPCCaller returns the caller of cfg, configured as the profiles
// exporter's: endpoint, TLS or plaintext, headers, timeout, compression,
// user agent, partial success callback, or the application's connection.
// It does not touch the network: the first call connects.
func NewGRPCCaller(cfg OTLPConfig) (*GRPCCaller, error) {
	if cfg.Protocol != "" && cfg.Protocol != ProtocolGRPC {
		return nil, fmt.Errorf("otlp protocol %q: only %q is supported", cfg.Protocol, ProtocolGRPC)
	}
	if err := checkCommon(cfg); err != nil {
		return nil, err
	}
	c, err := newGRPCConn(cfg, privateTLS(cfg.TLS))
	if err != nil {
		return nil, err
	}
	return &GRPCCaller{c: c}, nil
}

// Conn returns the connection, for the signal's generated client.
func (g *GRPCCaller) Conn() *grpc.ClientConn { return g.c.conn }

// CallOptions returns the options every call must carry.
func (g *GRPCCaller) CallOptions() []grpc.CallOption { return g.c.callOpts }

// Call makes one attempt through invoke, which performs the RPC with the
// context it is given and returns the partial success the response
// reported. A failed call returns an *ExportError holding its status; a
// partial success goes to OTLPConfig.OnPartialSuccess. After Shutdown it
// returns ErrShutdown.
func (g *GRPCCaller) Call(ctx context.Context, invoke func(context.Context) (rejected int64, message string, err error)) error {
	return g.c.call(ctx, invoke)
}

// Shutdown closes the connection the caller dialled; the application's
// connection stays open.
func (g *GRPCCaller) Shutdown(ctx context.Context) error { return g.c.Shutdown(ctx) }
