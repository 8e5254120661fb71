package profiler

import (
	"bytes"
	"context"
	"fmt"
	"github.com/pprofotel/profiler/internal/collect"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/pprofotel/profiler/internal/export"
	"github.com/pprofotel/profiler/internal/testcert"
)

// envCase is one value of one variable and what the OpenTelemetry Go SDK
// makes of it (or, where the SDK does not read the variable, what the
// specification asks): the value is applied, or ignored with one warning,
// and Start never fails.
type envCase struct {
	name, value string
	// also holds other variables the case needs (a protocol, the generic
	// form a per-signal one falls back to).
	also map[string]string
	// warn is set when the value must be warned about, once.
	warn bool
	// check inspects the resolved configuration.
	check func(c *config) error
}

func wantEqual[T comparable](what string, got, want T) error {
	if got != want {
		return fmt.Errorf("%s = %v, want %v", what, got, want)
	}
	return nil
}

func wantAttr(key, want string) func(c *config) error {
	return func(c *config) error {
		v, ok := c.resource.Set().Value(attribute.Key(key))
		if want == "" {
			if ok {
				return fmt.Errorf("resource has %s=%q, want none", key, v.Emit())
			}
			return nil
		}
		return wantEqual("resource "+key, v.Emit(), want)
	}
}

func wantHeaders(want map[string]string) func(c *config) error {
	return func(c *config) error {
		if !maps.Equal(c.otlp.Headers, want) {
			return fmt.Errorf("headers = %v, want %v", c.otlp.Headers, want)
		}
		return nil
	}
}

func wantEndpoint(endpoint string, insecure bool) func(c *config) error {
	return func(c *config) error {
		if c.otlp.Endpoint != endpoint || c.otlp.Insecure != insecure {
			return fmt.Errorf("endpoint = %q insecure %v, want %q insecure %v", c.otlp.Endpoint, c.otlp.Insecure, endpoint, insecure)
		}
		return nil
	}
}

func wantProtocol(p string) func(c *config) error {
	return func(c *config) error { return wantEqual("protocol", c.otlp.Protocol, p) }
}

func wantTimeout(d time.Duration) func(c *config) error {
	return func(c *config) error { return wantEqual("timeout", c.otlp.Timeout, d) }
}

func wantCompression(s string) func(c *config) error {
	return func(c *config) error { return wantEqual("compression", c.otlp.Compression, s) }
}

func wantDisabled(d bool) func(c *config) error {
	return func(c *config) error { return wantEqual("disabled", c.disabled, d) }
}

func wantRoots(set bool) func(c *config) error {
	return func(c *config) error {
		return wantEqual("custom roots", c.otlp.TLS != nil && c.otlp.TLS.RootCAs != nil, set)
	}
}

func wantClientCert(set bool) func(c *config) error {
	return func(c *config) error {
		return wantEqual("client certificate", c.otlp.TLS != nil && len(c.otlp.TLS.Certificates) > 0, set)
	}
}

