package profiler

import (
	"context"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/pprofotel/profiler/exporters/autoexport"
	"github.com/pprofotel/profiler/internal/export/registry"
)

// noneExporter discards every window: the tests' exporter where what is
// sent does not matter.
type noneExporter struct{}

func (noneExporter) Export(context.Context, *collectorpb.ExportProfilesServiceRequest) error {
	return nil
}

func (noneExporter) Shutdown(context.Context) error { return nil }

// envNone is what OTEL_PROFILES_EXPORTER=none builds.
var envNone = func() Exporter {
	exp, err := autoexport.NewExporter(context.Background(),
		registry.WithGetenv(envOf(map[string]string{"OTEL_PROFILES_EXPORTER": "none"})))
	if err != nil {
		panic(err)
	}
	return exp
}()
