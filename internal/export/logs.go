package export

import (
	"context"
	"errors"
	"fmt"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
)

var errNilLogsRequest = errors.New("export: nil logs request")

// NewLogsGRPC returns a Sender of OTLP logs requests over gRPC
// (LogsService/Export), configured like the profiles exporter: endpoint,
// TLS or plaintext, headers, timeout, compression, user agent, partial
// success callback. The Splunk profiling encoding sends through it; its
// failures are *ExportError values that Retryable and WithRetry classify as
// they classify the profiles exporter's. It does not touch the network: the
// first Export connects.
func NewLogsGRPC(cfg OTLPConfig) (Sender[*collogspb.ExportLogsServiceRequest], error) {
	if cfg.Protocol != "" && cfg.Protocol != ProtocolGRPC {
		return nil, fmt.Errorf("otlp logs protocol %q: only %q is supported", cfg.Protocol, ProtocolGRPC)
	}
	if err := checkCommon(cfg); err != nil {
		return nil, err
	}
	c, err := newGRPCConn(cfg, privateTLS(cfg.TLS))
	if err != nil {
		return nil, err
	}
	return &logsExporter{grpcConn: c, client: collogspb.NewLogsServiceClient(c.conn)}, nil
}

// logsExporter calls LogsService/Export.
type logsExporter struct {
	*grpcConn
	client collogspb.LogsServiceClient
}

// Export makes one call. A failed call returns an *ExportError holding the
// call's status; a partial success goes to OTLPConfig.OnPartialSuccess.
func (e *logsExporter) Export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) error {
	if req == nil {
		return errNilLogsRequest
	}
	return e.call(ctx, func(ctx context.Context) (int64, string, error) {
		resp, err := e.client.Export(ctx, req, e.callOpts...)
		ps := resp.GetPartialSuccess()
		return ps.GetRejectedLogRecords(), ps.GetErrorMessage(), err
	})
}