// otelEnvCases lists, for every OTEL_ variable the profiler reads, a valid,
// an invalid and an empty value, with the outcome the OpenTelemetry Go SDK
// (v1.47; otlptracegrpc and otlptracehttp for the exporter variables,
// sdk/resource for the resource) has for the same value. Where we differ
// from the SDK, the comment says so and why.
func otelEnvCases(t *testing.T) []envCase {
	pki := testcert.New(t)
	grpcTo := map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317"}
	const defaultTimeout = 10 * time.Second
	return []envCase{
		{"OTEL_SDK_DISABLED", "true", nil, false, wantDisabled(true)},
		{"OTEL_SDK_DISABLED", "TRUE", nil, false, wantDisabled(true)},
		{"OTEL_SDK_DISABLED", "false", nil, false, wantDisabled(false)},
		// The specification: a boolean that is not "true" is false, with a
		// warning unless it is "false".
		{"OTEL_SDK_DISABLED", "yes", nil, true, wantDisabled(false)},
		{"OTEL_SDK_DISABLED", "", nil, false, wantDisabled(false)},

		{"OTEL_SERVICE_NAME", "checkout", nil, false, wantAttr("service.name", "checkout")},
		{"OTEL_SERVICE_NAME", "  ", nil, false, func(c *config) error {
			v, _ := c.resource.Set().Value("service.name")
			if !strings.HasPrefix(v.AsString(), "unknown_service") {
				return fmt.Errorf("service.name = %q, want the unknown_service default", v.AsString())
			}
			return nil
		}},

		{"OTEL_RESOURCE_ATTRIBUTES", "team=core,tier=gold", nil, false, func(c *config) error {
			return cmpErrs(wantAttr("team", "core")(c), wantAttr("tier", "gold")(c))
		}},
		// sdk/resource leaves an entry without '=' out and keeps the others.
		{"OTEL_RESOURCE_ATTRIBUTES", "foo", nil, true, wantAttr("foo", "")},
		{"OTEL_RESOURCE_ATTRIBUTES", "team=core,foo", nil, true, wantAttr("team", "core")},
		// ... and keeps a value that is not percent-encoded correctly as
		// written.
		{"OTEL_RESOURCE_ATTRIBUTES", "team=%zz", nil, true, wantAttr("team", "%zz")},
		{"OTEL_RESOURCE_ATTRIBUTES", "", nil, false, wantAttr("team", "")},

		// OTEL_CONFIG_FILE is not read (README: the schema has no profiles
		// section); a service that sets it is told so, and the rest of the
		// configuration applies.
		{"OTEL_CONFIG_FILE", "/etc/otel/config.yaml", nil, true, wantProtocol("http/protobuf")},
		{"OTEL_CONFIG_FILE", "", nil, false, wantProtocol("http/protobuf")},

		{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318", nil, false,
			wantEndpoint("http://collector:4318/v1development/profiles", true)},
		// otlptracehttp warns about a URL it cannot parse and keeps its
		// default.
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318", nil, true, wantEndpoint(defaultHTTPEndpoint, true)},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://collector:21", nil, true, wantEndpoint(defaultHTTPEndpoint, true)},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "collector", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true,
			wantEndpoint(defaultGRPCEndpoint, true)},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "", nil, false, wantEndpoint(defaultHTTPEndpoint, true)},
		{"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "https://collector/p", nil, false, wantEndpoint("https://collector/p", false)},
		// An invalid per-signal value is ignored, so the generic one
		// applies, as in otel-go, which applies the generic form first.
		{"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "http://collector:x/", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c:4318"}, true,
			wantEndpoint("https://c:4318/v1development/profiles", false)},
		{"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "", nil, false, wantEndpoint(defaultHTTPEndpoint, true)},

		{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", nil, false, wantProtocol("grpc")},
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "HTTP/JSON", nil, false, wantProtocol("http/json")},
		// The specification: an unknown enum value is warned about and
		// ignored. (otel-go's autoexport fails instead; its exporters do
		// not read the variable.)
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "thrift", nil, true, wantProtocol("http/protobuf")},
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "", nil, false, wantProtocol("http/protobuf")},
		{"OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL", "http/protobuf", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, wantProtocol("http/protobuf")},
		{"OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL", "http", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, wantProtocol("grpc")},
		{"OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL", "", nil, false, wantProtocol("http/protobuf")},

		{"OTEL_EXPORTER_OTLP_HEADERS", "api-key=s%20t,team=core", nil, false, wantHeaders(map[string]string{"api-key": "s t", "team": "core"})},
		// otlptrace leaves a malformed entry out and keeps the others.
		{"OTEL_EXPORTER_OTLP_HEADERS", "a", nil, true, wantHeaders(nil)},
		{"OTEL_EXPORTER_OTLP_HEADERS", "team=core,a", nil, true, wantHeaders(map[string]string{"team": "core"})},
		{"OTEL_EXPORTER_OTLP_HEADERS", "bad key=v,team=core", nil, true, wantHeaders(map[string]string{"team": "core"})},
		{"OTEL_EXPORTER_OTLP_HEADERS", "", nil, false, wantHeaders(nil)},
		{"OTEL_EXPORTER_OTLP_PROFILES_HEADERS", "k=%", nil, true, wantHeaders(nil)},
		{"OTEL_EXPORTER_OTLP_PROFILES_HEADERS", "k=v", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "g=1"}, false, wantHeaders(map[string]string{"k": "v"})},
		{"OTEL_EXPORTER_OTLP_PROFILES_HEADERS", "", nil, false, wantHeaders(nil)},

		{"OTEL_EXPORTER_OTLP_TIMEOUT", "5000", nil, false, wantTimeout(5 * time.Second)},
		// otlptrace ignores a value that is not an integer, with a warning.
		{"OTEL_EXPORTER_OTLP_TIMEOUT", "10s", nil, true, wantTimeout(defaultTimeout)},
		// otlptrace applies a negative or zero timeout, which fails every
		// export at once; the specification's "warn and ignore" for values
		// that cannot be used keeps the default instead.
		{"OTEL_EXPORTER_OTLP_TIMEOUT", "-5", nil, true, wantTimeout(defaultTimeout)},
		{"OTEL_EXPORTER_OTLP_TIMEOUT", "", nil, false, wantTimeout(defaultTimeout)},
		{"OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT", "250", nil, false, wantTimeout(250 * time.Millisecond)},
		{"OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT", "x", map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "3000"}, true, wantTimeout(3 * time.Second)},
		{"OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT", "", nil, false, wantTimeout(defaultTimeout)},

		{"OTEL_EXPORTER_OTLP_COMPRESSION", "gzip", nil, false, wantCompression("gzip")},
		// otlptrace reads anything but "gzip" as no compression.
		{"OTEL_EXPORTER_OTLP_COMPRESSION", "zstd", nil, true, wantCompression("none")},
		{"OTEL_EXPORTER_OTLP_COMPRESSION", "", nil, false, wantCompression("none")},
		{"OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION", "GZIP", nil, false, wantCompression("gzip")},
		{"OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION", "br", map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}, true, wantCompression("gzip")},
		{"OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION", "", nil, false, wantCompression("none")},

		{"OTEL_EXPORTER_OTLP_INSECURE", "true", grpcTo, false, wantEndpoint("collector:4317", true)},
		// otlptrace reads anything but "true" as false.
		{"OTEL_EXPORTER_OTLP_INSECURE", "maybe", grpcTo, true, wantEndpoint("collector:4317", false)},
		{"OTEL_EXPORTER_OTLP_INSECURE", "", grpcTo, false, wantEndpoint("collector:4317", false)},
		{"OTEL_EXPORTER_OTLP_PROFILES_INSECURE", "True", grpcTo, false, wantEndpoint("collector:4317", true)},
		{"OTEL_EXPORTER_OTLP_PROFILES_INSECURE", "on", grpcTo, true, wantEndpoint("collector:4317", false)},
		{"OTEL_EXPORTER_OTLP_PROFILES_INSECURE", "", grpcTo, false, wantEndpoint("collector:4317", false)},

		{"OTEL_EXPORTER_OTLP_CERTIFICATE", pki.CAFile, nil, false, wantRoots(true)},
		// otlptrace warns about a file it cannot read and uses the system
		// roots.
		{"OTEL_EXPORTER_OTLP_CERTIFICATE", "/nonexistent/ca.pem", nil, true, wantRoots(false)},
		{"OTEL_EXPORTER_OTLP_CERTIFICATE", pki.ClientKeyFile, nil, true, wantRoots(false)},
		{"OTEL_EXPORTER_OTLP_CERTIFICATE", "", nil, false, wantRoots(false)},
		{"OTEL_EXPORTER_OTLP_PROFILES_CERTIFICATE", pki.CAFile, nil, false, wantRoots(true)},
		{"OTEL_EXPORTER_OTLP_PROFILES_CERTIFICATE", "/nonexistent/ca.pem", nil, true, wantRoots(false)},
		{"OTEL_EXPORTER_OTLP_PROFILES_CERTIFICATE", "", nil, false, wantRoots(false)},

		{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", pki.ClientCertFile, map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_KEY": pki.ClientKeyFile}, false, wantClientCert(true)},
		// otlptrace warns and sends no client certificate.
		{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "/nonexistent/cert.pem", map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_KEY": pki.ClientKeyFile}, true, wantClientCert(false)},
		{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "", nil, false, wantClientCert(false)},
		{"OTEL_EXPORTER_OTLP_PROFILES_CLIENT_CERTIFICATE", pki.ClientCertFile, map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_KEY": pki.ClientKeyFile}, false, wantClientCert(true)},
		{"OTEL_EXPORTER_OTLP_PROFILES_CLIENT_CERTIFICATE", pki.ClientKeyFile, map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_KEY": pki.ClientKeyFile}, true, wantClientCert(false)},
		{"OTEL_EXPORTER_OTLP_PROFILES_CLIENT_CERTIFICATE", "", nil, false, wantClientCert(false)},
		{"OTEL_EXPORTER_OTLP_CLIENT_KEY", pki.ClientKeyFile, map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": pki.ClientCertFile}, false, wantClientCert(true)},
		{"OTEL_EXPORTER_OTLP_CLIENT_KEY", "/nonexistent/key.pem", map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": pki.ClientCertFile}, true, wantClientCert(false)},
		{"OTEL_EXPORTER_OTLP_CLIENT_KEY", "", nil, false, wantClientCert(false)},
		{"OTEL_EXPORTER_OTLP_PROFILES_CLIENT_KEY", pki.ClientKeyFile, map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": pki.ClientCertFile}, false, wantClientCert(true)},
		{"OTEL_EXPORTER_OTLP_PROFILES_CLIENT_KEY", pki.CAFile, map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": pki.ClientCertFile}, true, wantClientCert(false)},
		{"OTEL_EXPORTER_OTLP_PROFILES_CLIENT_KEY", "", nil, false, wantClientCert(false)},
	}
}

// resolveEnvCase resolves the configuration of tt's environment, checks
// that it warns about tt's variable once or about nothing, and tt.check.
func resolveEnvCase(t *testing.T, tt envCase) (env map[string]string, c *config) {
	t.Helper()
	env = map[string]string{tt.name: tt.value}
	maps.Copy(env, tt.also)
	c, err := newConfig(nil, envOf(env))
	if err != nil {
		t.Fatalf("newConfig: %v", err)
	}
	n := 0
	for _, w := range c.warnings {
		if strings.Contains(w.Error(), tt.name+"=") {
			n++
		}
	}
	if tt.warn && n != 1 || !tt.warn && len(c.warnings) != 0 {
		t.Errorf("warnings %q, want %s", c.warnings, map[bool]string{true: "one about " + tt.name, false: "none"}[tt.warn])
	}
	if err := tt.check(c); err != nil {
		t.Error(err)
	}
	return env, c
}

func cmpErrs(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// TestOTELVariablesFollowTheSpecification runs every OTEL_ variable the
// profiler reads with a valid, an invalid and an empty value, through
// Start: it never fails, an invalid value is logged once and ignored, and
// the resolved configuration is what otel-go makes of the same value.
func TestOTELVariablesFollowTheSpecification(t *testing.T) {
	cases := otelEnvCases(t)
	covered := map[string][3]bool{} // valid, invalid, empty
	for _, tt := range cases {
		k := covered[tt.name]
		switch {
		case strings.TrimSpace(tt.value) == "":
			k[2] = true
		case tt.warn:
			k[1] = true
		default:
			k[0] = true
		}
		covered[tt.name] = k
	}
	for _, name := range configVariables(t) {
		if !strings.HasPrefix(name, "OTEL_") || strings.HasSuffix(name, "_") {
			continue
		}
		k := covered[name]
		// Every string is a valid service name.
		if name == envServiceName {
			k[1] = true
		}
		// OTEL_CONFIG_FILE has no valid value that is read.
		if name == envConfigFile {
			k[0] = true
		}
		if k != [3]bool{true, true, true} {
			t.Errorf("%s lacks a valid, an invalid or an empty case (have %v)", name, k)
		}
	}

	for _, tt := range cases {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			env, c := resolveEnvCase(t, tt)
			if !c.disabled {
				// The resolved settings build an exporter: Start cannot
				// fail on them later.
				e, err := export.NewOTLP(c.otlp)
				if err != nil {
					t.Fatalf("NewOTLP: %v", err)
				}
				_ = e.Shutdown(context.Background())
			}

			// The same through Start, with the process's environment.
			for k, v := range env {
				t.Setenv(k, v)
			}
			var logs bytes.Buffer
			p, err := Start(WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
				WithExporter(ExporterNone), WithProfileTypes(GoroutineProfile), WithProcessContext(false))
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			if err := p.Stop(context.Background()); err != nil {
				t.Errorf("Stop: %v", err)
			}
			want := 0
			if tt.warn {
				want = 1
			}
			if n := strings.Count(logs.String(), tt.name+`=`); n != want {
				t.Errorf("Start logged %d warnings about %s, want %d:\n%s", n, tt.name, want, logs.String())
			}
		})
	}
}

// TestOwnVariablesIgnoreInvalidValues checks the rule README gives for the
// profiler's own variables: an invalid value is warned about once and
// ignored, the default (or the next setting in line) applies.
func TestOwnVariablesIgnoreInvalidValues(t *testing.T) {
	tests := []envCase{
		{"PPROFOTEL_ENABLED", "off", nil, true, wantDisabled(false)},
		{"PPROFOTEL_PERIOD", "abc", nil, true, func(c *config) error { return wantEqual("period", c.period, defaultPeriod) }},
		{"PPROFOTEL_PERIOD", "-5s", nil, true, func(c *config) error { return wantEqual("period", c.period, defaultPeriod) }},
		{"PPROFOTEL_PERIOD", "1ns", nil, true, func(c *config) error { return wantEqual("period", c.period, defaultPeriod) }},
		{"PPROFOTEL_PERIOD", "999ms", nil, true, func(c *config) error { return wantEqual("period", c.period, defaultPeriod) }},
		{"PPROFOTEL_PROFILES", "cpu,threads", nil, true, func(c *config) error {
			return wantEqual("profiles", fmt.Sprint(c.profileTypes), fmt.Sprint(defaultProfileTypes()))
		}},
		{"PPROFOTEL_MUTEX_FRACTION", "0", nil, true, func(c *config) error { return wantEqual("mutex fraction", c.rates[MutexProfile], 10) }},
		{"PPROFOTEL_BLOCK_RATE", "1.5", nil, true, func(c *config) error { return wantEqual("block rate", c.rates[BlockProfile], 10000) }},
		{"PPROFOTEL_CPU_DURATION", "2m", nil, true, func(c *config) error { return wantEqual("CPU duration", c.cpuDuration, defaultPeriod/defaultCPUShare) }},
		{"PPROFOTEL_CPU_DURATION", "abc", nil, true, func(c *config) error { return wantEqual("CPU duration", c.cpuDuration, defaultPeriod/defaultCPUShare) }},
		{"PPROFOTEL_CPU_DURATION", "1ns", nil, true, func(c *config) error { return wantEqual("CPU duration", c.cpuDuration, defaultPeriod/defaultCPUShare) }},
		{"PPROFOTEL_MAX_GOROUTINES", "-1", nil, true, func(c *config) error {
			return wantEqual("max goroutines", c.maxGoroutines, collect.DefaultMaxGoroutines)
		}},
		{"PPROFOTEL_OFFCPU_DUTY", "0", nil, true, func(c *config) error { return wantEqual("off-CPU duty cycle", c.rates[OffCPUProfile], 10) }},
		{"PPROFOTEL_OFFCPU_DUTY", "101", nil, true, func(c *config) error { return wantEqual("off-CPU duty cycle", c.rates[OffCPUProfile], 10) }},
		{"PPROFOTEL_GOROUTINELEAK_INTERVAL", "5", nil, true, func(c *config) error {
			return wantEqual("goroutine-leak interval", c.intervals[GoroutineLeakProfile], 5*time.Minute)
		}},
		{"PPROFOTEL_GOROUTINELEAK_INTERVAL", "0s", nil, true, func(c *config) error {
			return wantEqual("goroutine-leak interval", c.intervals[GoroutineLeakProfile], 5*time.Minute)
		}},
		{"PPROFOTEL_EXPORTER", "stdout", nil, true, func(c *config) error { return wantEqual("exporter", c.exporter, ExporterOTLP) }},
		// An invalid exporter is as if unset: the Splunk switch decides.
		{"PPROFOTEL_EXPORTER", "stdout", map[string]string{"SPLUNK_PROFILER_ENABLED": "true"}, true, func(c *config) error {
			return wantEqual("exporter", c.exporter, ExporterSplunk)
		}},
		{"PPROFOTEL_FILE_FORMAT", "yaml", nil, true, func(c *config) error { return wantEqual("json", c.file.JSON, false) }},
		{"PPROFOTEL_FILE_MAX_FILES", "-1", nil, true, func(c *config) error {
			return wantEqual("max files", c.file.MaxFiles, export.DefaultFileMaxFiles)
		}},
		{"PPROFOTEL_FILE_MAX_BYTES", "1GiB", nil, true, func(c *config) error {
			return wantEqual("max bytes", c.file.MaxBytes, int64(export.DefaultFileMaxBytes))
		}},
		{"PPROFOTEL_PROCESS_CONTEXT", "no", nil, true, func(c *config) error { return wantEqual("process context", c.processContext, true) }},
		{"SPLUNK_PROFILER_CALL_STACK_INTERVAL", "often", map[string]string{"PPROFOTEL_EXPORTER": "splunk"}, true, func(c *config) error {
			return wantEqual("period", c.period, 10*time.Second)
		}},
		// A stray Splunk variable is not even warned about when the
		// Splunk encoding is off.
		{"SPLUNK_PROFILER_CALL_STACK_INTERVAL", "often", nil, false, func(c *config) error { return wantEqual("period", c.period, defaultPeriod) }},
		{"SPLUNK_PROFILER_LOGS_ENDPOINT", "grpc://c:1", map[string]string{"PPROFOTEL_EXPORTER": "splunk", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"}, true,
			wantEndpoint("c:4317", true)},
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) { resolveEnvCase(t, tt) })
	}
}

// TestOptionsStayStrict checks that an invalid option still fails Start,
// naming the option and its value, whatever the environment says.
func TestOptionsStayStrict(t *testing.T) {
	_, err := newConfig([]Option{WithTimeout(-time.Second)}, envOf(map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "x"}))
	if err == nil || err.Error() != "profiler: WithTimeout(-1s): timeout must be positive" {
		t.Errorf("err = %v, want the option's error alone", err)
	}
}

// configVariables lists the environment variables the configuration reads,
// with the per-signal form of every OTLP variable.
func configVariables(t *testing.T) []string {
	t.Helper()
	vars := variablesInConfigSource(t)
	for _, suffix := range []string{"ENDPOINT", "PROTOCOL", "HEADERS", "TIMEOUT", "COMPRESSION", "INSECURE", "CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY"} {
		vars = append(vars, otlpVar(suffix)[0])
	}
	slices.Sort(vars)
	return slices.Compact(vars)
}
