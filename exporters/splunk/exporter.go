package splunk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/convert/splunk"
	"github.com/pprofotel/profiler/internal/export"
	"github.com/pprofotel/profiler/internal/export/logsgrpc"
	"github.com/pprofotel/profiler/internal/export/otlpconfig"
	"github.com/pprofotel/profiler/internal/export/registry"
	"github.com/pprofotel/profiler/internal/export/report"
)

func init() {
	registry.Register("splunk", func(ctx context.Context) (registry.Exporter, error) {
		return New(ctx)
	})
}

// The runtime profiles an Exporter turns into records, in the profiler's
// names (profiler.CPUProfile, profiler.HeapProfile).
const (
	profileCPU  = "cpu"
	profileHeap = "heap"
)

// Exporter sends each window's CPU and heap profiles as Splunk profiling
// logs over OTLP/gRPC.
type Exporter struct {
	sender   export.Sender[*collogspb.ExportLogsServiceRequest]
	encode   splunk.EncodeOptions
	maxBytes int
	memory   bool
	window   time.Duration
	shutdown atomic.Bool
}

// New returns an Exporter configured by opts over the environment
// variables listed in the package documentation. An invalid option makes
// it fail with an error naming the option and its value. New does not
// touch the network, and ctx is not used: the connection is made by the
// first Export.
func New(ctx context.Context, opts ...Option) (*Exporter, error) {
	return newExporter(os.Getenv, export.LoggerFromContext(ctx), opts)
}

// newExporter is New reading the environment through getenv and logging
// its warnings through logger (nil: slog.Default()).
func newExporter(getenv func(string) string, logger *slog.Logger, opts []Option) (*Exporter, error) {
	s := otlpconfig.New("splunk", otlpconfig.GRPC)
	for _, o := range opts {
		if o != nil {
			o.apply(s)
		}
	}
	cfg, warnings, err := resolve(s, getenv)
	if err != nil {
		return nil, err
	}
	otlpconfig.Warn(logger, warnings)
	// A partial success is not an error of Export, since the rejected
	// records must not be sent again, but the rejections must not vanish.
	cfg.otlp.OTLP.OnPartialSuccess = func(rejected int64, message string) {
		export.ReportError(logger, fmt.Errorf("splunk: the receiver accepted the request in part: %d log records rejected: %s", rejected, message))
	}
	t, err := logsgrpc.New(cfg.otlp.OTLP)
	if err != nil {
		return nil, fmt.Errorf("splunk: %w", err)
	}
	return &Exporter{
		sender:   export.WithRetry(t, cfg.otlp.Retry),
		encode:   cfg.encode,
		maxBytes: cfg.otlp.MaxRequestBytes,
		memory:   cfg.memory,
		window:   cfg.window,
	}, nil
}

// CollectionDefaults returns what the exporter asks the profiler to
// collect: the runtime profiles, in the profiler's names ("cpu", and
// "heap" when SPLUNK_PROFILER_MEMORY_ENABLED is true), and the window
// (SPLUNK_PROFILER_CALL_STACK_INTERVAL, else DefaultCallStackInterval).
// The profiler applies each to what the application did not set: profile
// types named in its options or variables win, and naming the heap profile
// there turns allocation records on.
func (e *Exporter) CollectionDefaults() (profiles []string, window time.Duration) {
	profiles = []string{profileCPU}
	if e.memory {
		profiles = append(profiles, profileHeap)
	}
	return profiles, e.window
}

// Export converts req, the OTLP profiles request of a window, into Splunk
// profiling logs and sends them, split between records into requests no
// larger than WithMaxRequestBytes and retried as WithRetry says. A window
// with neither a CPU nor a heap sample sends nothing. It returns when the
// receiver has accepted every part, a part has failed for good, or ctx is
// done, whichever comes first; when a part fails, the parts after it are
// not sent and the error says how many arrived. Retries and the bytes
// accepted are reported to the profiler. Export does not keep req after
// it returns.
func (e *Exporter) Export(ctx context.Context, req *collectorpb.ExportProfilesServiceRequest) error {
	if e.shutdown.Load() {
		return export.ErrShutdown
	}
	if req == nil {
		return errors.New("splunk: nil request")
	}
	logs, err := splunk.Encode(req, e.encode)
	if err != nil || logs == nil {
		return err
	}
	parts, err := splunk.Split(logs, e.maxBytes)
	if err != nil {
		return err
	}
	rep := report.FromContext(ctx)
	for i, part := range parts {
		if err := e.sender.Export(ctx, part); err != nil {
			if len(parts) > 1 {
				err = fmt.Errorf("splunk: part %d of %d not delivered (%d arrived): %w", i+1, len(parts), i, err)
			}
			return err
		}
		rep.Sent(int64(proto.Size(part)))
	}
	return nil
}

// Shutdown interrupts an Export waiting to retry or in flight and closes
// the connection the exporter dialled; a connection given by WithGRPCConn
// stays open. Export fails after Shutdown.
func (e *Exporter) Shutdown(ctx context.Context) error {
	e.shutdown.Store(true)
	return e.sender.Shutdown(ctx)
}
