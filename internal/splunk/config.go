package splunk

import (
	"strconv"
	"strings"
	"time"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/envconfig"
	"github.com/pprofotel/profiler/internal/export"
)

// The environment variables of Splunk's profilers that ConfigFromEnv reads.
const (
	EnvEnabled           = "SPLUNK_PROFILER_ENABLED"
	EnvMemoryEnabled     = "SPLUNK_PROFILER_MEMORY_ENABLED"
	EnvLogsEndpoint      = "SPLUNK_PROFILER_LOGS_ENDPOINT"
	EnvCallStackInterval = "SPLUNK_PROFILER_CALL_STACK_INTERVAL"

	envOTLPEndpoint = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envOTLPInsecure = "OTEL_EXPORTER_OTLP_INSECURE"
	envGODEBUG      = "GODEBUG"
)

// Defaults.
const (
	// DefaultLogsEndpoint is where logs go when neither
	// SPLUNK_PROFILER_LOGS_ENDPOINT nor OTEL_EXPORTER_OTLP_ENDPOINT is set:
	// the OTLP/gRPC port of a local Collector.
	DefaultLogsEndpoint = "http://localhost:4317"

	// DefaultCallStackInterval is the default of Splunk's Java profiler
	// for the same variable.
	DefaultCallStackInterval = 10 * time.Second

	// MinCallStackInterval is the shortest window accepted, the
	// profiler's own floor (collect.MinPeriod says why).
	MinCallStackInterval = collect.MinPeriod

	// maxProfStackDepth is the runtime's ceiling for GODEBUG=profstackdepth.
	maxProfStackDepth = 1024
)

// Config is the Splunk profiling configuration read from the environment.
type Config struct {
	// Enabled is SPLUNK_PROFILER_ENABLED: send profiles as Splunk
	// profiling logs. Default false.
	Enabled bool
	// MemoryEnabled is SPLUNK_PROFILER_MEMORY_ENABLED: add allocation
	// data, which needs the heap profile. Default false.
	MemoryEnabled bool
	// Endpoint is the host:port of the OTLP/gRPC logs receiver, from
	// SPLUNK_PROFILER_LOGS_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT, else
	// DefaultLogsEndpoint.
	Endpoint string
	// Insecure is set when the endpoint URL's scheme is http, or when it
	// was given as a bare host:port and OTEL_EXPORTER_OTLP_INSECURE is
	// true.
	Insecure bool
	// CallStackInterval is SPLUNK_PROFILER_CALL_STACK_INTERVAL: the length
	// of a collection window, which is how often the call stacks are
	// gathered and sent, and the resolution of source.event.time. Zero when
	// the variable is unset; the caller then applies its own precedence
	// and DefaultCallStackInterval.
	CallStackInterval time.Duration
	// MemoryStackDepth is the runtime's depth limit for heap profile
	// stacks, from GODEBUG=profstackdepth, else DefaultMemoryStackDepth.
	MemoryStackDepth int
}

// ConfigFromEnv reads the Splunk profiler variables through getenv. A
// variable set to a blank value counts as unset. An invalid value is
// ignored, as the OpenTelemetry specification asks of its own variables,
// and returned as a warning naming the variable and its value (without a
// prefix, so that the caller can tell it from its own warning about the
// same OTEL_ variable): the configuration is filled in as far as the
// values were valid, and a caller that does not turn the Splunk mode on
// may ignore the warnings.
//
// SPLUNK_PROFILER_LOGS_ENDPOINT and OTEL_EXPORTER_OTLP_ENDPOINT are URLs
// (http://host:port for plaintext, https://host:port for TLS; without a
// port, 80 or 443) or a bare host:port, which uses TLS unless
// OTEL_EXPORTER_OTLP_INSECURE=true; an invalid one gives way to the next,
// then to DefaultLogsEndpoint. SPLUNK_PROFILER_CALL_STACK_INTERVAL is a
// whole number of milliseconds, at least MinCallStackInterval.
func ConfigFromEnv(getenv func(string) string) (c Config, warnings []error) {
	r := envconfig.New(getenv, "")
	c = Config{MemoryStackDepth: MemoryStackDepth(getenv(envGODEBUG))}
	c.Enabled, _ = r.Bool(EnvEnabled)
	c.MemoryEnabled, _ = r.Bool(EnvMemoryEnabled)

	// An invalid OTEL_EXPORTER_OTLP_INSECURE is the OTLP configuration's
	// to report, when it uses the variable; here it only fails to say
	// "true".
	insecure := func() bool {
		iv, set := r.Lookup(envOTLPInsecure)
		return set && strings.EqualFold(iv, "true")
	}
	type endpoint struct {
		hostport  string
		plaintext bool
	}
	e, ok := envconfig.Parse(r, func(v string) (endpoint, error) {
		hostport, plaintext, err := envconfig.GRPCEndpoint(v, insecure)
		return endpoint{hostport, plaintext}, err
	}, EnvLogsEndpoint, envOTLPEndpoint)
	if !ok {
		e.hostport, e.plaintext, _ = envconfig.GRPCEndpoint(DefaultLogsEndpoint, insecure)
	}
	c.Endpoint, c.Insecure = e.hostport, e.plaintext

	c.CallStackInterval, _ = r.Millis("the call stack interval", MinCallStackInterval, EnvCallStackInterval)
	return c, r.Warnings()
}

// MemoryStackDepth reads profstackdepth from a GODEBUG value as the runtime
// does: the last setting wins, values above 1024 mean 1024, and a value the
// runtime would not accept leaves the default. Settings made with
// //go:debug lines in the main package are not in the environment and so
// not seen here.
func MemoryStackDepth(godebug string) int {
	depth := DefaultMemoryStackDepth
	for _, kv := range strings.Split(godebug, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k != "profstackdepth" {
			continue
		}
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			depth = min(n, maxProfStackDepth)
		}
	}
	return depth
}

// OTLP returns base, the profiler's resolved OTLP configuration (headers,
// timeout, compression, user agent, TLS), aimed at the logs endpoint over
// gRPC.
func (c Config) OTLP(base export.OTLPConfig) export.OTLPConfig {
	base.Protocol = export.ProtocolGRPC
	base.Endpoint = c.Endpoint
	base.Insecure = c.Insecure
	return base
}

// EncodeOptions returns the options of Encode that c implies.
func (c Config) EncodeOptions() EncodeOptions {
	return EncodeOptions{MemoryStackDepth: c.MemoryStackDepth}
}
