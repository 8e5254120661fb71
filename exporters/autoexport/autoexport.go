package autoexport

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/pprofotel/profiler/exporters/otlpprofilegrpc"
	"github.com/pprofotel/profiler/exporters/otlpprofilehttp"
	"github.com/pprofotel/profiler/internal/envconfig"
	"github.com/pprofotel/profiler/internal/export/registry"
)

// Exporter is the method set of the profiler's Exporter: every value
// NewExporter returns can be given to profiler.WithExporter.
type Exporter interface {
	Export(ctx context.Context, req *collectorpb.ExportProfilesServiceRequest) error
	Shutdown(ctx context.Context) error
}

// Option configures NewExporter.
type Option = registry.Option

// WithLogger logs the warnings about variables through logger rather than
// slog.Default().
func WithLogger(logger *slog.Logger) Option {
	return registry.OptionFunc(func(s *registry.Settings) {
		if logger != nil {
			s.Warn = func(err error) { logger.Warn(err.Error()) }
		}
	})
}

// The environment's names.
const (
	envExporter          = "OTEL_PROFILES_EXPORTER"
	envProfilesProtocol  = "OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL"
	envProtocol          = "OTEL_EXPORTER_OTLP_PROTOCOL"
	defaultExporterName  = "otlp"
	defaultProtocolValue = "http/protobuf"
)

// knownNames are the values of OTEL_PROFILES_EXPORTER that are not
// warned about as unknown: "otlp" and "none" are built here, the others by
// the packages that register them, when linked.
var knownNames = []string{"otlp", "none", "file", "splunk"}

// exporterNames returns the known names and any other registered one.
func exporterNames() []string {
	names := append([]string(nil), knownNames...)
	for _, n := range registry.Names() {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// exporterPackage names the package that registers each other exporter.
var exporterPackage = map[string]string{"file": "otlpprofilefile", "splunk": "splunk"}

// protocolNames are the OTLP protocols.
var protocolNames = []string{"http/protobuf", "grpc", "http/json"}

// NewExporter returns the exporter the environment names (see the package
// documentation). Its error is the chosen exporter's own: a value in the
// environment that cannot be honoured is a warning, never an error.
func NewExporter(ctx context.Context, opts ...Option) (Exporter, error) {
	s := registry.Resolve(opts)
	env := envconfig.New(s.Getenv, "autoexport: ")
	exp, err := build(ctx, env)
	warn := s.Warn
	if warn == nil {
		warn = func(err error) { slog.Default().Warn(err.Error()) }
	}
	for _, w := range env.Warnings() {
		warn(w)
	}
	return exp, err
}

// build returns the named exporter, or, when the name cannot be honoured,
// the OTLP one.
func build(ctx context.Context, env *envconfig.Reader) (Exporter, error) {
	name, ok := env.Enum("exporter", exporterNames(), envExporter)
	if !ok {
		name = defaultExporterName
	}
	switch name {
	case "none":
		return discard{}, nil
	case "otlp":
		return otlp(ctx, env)
	}
	v, _ := env.Lookup(envExporter)
	f, linked := registry.Lookup(name)
	if !linked {
		env.Warn(fmt.Errorf(`%s=%q: exporter %q is not linked into this program (import _ "github.com/pprofotel/profiler/exporters/%s"); the OTLP exporter is used`,
			envExporter, v, name, exporterPackage[name]))
		return otlp(ctx, env)
	}
	exp, err := f(ctx)
	if err != nil {
		env.Warn(fmt.Errorf("%s=%q: exporter %q cannot be built from the environment (%w); the OTLP exporter is used",
			envExporter, v, name, err))
		return otlp(ctx, env)
	}
	return exp, nil
}

// otlp returns the OTLP exporter of the protocol the environment names.
func otlp(ctx context.Context, env *envconfig.Reader) (Exporter, error) {
	protocol, ok := env.Enum("protocol", protocolNames, envProfilesProtocol, envProtocol)
	if !ok {
		protocol = defaultProtocolValue
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

// discard drops every window ("none"): it measures the profiler's own
// cost without a receiver.
type discard struct{}

func (discard) Export(context.Context, *collectorpb.ExportProfilesServiceRequest) error {
	return nil
}

func (discard) Shutdown(context.Context) error { return nil }

// String says where the windows go, for the profiler's start line.
func (discard) String() string { return "none: the windows are discarded" }
