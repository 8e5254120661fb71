package splunk

import (
	"time"

	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/internal/convert/splunk"
	"github.com/pprofotel/profiler/internal/envconfig"
	"github.com/pprofotel/profiler/internal/export/otlpconfig"
)

// The environment variables New reads besides the OTLP ones, which package
// otlpconfig reads; doc.go lists them all.
const (
	envLogsEndpoint      = "SPLUNK_PROFILER_LOGS_ENDPOINT"
	envOTLPEndpoint      = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envMemoryEnabled     = "SPLUNK_PROFILER_MEMORY_ENABLED"
	envCallStackInterval = "SPLUNK_PROFILER_CALL_STACK_INTERVAL"
	envGODEBUG           = "GODEBUG"
)

// DefaultCallStackInterval is the window CollectionDefaults asks for when
// SPLUNK_PROFILER_CALL_STACK_INTERVAL is not set: the default of Splunk's
// Java profiler for the same variable.
const DefaultCallStackInterval = 10 * time.Second

// minCallStackInterval is the shortest window accepted: the profiler's
// floor of a window (profiler.WithWindow).
const minCallStackInterval = time.Second

// config is the exporter's resolved configuration.
type config struct {
	otlp otlpconfig.Config
	// memory is SPLUNK_PROFILER_MEMORY_ENABLED.
	memory bool
	// window is SPLUNK_PROFILER_CALL_STACK_INTERVAL, or its default.
	window time.Duration
	encode splunk.EncodeOptions
}

// resolve resolves the options in s over the environment seen through
// getenv: the one place the package reads it. It returns the option errors
// together, and the warnings about variables, which New logs once each.
func resolve(s *otlpconfig.Settings, getenv func(string) string) (config, []error, error) {
	s.SetEndpointVariables(envLogsEndpoint, envOTLPEndpoint)
	oc, warnings, err := s.Resolve(getenv)
	if err != nil {
		return config{}, nil, err
	}
	if oc.MaxRequestBytes <= 0 {
		oc.MaxRequestBytes = otlp.DefaultMaxRequestBytes
	}
	env := envconfig.New(getenv, "splunk: ")
	cfg := config{otlp: oc, window: DefaultCallStackInterval}
	cfg.memory, _ = env.Bool(envMemoryEnabled)
	if d, ok := env.Millis("the call stack interval", minCallStackInterval, envCallStackInterval); ok {
		cfg.window = d
	}
	cfg.encode.MemoryStackDepth = splunk.MemoryStackDepth(getenv(envGODEBUG))
	cfg.encode.Convert = toPprof
	return cfg, append(warnings, env.Warnings()...), nil
}
