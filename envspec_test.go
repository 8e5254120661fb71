package profiler

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pprofotel/profiler/exporters/otlpprofilegrpc"
	"github.com/pprofotel/profiler/exporters/otlpprofilehttp"
	"github.com/pprofotel/profiler/internal/collect"

	"go.opentelemetry.io/otel/attribute"
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

func wantDisabled(d bool) func(c *config) error {
	return func(c *config) error { return wantEqual("disabled", c.disabled, d) }
}

// otelEnvCases lists, for every OTEL_ variable the profiler reads, a valid,
// an invalid and an empty value, with the outcome the OpenTelemetry Go SDK
// (v1.47; otlptracegrpc and otlptracehttp for the exporter variables,
// sdk/resource for the resource) has for the same value. Where we differ
// from the SDK, the comment says so and why.
func otelEnvCases(t *testing.T) []envCase {
	httpExp, grpcExp := wantExporter(&otlpprofilehttp.Exporter{}), wantExporter(&otlpprofilegrpc.Exporter{})
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

		// OTEL_CONFIG_FILE is not read (the schema has no profiles
		// section); a service that sets it is told so, and the rest of the
		// configuration applies.
		{"OTEL_CONFIG_FILE", "/etc/otel/config.yaml", nil, true, httpExp},
		{"OTEL_CONFIG_FILE", "", nil, false, httpExp},

		// As autoexport reads OTEL_TRACES_EXPORTER, but an unknown value
		// is warned about and ignored, as the specification asks.
		{"OTEL_PROFILES_EXPORTER", "none", nil, false, wantExporter(envNone)},
		{"OTEL_PROFILES_EXPORTER", "console", nil, true, httpExp},
		{"OTEL_PROFILES_EXPORTER", "", nil, false, httpExp},

		{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", nil, false, grpcExp},
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "HTTP/JSON", nil, false, httpExp},
		// The specification: an unknown enum value is warned about and
		// ignored. (otel-go's autoexport fails instead.)
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "thrift", nil, true, httpExp},
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "", nil, false, httpExp},
		{"OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL", "http/protobuf", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, httpExp},
		{"OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL", "http", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, grpcExp},
		{"OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL", "", nil, false, httpExp},
	}
}

