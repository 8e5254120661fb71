package profiler

import (
	"context"
	"fmt"
	"strings"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/pprofotel/profiler/exporters/otlpprofilegrpc"
	"github.com/pprofotel/profiler/exporters/otlpprofilehttp"
	"github.com/pprofotel/profiler/internal/envconfig"
	"github.com/pprofotel/profiler/internal/export/registry"
)

// Exporter sends the profiler's windows somewhere: each window is one OTLP
// profiles request, with one shared dictionary, as the OpenTelemetry
// profiles signal defines it (v1development). The exporter packages under
// github.com/pprofotel/profiler/exporters implement it for OTLP over gRPC
// and HTTP, for files and for Splunk; an application may implement it too,
// to send windows anywhere else (see the example).
//
// The profiler calls Export from one goroutine at a time, in the order of
// the windows, and never after Shutdown. Export must honour ctx: Stop's
// deadline reaches it through ctx, and an Export that has not returned
// when ctx ends is given up, its window reported as not delivered. Export
// must not keep or change req after it returns. An error means the window
// did not arrive (in full); retrying, if any, is the exporter's business.
// Shutdown is called once, by Stop, after the last Export, and should
// release what the exporter holds within ctx's deadline.
//
// The profiles signal of OpenTelemetry is Alpha: the request type follows
// the proto's v1development releases, so this interface changes with them.
type Exporter interface {
	Export(ctx context.Context, req *collectorpb.ExportProfilesServiceRequest) error
	Shutdown(ctx context.Context) error
}

// The exporters the environment can name (OTEL_PROFILES_EXPORTER,
// PPROFOTEL_EXPORTER). "otlp" is built here; "file" and "splunk" by their
// packages, which register themselves when imported.
var exporterNames = []string{"otlp", "none", "file", "splunk"}

// The OTLP protocols of OTEL_EXPORTER_OTLP_PROTOCOL.
var protocolNames = []string{"http/protobuf", "grpc", "http/json"}

// exporterFromEnv builds the exporter the environment asks for, as
// OpenTelemetry's autoexport does for the other signals: the exporter's
// name from OTEL_PROFILES_EXPORTER, else PPROFOTEL_EXPORTER, else "splunk"
// when SPLUNK_PROFILER_ENABLED is true, else "otlp"; for "otlp", the
// protocol from OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL or
// OTEL_EXPORTER_OTLP_PROTOCOL. A name whose package this program does not
// link, or whose exporter its package cannot build from the environment,
// is warned about and "otlp" is used. The exporter packages read their own
// variables.
func exporterFromEnv(ctx context.Context, env *envconfig.Reader) (Exporter, error) {
	name, setting := "otlp", ""
	if v, ok := env.Enum("exporter", exporterNames, envProfilesExporter, envExporter); ok {
		name = v
		setting, _, _ = env.First(envProfilesExporter, envExporter)
	} else if v, ok := env.Bool(envSplunkEnabled); ok && v {
		name, setting = "splunk", envSplunkEnabled
	}
	switch name {
	case "none":
		return noneExporter{}, nil
	case "otlp":
	default:
		v, _ := env.Lookup(setting)
		f, ok := registry.Lookup(name)
		if !ok {
			env.Warn(fmt.Errorf(`%s=%q: exporter %q is not linked into this program (import _ "github.com/pprofotel/profiler/exporters/%s"); the OTLP exporter is used`,
				setting, v, name, exporterPackage[name]))
			break
		}
		exp, err := f(ctx)
		if err == nil {
			return exp, nil
		}
		// The environment never stops the profiler: as for any invalid
		// variable, the default applies.
		env.Warn(fmt.Errorf("%s=%q: exporter %q cannot be built from the environment (%w); the OTLP exporter is used",
			setting, v, name, err))
	}
	protocol := "http/protobuf"
	if v, ok := env.Enum("protocol", protocolNames, envOTLPProfilesProtocol, envOTLPProtocol); ok {
		protocol = v
	}
	switch protocol {
	case "grpc":
		return otlpprofilegrpc.New(ctx)
	case "http/json":
		return otlpprofilehttp.New(ctx, otlpprofilehttp.WithJSON())
	default:
		return otlpprofilehttp.New(ctx)
	}
}

// exporterPackage names the package of each registered exporter.
var exporterPackage = map[string]string{"file": "otlpprofilefile", "splunk": "splunk"}

// collectionDefaults is what an exporter whose destination expects some
// profile types and window length (Splunk's) implements. The profiler
// applies them to what neither an option nor a variable set.
type collectionDefaults interface {
	CollectionDefaults() (profiles []string, window time.Duration)
}

// noneExporter discards every window. It measures the profiler's own cost
// without a receiver ("none" in OTEL_PROFILES_EXPORTER).
type noneExporter struct{}

func (noneExporter) Export(context.Context, *collectorpb.ExportProfilesServiceRequest) error {
	return nil
}

func (noneExporter) Shutdown(context.Context) error { return nil }

// exporterDefaults returns the profile types and window that exp asks for,
// parsed into the profiler's terms, or none.
func exporterDefaults(exp Exporter) (types []ProfileType, window time.Duration, err error) {
	d, ok := exp.(collectionDefaults)
	if !ok {
		return nil, 0, nil
	}
	names, window := d.CollectionDefaults()
	if len(names) > 0 {
		if types, err = parseProfileList(strings.Join(names, ",")); err != nil {
			return nil, 0, fmt.Errorf("profiler: the exporter's collection defaults: %w", err)
		}
	}
	return types, window, nil
}
