// Package logsgrpc sends OTLP logs requests over gRPC (LogsService/Export):
// the transport of the Splunk exporter's profiling logs. It is apart from
// package export so that only programs that send logs link the logs
// protocol's generated code.
package logsgrpc

import (
	"context"
	"errors"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"

	"github.com/pprofotel/profiler/internal/export"
)

var errNilRequest = errors.New("export: nil logs request")

// New returns a Sender of OTLP logs requests over gRPC, configured like the
// profiles exporter: endpoint, TLS or plaintext, headers, timeout,
// compression, user agent, partial success callback. Its failures are
// *export.ExportError values that export.Retryable and export.WithRetry
// classify as they classify the profiles exporter's. It does not touch the
// network: the first Export connects.
func New(cfg export.OTLPConfig) (export.Sender[*collogspb.ExportLogsServiceRequest], error) {
	c, err := export.NewGRPCCaller(cfg)
	if err != nil {
		return nil, err
	}
	return &sender{c: c, client: collogspb.NewLogsServiceClient(c.Conn())}, nil
}

// sender calls LogsService/Export.
type sender struct {
	c      *export.GRPCCaller
	client collogspb.LogsServiceClient
}

// Export makes one call. A failed call returns an *export.ExportError
// holding the call's status; a partial success goes to
// OTLPConfig.OnPartialSuccess.
func (s *sender) Export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) error {
	if req == nil {
		return errNilRequest
	}
	return s.c.Call(ctx, func(ctx context.Context) (int64, string, error) {
		resp, err := s.client.Export(ctx, req, s.c.CallOptions()...)
		ps := resp.GetPartialSuccess()
		return ps.GetRejectedLogRecords(), ps.GetErrorMessage(), err
	})
}

// Shutdown closes the connection the sender dialled.
func (s *sender) Shutdown(ctx context.Context) error { return s.c.Shutdown(ctx) }
