package profiler

import (
	"bytes"
	"context"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pprofotel/profiler/exporters/otlpprofilefile"
	"github.com/pprofotel/profiler/exporters/otlpprofilegrpc"
	"github.com/pprofotel/profiler/exporters/otlpprofilehttp"
)

// envOf returns a getenv that sees only m.
func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func mustConfig(t *testing.T, opts []Option, env map[string]string) *config {
	t.Helper()
	c, err := newConfig(opts, envOf(env))
	if err != nil {
		t.Fatalf("newConfig: %v", err)
	}
	t.Cleanup(c.shutdownOwnExporter)
	return c
}

func TestNewConfigDefaults(t *testing.T) {
	c := mustConfig(t, nil, nil)
	if c.disabled {
		t.Error("disabled = true, want false")
	}
	if c.window != 60*time.Second {
		t.Errorf("window = %v, want 60s", c.window)
	}
	if c.cpuDuration != 10200*time.Millisecond {
		t.Errorf("cpuDuration = %v, want 10.2s (17%% of 60s)", c.cpuDuration)
	}
	if want := []ProfileType{CPUProfile, HeapProfile, GoroutineProfile}; !reflect.DeepEqual(c.profileTypes, want) {
		t.Errorf("profileTypes = %v, want %v", c.profileTypes, want)
	}
	if c.rates[MutexProfile] != 10 || c.rates[BlockProfile] != 10000 {
		t.Errorf("mutexFraction, blockRate = %d, %d, want 10, 10000", c.rates[MutexProfile], c.rates[BlockProfile])
	}
	if _, ok := c.exporter.(*otlpprofilehttp.Exporter); !ok || !c.fromEnv {
		t.Errorf("exporter = %T (from the environment: %v), want the OTLP/HTTP one built from the environment", c.exporter, c.fromEnv)
	}
	if c.resource == nil || c.resource.Len() == 0 {
		t.Error("resource is empty")
	}
	if c.logger == nil {
		t.Fatal("logger is nil")
	}
	// Info is enabled for Start's line alone: TestDefaultLoggerShowsNoProgress.
	if c.logger.Enabled(context.Background(), slog.LevelDebug) {
		t.Error("default logger passes Debug; it must be quiet")
	}
}

func TestNewConfigEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		got  func(*config) any
		want any
	}{
		{"window", map[string]string{"PPROFOTEL_WINDOW": "15s"},
			func(c *config) any { return c.window }, 15 * time.Second},
		{"window blanks", map[string]string{"PPROFOTEL_WINDOW": " 2m "},
			func(c *config) any { return c.window }, 2 * time.Minute},
		{"blank value is unset", map[string]string{"PPROFOTEL_WINDOW": "   "},
			func(c *config) any { return c.window }, 60 * time.Second},
		{"window under the floor", map[string]string{"PPROFOTEL_WINDOW": "1ns"},
			func(c *config) any { return c.window }, 60 * time.Second},
		{"profiles", map[string]string{"PPROFOTEL_PROFILES": "block, cpu,MUTEX , cpu"},
			func(c *config) any { return c.profileTypes }, []ProfileType{CPUProfile, MutexProfile, BlockProfile}},
		{"profiles trailing comma", map[string]string{"PPROFOTEL_PROFILES": "goroutine,"},
			func(c *config) any { return c.profileTypes }, []ProfileType{GoroutineProfile}},
		{"mutex fraction", map[string]string{"PPROFOTEL_MUTEX_PROFILE_FRACTION": "5"},
			func(c *config) any { return c.rates[MutexProfile] }, 5},
		{"block rate", map[string]string{"PPROFOTEL_BLOCK_PROFILE_RATE": "1"},
			func(c *config) any { return c.rates[BlockProfile] }, 1},
		{"off-CPU duty cycle", map[string]string{"PPROFOTEL_OFFCPU_DUTY_CYCLE": "100"},
			func(c *config) any { return c.rates[OffCPUProfile] }, 100},
		{"off-CPU duty cycle default", nil,
			func(c *config) any { return c.rates[OffCPUProfile] }, 10},
		{"CPU duty cycle", map[string]string{"PPROFOTEL_CPU_DUTY_CYCLE": "50", "PPROFOTEL_WINDOW": "10s"},
			func(c *config) any { return c.cpuDuration }, 5 * time.Second},
		{"CPU duty cycle continuous", map[string]string{"PPROFOTEL_CPU_DUTY_CYCLE": "100"},
			func(c *config) any { return c.cpuDuration }, time.Minute},
		{"CPU duty cycle never under 100ms", map[string]string{"PPROFOTEL_CPU_DUTY_CYCLE": "1", "PPROFOTEL_WINDOW": "2s"},
			func(c *config) any { return c.cpuDuration }, 100 * time.Millisecond},
		{"CPU duty cycle over 100", map[string]string{"PPROFOTEL_CPU_DUTY_CYCLE": "101"},
			func(c *config) any { return c.cpuDuration }, 10200 * time.Millisecond},
		{"goroutine-leak interval default", nil,
			func(c *config) any { return c.intervals[GoroutineLeakProfile] }, 5 * time.Minute},
		{"goroutine-leak interval", map[string]string{"PPROFOTEL_GOROUTINELEAK_INTERVAL": "90s"},
			func(c *config) any { return c.intervals[GoroutineLeakProfile] }, 90 * time.Second},
		{"offcpu not linked in", map[string]string{"PPROFOTEL_PROFILES": "offcpu,cpu"},
			func(c *config) any { return c.profileTypes }, []ProfileType{CPUProfile}},
		{"sdk enabled", map[string]string{"OTEL_SDK_DISABLED": "false", "PPROFOTEL_ENABLED": "TRUE"},
			func(c *config) any { return c.disabled }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustConfig(t, nil, tt.env)
			if got := tt.got(c); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestExporterFromEnvironment checks the choice of exporter, as
// autoexport makes it for the other signals.
func TestExporterFromEnvironment(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		want     Exporter
		warnings []string
	}{
		{"default", nil, &otlpprofilehttp.Exporter{}, nil},
		{"none", map[string]string{"OTEL_PROFILES_EXPORTER": "none"}, envNone, nil},
		{"any case", map[string]string{"OTEL_PROFILES_EXPORTER": "NONE"}, envNone, nil},
		{"PPROFOTEL_EXPORTER is not read", map[string]string{"PPROFOTEL_EXPORTER": "none"}, &otlpprofilehttp.Exporter{}, nil},
		{"SPLUNK_PROFILER_ENABLED is not read", map[string]string{"SPLUNK_PROFILER_ENABLED": "true"}, &otlpprofilehttp.Exporter{}, nil},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, &otlpprofilegrpc.Exporter{}, nil},
		{"per-signal protocol wins", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL": "http/json"},
			&otlpprofilehttp.Exporter{}, nil},
		{"unknown exporter", map[string]string{"OTEL_PROFILES_EXPORTER": "stdout"}, &otlpprofilehttp.Exporter{},
			[]string{`OTEL_PROFILES_EXPORTER="stdout"`}},
		{"unknown protocol", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http"}, &otlpprofilehttp.Exporter{},
			[]string{`OTEL_EXPORTER_OTLP_PROTOCOL="http"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustConfig(t, nil, tt.env)
			if reflect.TypeOf(c.exporter) != reflect.TypeOf(tt.want) || !c.fromEnv {
				t.Errorf("exporter %T (from the environment: %v), want %T", c.exporter, c.fromEnv, tt.want)
			}
			if len(c.warnings) != len(tt.warnings) {
				t.Fatalf("warnings %q, want %d", c.warnings, len(tt.warnings))
			}
			for i, w := range tt.warnings {
				if !strings.Contains(c.warnings[i].Error(), w) {
					t.Errorf("warning %q does not name %s", c.warnings[i], w)
				}
			}
		})
	}
}

// defaultsExporter asks for collection defaults, as Splunk's does.
type defaultsExporter struct {
	noneExporter
	profiles []string
	window   time.Duration
}

func (e defaultsExporter) CollectionDefaults() ([]string, time.Duration) { return e.profiles, e.window }

// TestExporterCollectionDefaults checks that an exporter's defaults apply
// where neither an option nor a variable decides.
func TestExporterCollectionDefaults(t *testing.T) {
	exp := defaultsExporter{profiles: []string{"cpu", "heap"}, window: 10 * time.Second}
	tests := []struct {
		name       string
		opts       []Option
		env        map[string]string
		wantTypes  []ProfileType
		wantWindow time.Duration
	}{
		{"the exporter's", nil, nil, []ProfileType{CPUProfile, HeapProfile}, 10 * time.Second},
		{"options win", []Option{WithProfileTypes(GoroutineProfile), WithWindow(time.Minute)}, nil,
			[]ProfileType{GoroutineProfile}, time.Minute},
		{"variables win", nil, map[string]string{"PPROFOTEL_PROFILES": "mutex", "PPROFOTEL_WINDOW": "30s"},
			[]ProfileType{MutexProfile}, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustConfig(t, append([]Option{WithExporter(exp)}, tt.opts...), tt.env)
			if !reflect.DeepEqual(c.profileTypes, tt.wantTypes) || c.window != tt.wantWindow {
				t.Errorf("types %v, window %v; want %v, %v", c.profileTypes, c.window, tt.wantTypes, tt.wantWindow)
			}
		})
	}
}

func TestNewConfigOptionErrors(t *testing.T) {
	tests := []struct {
		opt  Option
		want string
	}{
		{WithWindow(-time.Second), "profiler: WithWindow(-1s): window must be at least 1s"},
		{WithWindow(0), "profiler: WithWindow(0s): window must be at least 1s"},
		{WithWindow(1), "profiler: WithWindow(1ns): window must be at least 1s"},
		{WithWindow(999 * time.Millisecond), "profiler: WithWindow(999ms): window must be at least 1s"},
		{WithProfileTypes(), "profiler: WithProfileTypes(): at least one profile type is required"},
		{WithProfileTypes(CPUProfile, ProfileType(42)), "profiler: WithProfileTypes(ProfileType(42)): unknown profile type"},
		{WithMutexProfileFraction(0), "profiler: WithMutexProfileFraction(0): fraction must be positive"},
		{WithMutexProfileFraction(-3), "profiler: WithMutexProfileFraction(-3): fraction must be positive"},
		{WithBlockProfileRate(-1), "profiler: WithBlockProfileRate(-1): rate must be positive"},
		{WithGoroutineLeakInterval(0), "profiler: WithGoroutineLeakInterval(0s): interval must be positive"},
		{WithOffCPUDutyCycle(0), "profiler: WithOffCPUDutyCycle(0): duty cycle must be a percentage from 1 to 100"},
		{WithOffCPUDutyCycle(101), "profiler: WithOffCPUDutyCycle(101): duty cycle must be a percentage from 1 to 100"},
		{WithCPUDutyCycle(0), "profiler: WithCPUDutyCycle(0): duty cycle must be a percentage from 1 to 100"},
		{WithCPUDutyCycle(101), "profiler: WithCPUDutyCycle(101): duty cycle must be a percentage from 1 to 100"},
		{WithExporter(nil), "profiler: WithExporter(nil): exporter must not be nil"},
		{WithServiceName(" "), `profiler: WithServiceName(" "): service name must not be empty`},
		{WithMaxGoroutines(-1), "profiler: WithMaxGoroutines(-1): must not be negative (0 sets no limit)"},
		{WithQueueLimits(0, 1), "profiler: WithQueueLimits(0, 1): both limits must be positive"},
		{WithLogger(nil), "profiler: WithLogger(nil): logger must not be nil"},
		{WithStopTimeout(0), "profiler: WithStopTimeout(0s): timeout must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := newConfig([]Option{tt.opt}, envOf(nil))
			if err == nil {
				t.Fatal("newConfig succeeded, want an error")
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error = %q, want prefix %q", err, tt.want)
			}
		})
	}
}

func TestNewConfigReportsEveryError(t *testing.T) {
	_, err := newConfig(
		[]Option{WithWindow(-time.Second), WithCPUDutyCycle(0)},
		envOf(map[string]string{"PPROFOTEL_EXPORTER": "x", "PPROFOTEL_CPU_DUTY_CYCLE": "y"}),
	)
	if err == nil {
		t.Fatal("newConfig succeeded, want an error")
	}
	for _, want := range []string{"WithWindow(-1s)", "WithCPUDutyCycle(0)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	// Variables are warnings, never errors.
	for _, notWant := range []string{"PPROFOTEL_EXPORTER", "PPROFOTEL_CPU_DUTY_CYCLE"} {
		if strings.Contains(err.Error(), notWant) {
			t.Errorf("error %q mentions %s", err, notWant)
		}
	}
}

func TestOptionsWinOverEnv(t *testing.T) {
	env := map[string]string{
		"PPROFOTEL_WINDOW":                 "5s",
		"PPROFOTEL_PROFILES":               "cpu",
		"PPROFOTEL_MUTEX_PROFILE_FRACTION": "3",
		"PPROFOTEL_BLOCK_PROFILE_RATE":     "3",
		"PPROFOTEL_CPU_DUTY_CYCLE":         "3",
		"PPROFOTEL_EXPORTER":               "otlp",

		"PPROFOTEL_GOROUTINELEAK_INTERVAL": "1m",
	}
	c := mustConfig(t, []Option{
		WithWindow(10 * time.Second),
		WithProfileTypes(BlockProfile, HeapProfile, BlockProfile),
		WithMutexProfileFraction(100),
		WithBlockProfileRate(1000000),
		WithCPUDutyCycle(50),
		WithExporter(noneExporter{}),
		WithGoroutineLeakInterval(time.Hour),
	}, env)
	got := []any{c.window, c.profileTypes, c.rates[MutexProfile], c.rates[BlockProfile], c.cpuDuration, c.exporter, c.fromEnv,
		c.intervals[GoroutineLeakProfile]}
	want := []any{10 * time.Second, []ProfileType{HeapProfile, BlockProfile}, 100, 1000000, 5 * time.Second, Exporter(noneExporter{}), false,
		time.Hour}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}

	// An option shadows the variable, so a bad value of it does no harm.
	mustConfig(t, []Option{WithWindow(time.Second)}, map[string]string{"PPROFOTEL_WINDOW": "abc"})
}

func TestDisabled(t *testing.T) {
	tests := []struct {
		name         string
		env          map[string]string
		wantDisabled bool
		wantErr      string
	}{
		{"OTEL_SDK_DISABLED=true", map[string]string{"OTEL_SDK_DISABLED": "true"}, true, ""},
		{"OTEL_SDK_DISABLED=TRUE", map[string]string{"OTEL_SDK_DISABLED": "TRUE"}, true, ""},
		{"PPROFOTEL_ENABLED=false", map[string]string{"PPROFOTEL_ENABLED": "False"}, true, ""},
		{"PPROFOTEL_ENABLED=true", map[string]string{"PPROFOTEL_ENABLED": "true"}, false, ""},
		{"OTEL_SDK_DISABLED=false", map[string]string{"OTEL_SDK_DISABLED": "false"}, false, ""},
		{"either switch disables", map[string]string{"OTEL_SDK_DISABLED": "true", "PPROFOTEL_ENABLED": "true"}, true, ""},
		{"disabled ignores bad values", map[string]string{
			"PPROFOTEL_ENABLED": "false", "PPROFOTEL_WINDOW": "abc", "OTEL_PROFILES_EXPORTER": "x",
		}, true, ""},
		{"a valid off wins over an invalid switch", map[string]string{
			"PPROFOTEL_ENABLED": "false", "OTEL_SDK_DISABLED": "sometimes",
		}, true, ""},
		{"an invalid OTEL_SDK_DISABLED reads as false", map[string]string{"OTEL_SDK_DISABLED": "1"}, false, ""},
		{"an invalid PPROFOTEL_ENABLED leaves profiling on", map[string]string{"PPROFOTEL_ENABLED": "off"}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := newConfig(nil, envOf(tt.env))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("newConfig: %v", err)
			}
			if c.disabled != tt.wantDisabled {
				t.Errorf("disabled = %v, want %v", c.disabled, tt.wantDisabled)
			}
			if c.logger == nil {
				t.Error("logger is nil")
			}
		})
	}

	// Bad options do not fail a disabled profiler either, and the logger is
	// still the application's.
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, nil))
	c, err := newConfig([]Option{WithWindow(-1), WithLogger(l)}, envOf(map[string]string{"OTEL_SDK_DISABLED": "true"}))
	if err != nil || !c.disabled || c.logger != l {
		t.Errorf("newConfig = %+v, %v; want disabled with the given logger and no error", c, err)
	}
}

func TestDefaultLoggerIsQuiet(t *testing.T) {
	// The default logger wraps slog.Default(), whose level is Info unless the
	// application changed it; tests do not change it, as other tests may log.
	c := mustConfig(t, nil, nil)
	ctx := context.Background()
	// Info records pass only for Start's line: TestDefaultLoggerShowsNoProgress.
	if c.logger.Enabled(ctx, slog.LevelDebug) {
		t.Error("default logger passes Debug")
	}
	if slog.Default().Enabled(ctx, slog.LevelWarn) && !c.logger.Enabled(ctx, slog.LevelWarn) {
		t.Error("default logger drops warnings")
	}
}

func TestMinLevelHandler(t *testing.T) {
	var buf bytes.Buffer
	next := slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})
	l := slog.New(minLevelHandler{min: slog.LevelWarn, next: next}).With("component", "test").WithGroup("g")
	l.Info("progress")
	l.Debug("detail")
	l.Warn("trouble", "n", 1)
	l.Error("failure")
	out := buf.String()
	if strings.Contains(out, "progress") || strings.Contains(out, "detail") {
		t.Errorf("Info or Debug got through:\n%s", out)
	}
	for _, want := range []string{"msg=trouble component=test g.n=1", "msg=failure component=test"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestRegisteredExporterFromEnvironment chooses the file exporter by name,
// which this test binary links: built from its own variables when it can
// be, and, when its package cannot build it (no directory it can create),
// warned about with the OTLP exporter in its place, since the environment
// never stops the profiler.
func TestRegisteredExporterFromEnvironment(t *testing.T) {
	t.Setenv("PPROFOTEL_FILE_DIR", t.TempDir())
	c := mustConfig(t, nil, map[string]string{"OTEL_PROFILES_EXPORTER": "file"})
	if _, ok := c.exporter.(*otlpprofilefile.Exporter); !ok || len(c.warnings) != 0 {
		t.Errorf("exporter %T, warnings %q; want the file exporter and none", c.exporter, c.warnings)
	}

	t.Setenv("PPROFOTEL_FILE_DIR", "")
	t.Setenv("TMPDIR", "/proc/self/no-such-dir") // its default directory cannot be made either
	c = mustConfig(t, nil, map[string]string{"OTEL_PROFILES_EXPORTER": "file"})
	if _, ok := c.exporter.(*otlpprofilehttp.Exporter); !ok {
		t.Errorf("exporter %T, want the OTLP one in place of a file exporter that cannot be built", c.exporter)
	}
	if len(c.warnings) != 1 || !strings.Contains(c.warnings[0].Error(), `OTEL_PROFILES_EXPORTER="file": exporter "file" cannot be built`) {
		t.Errorf("warnings %q, want one naming the variable and why", c.warnings)
	}
}