// wantExporter checks the type of the exporter the environment chose.
func wantExporter(want Exporter) func(c *config) error {
	return func(c *config) error {
		if reflect.TypeOf(c.exporter) != reflect.TypeOf(want) {
			return fmt.Errorf("exporter %T, want %T", c.exporter, want)
		}
		return nil
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
	t.Cleanup(c.shutdownOwnExporter)
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
			env, _ := resolveEnvCase(t, tt)

			// The same through Start, with the process's environment.
			for k, v := range env {
				t.Setenv(k, v)
			}
			var logs bytes.Buffer
			p, err := Start(WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
				WithProfileTypes(GoroutineProfile), WithProcessContext(false))
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			// The exporter the environment chose may have no receiver:
			// its window is not this test's concern.
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			p.Stop(ctx)
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
	defaultCPU := defaultWindow * defaultCPUDuty / 100
	tests := []envCase{
		{"PPROFOTEL_ENABLED", "off", nil, true, wantDisabled(false)},
		{"PPROFOTEL_WINDOW", "abc", nil, true, func(c *config) error { return wantEqual("window", c.window, defaultWindow) }},
		{"PPROFOTEL_WINDOW", "-5s", nil, true, func(c *config) error { return wantEqual("window", c.window, defaultWindow) }},
		{"PPROFOTEL_WINDOW", "1ns", nil, true, func(c *config) error { return wantEqual("window", c.window, defaultWindow) }},
		{"PPROFOTEL_WINDOW", "999ms", nil, true, func(c *config) error { return wantEqual("window", c.window, defaultWindow) }},
		{"PPROFOTEL_PROFILES", "threads", nil, true, func(c *config) error {
			return wantEqual("profiles", fmt.Sprint(c.profileTypes), fmt.Sprint(defaultProfileTypes()))
		}},
		{"PPROFOTEL_PROFILES", "cpu,threads", nil, true, func(c *config) error {
			return wantEqual("profiles", fmt.Sprint(c.profileTypes), fmt.Sprint([]ProfileType{CPUProfile}))
		}},
		{"PPROFOTEL_MUTEX_PROFILE_FRACTION", "0", nil, true, func(c *config) error { return wantEqual("mutex fraction", c.rates[MutexProfile], 10) }},
		{"PPROFOTEL_BLOCK_PROFILE_RATE", "1.5", nil, true, func(c *config) error { return wantEqual("block rate", c.rates[BlockProfile], 10000) }},
		{"PPROFOTEL_CPU_DUTY_CYCLE", "101", nil, true, func(c *config) error { return wantEqual("CPU duration", c.cpuDuration, defaultCPU) }},
		{"PPROFOTEL_CPU_DUTY_CYCLE", "abc", nil, true, func(c *config) error { return wantEqual("CPU duration", c.cpuDuration, defaultCPU) }},
		{"PPROFOTEL_CPU_DUTY_CYCLE", "0", nil, true, func(c *config) error { return wantEqual("CPU duration", c.cpuDuration, defaultCPU) }},
		{"PPROFOTEL_MAX_GOROUTINES", "-1", nil, true, func(c *config) error {
			return wantEqual("max goroutines", c.maxGoroutines, collect.DefaultMaxGoroutines)
		}},
		{"PPROFOTEL_SLOW_REQUEST_THRESHOLD", "5ms", nil, true, func(c *config) error {
			return wantEqual("slow-request threshold", c.slowThreshold, collect.DefaultSlowThreshold)
		}},
		{"PPROFOTEL_SLOW_REQUEST_THRESHOLD", "100", nil, true, func(c *config) error {
			return wantEqual("slow-request threshold", c.slowThreshold, collect.DefaultSlowThreshold)
		}},
		{"PPROFOTEL_MAX_ROUTES", "-3", nil, true, func(c *config) error { return wantEqual("max routes", c.maxRoutes, 100) }},
		{"PPROFOTEL_OFFCPU_DUTY_CYCLE", "0", nil, true, func(c *config) error { return wantEqual("off-CPU duty cycle", c.rates[OffCPUProfile], 10) }},
		{"PPROFOTEL_OFFCPU_DUTY_CYCLE", "101", nil, true, func(c *config) error { return wantEqual("off-CPU duty cycle", c.rates[OffCPUProfile], 10) }},
		{"PPROFOTEL_GOROUTINELEAK_INTERVAL", "5", nil, true, func(c *config) error {
			return wantEqual("goroutine-leak interval", c.intervals[GoroutineLeakProfile], 5*time.Minute)
		}},
		{"PPROFOTEL_GOROUTINELEAK_INTERVAL", "0s", nil, true, func(c *config) error {
			return wantEqual("goroutine-leak interval", c.intervals[GoroutineLeakProfile], 5*time.Minute)
		}},
		{"OTEL_PROFILES_EXPORTER", "stdout", nil, true, wantExporter(&otlpprofilehttp.Exporter{})},
		// A name whose package this program does not link: warned about,
		// and the OTLP exporter is used.
		{"OTEL_PROFILES_EXPORTER", "splunk", nil, true, wantExporter(&otlpprofilehttp.Exporter{})},
		{"PPROFOTEL_PROCESS_CONTEXT", "no", nil, true, func(c *config) error { return wantEqual("process context", c.processContext, true) }},
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) { resolveEnvCase(t, tt) })
	}
}

// TestOptionsStayStrict checks that an invalid option still fails Start,
// naming the option and its value, whatever the environment says.
func TestOptionsStayStrict(t *testing.T) {
	_, err := newConfig([]Option{WithCPUDutyCycle(-1)}, envOf(map[string]string{"PPROFOTEL_CPU_DUTY_CYCLE": "x"}))
	if err == nil || err.Error() != "profiler: WithCPUDutyCycle(-1): duty cycle must be a percentage from 1 to 100" {
		t.Errorf("err = %v, want the option's error alone", err)
	}
}

// configVariables lists the environment variables the configuration reads.
func configVariables(t *testing.T) []string {
	t.Helper()
	vars := variablesInConfigSource(t)
	slices.Sort(vars)
	return slices.Compact(vars)
}
