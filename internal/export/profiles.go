package export

import (
	"context"
	"fmt"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/internal/export/report"
)

// Request size limits. OTLP v1.11.0 says a client SHOULD NOT send requests
// above 64 MiB and MUST NOT send larger ones than the receiver accepts; a
// request below 64 KiB might not hold the resource, a scope and one deep
// stack, so a window could not be sent at all.
const (
	MinMaxRequestBytes = 64 << 10
	MaxMaxRequestBytes = 64 << 20
)

// The OTLP Profiles development version (opentelemetry-proto's
// docs/specification.md, "Profiles development version"): a receiver reads
// it from this request header (HTTP) or metadata key (gRPC) before it
// decodes the request, takes its absence for version 1 and refuses a
// version it does not support. profilesVersion is the version of the
// schema the requests follow: that of
// go.opentelemetry.io/proto/otlp/profiles/v1development v0.4.0, the first
// development version. It changes with the module, when the module adopts
// an incompatible schema change.
const (
	profilesVersionKey = "otlp-profiles-development-version"
	profilesVersion    = "1"
)

// SplittingExporter is the OTLP profiles exporter of the exporter
// packages: it cuts a request larger than its limit into parts that fit
// (otlp.Split), sends them in order through a transport wrapped in the
// retry policy, and reports each accepted part's size to the report.Report
// of the context.
type SplittingExporter struct {
	next     Exporter
	maxBytes int
	// Where says where it sends, for logs: "http/protobuf to URL".
	Where string
}

// NewSplitting returns transport wrapped in the retry policy cfg, with
// opts, and in the splitting of requests above maxBytes (<= 0 takes
// otlp.DefaultMaxRequestBytes).
func NewSplitting(transport Exporter, cfg RetryConfig, maxBytes int, opts ...RetryOption) *SplittingExporter {
	if maxBytes <= 0 {
		maxBytes = otlp.DefaultMaxRequestBytes
	}
	return &SplittingExporter{next: WithRetry(transport, cfg, opts...), maxBytes: maxBytes}
}

// Export sends req, split if it exceeds the limit. When a part fails, the
// parts after it are not sent, and the error says which part failed and
// how many arrived before it.
func (e *SplittingExporter) Export(ctx context.Context, req *collectorpb.ExportProfilesServiceRequest) error {
	if req == nil {
		return errNilRequest
	}
	parts := []*collectorpb.ExportProfilesServiceRequest{req}
	size := proto.Size(req)
	if size > e.maxBytes {
		var err error
		if parts, err = otlp.Split(req, e.maxBytes); err != nil {
			return fmt.Errorf("export: request of %d bytes not sent: %w", size, err)
		}
	}
	rep := report.FromContext(ctx)
	for i, part := range parts {
		if len(parts) > 1 {
			size = proto.Size(part)
		}
		if err := e.next.Export(ctx, part); err != nil {
			if len(parts) > 1 {
				err = fmt.Errorf("part %d of %d not delivered (%d arrived): %w", i+1, len(parts), i, err)
			}
			return err
		}
		rep.Sent(int64(size))
	}
	return nil
}

// Shutdown interrupts a retry in progress and shuts the transport down.
func (e *SplittingExporter) Shutdown(ctx context.Context) error {
	return e.next.Shutdown(ctx)
}
