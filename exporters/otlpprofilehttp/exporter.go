package otlpprofilehttp

import (
	"context"
	"log/slog"
	"os"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/pprofotel/profiler/internal/export"
	"github.com/pprofotel/profiler/internal/export/otlpconfig"
)

// Exporter sends OTLP profiles requests over HTTP. Its methods are safe
// for concurrent use.
type Exporter struct {
	e *export.SplittingExporter
}

// New returns an Exporter configured by opts over the environment
// variables listed in the package documentation. An invalid option makes
// it fail with an error naming the option and its value. New does not
// touch the network, and ctx is not used: connections are made by Export.
func New(ctx context.Context, opts ...Option) (*Exporter, error) {
	return newExporter(os.Getenv, export.LoggerFromContext(ctx), opts)
}

// newExporter is New reading the environment through getenv and logging
// its warnings through logger (nil: slog.Default()).
func newExporter(getenv func(string) string, logger *slog.Logger, opts []Option) (*Exporter, error) {
	s := otlpconfig.New("otlpprofilehttp", otlpconfig.HTTP)
	for _, o := range opts {
		if o != nil {
			o.apply(s)
		}
	}
	e, err := otlpconfig.NewExporter(s, getenv, logger, export.NewHTTP)
	if err != nil {
		return nil, err
	}
	return &Exporter{e: e}, nil
}

// Export sends req, split into requests no larger than WithMaxRequestBytes
// and retried as WithRetry says. It returns when the receiver has accepted
// every part, a part has failed for good, or ctx is done, whichever comes
// first; when a part fails, the parts after it are not sent and the error
// says how many arrived. A partial success is not an error: it is reported
// to otel.Handle when the application has set an error handler, else
// logged as an error. Export does not keep req after it returns.
func (e *Exporter) Export(ctx context.Context, req *collectorpb.ExportProfilesServiceRequest) error {
	return e.e.Export(ctx, req)
}

// String says where the exporter sends, for logs: its package, protocol
// and endpoint.
func (e *Exporter) String() string { return e.e.Where }

// Shutdown interrupts an Export waiting to retry and closes the exporter's
// idle connections; a client given by WithHTTPClient is left alone. Export
// fails after Shutdown.
func (e *Exporter) Shutdown(ctx context.Context) error {
	return e.e.Shutdown(ctx)
}
