package export

import (
	"context"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
)

// NewNone returns an exporter that discards every request, for when export
// is turned off but collection should still run (e.g. to measure its cost).
func NewNone() Exporter { return noneExporter{} }

type noneExporter struct{}

func (noneExporter) Export(context.Context, *collectorpb.ExportProfilesServiceRequest) error {
	return nil
}

func (noneExporter) Shutdown(context.Context) error { return nil }
