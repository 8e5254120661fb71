package profiler

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/export"
	"github.com/pprofotel/profiler/internal/testcert"
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
	return c
}

func TestNewConfigDefaults(t *testing.T) {
	c := mustConfig(t, nil, nil)
	if c.disabled {
		t.Error("disabled = true, want false")
	}
	if c.period != 60*time.Second {
		t.Errorf("period = %v, want 60s", c.period)
	}
	if want := []ProfileType{CPUProfile, HeapProfile, GoroutineProfile}; !reflect.DeepEqual(c.profileTypes, want) {
		t.Errorf("profileTypes = %v, want %v", c.profileTypes, want)
	}
	if c.rates[MutexProfile] != 10 || c.rates[BlockProfile] != 10000 {
		t.Errorf("mutexFraction, blockRate = %d, %d, want 10, 10000", c.rates[MutexProfile], c.rates[BlockProfile])
	}
	if c.exporter != ExporterOTLP {
		t.Errorf("exporter = %q, want otlp", c.exporter)
	}
	wantFile := export.FileConfig{Dir: filepath.Join(os.TempDir(), "pprofotel-profiles"), MaxFiles: 1000, MaxBytes: 1 << 30}
	if !reflect.DeepEqual(c.file, wantFile) {
		t.Errorf("file = %+v, want %+v", c.file, wantFile)
	}
	wantOTLP := export.OTLPConfig{
		Protocol:    "http/protobuf",
		Endpoint:    "http://localhost:4318/v1development/profiles",
		Insecure:    true,
		Timeout:     10 * time.Second,
		Compression: "none",
		UserAgent:   "pprofotel-go/0.1.0",
	}
	if !reflect.DeepEqual(c.otlp, wantOTLP) {
		t.Errorf("otlp = %+v\nwant   %+v", c.otlp, wantOTLP)
	}
	wantRetry := export.RetryConfig{Enabled: true, InitialInterval: 5 * time.Second, MaxInterval: 30 * time.Second, MaxElapsedTime: time.Minute}
	if c.retry != wantRetry {
		t.Errorf("retry = %+v, want %+v", c.retry, wantRetry)
	}
	if c.resource == nil || c.resource.Len() == 0 {
		t.Error("resource is empty")
	}
	if c.logger == nil {
		t.Fatal("logger is nil")
	}
	ctx := context.Background()
	if c.logger.Enabled(ctx, slog.LevelInfo) {
		t.Error("default logger passes Info; it must be quiet")
	}
}

func TestNewConfigEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		got  func(*config) any
		want any
	}{
		{"period", map[string]string{"PPROFOTEL_PERIOD": "15s"},
			func(c *config) any { return c.period }, 15 * time.Second},
		{"period blanks", map[string]string{"PPROFOTEL_PERIOD": " 2m "},
			func(c *config) any { return c.period }, 2 * time.Minute},
		{"blank value is unset", map[string]string{"PPROFOTEL_PERIOD": "   "},
			func(c *config) any { return c.period }, 60 * time.Second},
		{"profiles", map[string]string{"PPROFOTEL_PROFILES": "block, cpu,MUTEX , cpu"},
			func(c *config) any { return c.profileTypes }, []ProfileType{CPUProfile, MutexProfile, BlockProfile}},
		{"profiles trailing comma", map[string]string{"PPROFOTEL_PROFILES": "goroutine,"},
			func(c *config) any { return c.profileTypes }, []ProfileType{GoroutineProfile}},
		{"mutex fraction", map[string]string{"PPROFOTEL_MUTEX_FRACTION": "5"},
			func(c *config) any { return c.rates[MutexProfile] }, 5},
		{"block rate", map[string]string{"PPROFOTEL_BLOCK_RATE": "1"},
			func(c *config) any { return c.rates[BlockProfile] }, 1},
		{"off-CPU duty cycle", map[string]string{"PPROFOTEL_OFFCPU_DUTY": "100"},
			func(c *config) any { return c.rates[OffCPUProfile] }, 100},
		{"off-CPU duty cycle default", nil,
			func(c *config) any { return c.rates[OffCPUProfile] }, 10},
		{"goroutine-leak interval default", nil,
			func(c *config) any { return c.intervals[GoroutineLeakProfile] }, 5 * time.Minute},
		{"goroutine-leak interval", map[string]string{"PPROFOTEL_GOROUTINELEAK_INTERVAL": "90s"},
			func(c *config) any { return c.intervals[GoroutineLeakProfile] }, 90 * time.Second},
		{"offcpu not linked in", map[string]string{"PPROFOTEL_PROFILES": "offcpu,cpu"},
			func(c *config) any { return c.profileTypes }, []ProfileType{CPUProfile}},
		{"exporter file", map[string]string{"PPROFOTEL_EXPORTER": "file"},
			func(c *config) any { return c.exporter }, ExporterFile},
		{"exporter none", map[string]string{"PPROFOTEL_EXPORTER": "NONE"},
			func(c *config) any { return c.exporter }, ExporterNone},
		{"file dir", map[string]string{"PPROFOTEL_FILE_DIR": "/var/tmp/prof"},
			func(c *config) any { return c.file.Dir }, "/var/tmp/prof"},
		{"file format json", map[string]string{"PPROFOTEL_FILE_FORMAT": "json"},
			func(c *config) any { return c.file.JSON }, true},
		{"file format proto", map[string]string{"PPROFOTEL_FILE_FORMAT": "Proto"},
			func(c *config) any { return c.file.JSON }, false},
		{"file max files", map[string]string{"PPROFOTEL_FILE_MAX_FILES": "50"},
			func(c *config) any { return [2]int64{int64(c.file.MaxFiles), c.file.MaxBytes} }, [2]int64{50, 1 << 30}},
		{"file max bytes", map[string]string{"PPROFOTEL_FILE_MAX_BYTES": "1048576"},
			func(c *config) any { return [2]int64{int64(c.file.MaxFiles), c.file.MaxBytes} }, [2]int64{1000, 1 << 20}},
		{"file retention off", map[string]string{"PPROFOTEL_FILE_MAX_FILES": "0", "PPROFOTEL_FILE_MAX_BYTES": "0"},
			func(c *config) any { return [2]int64{int64(c.file.MaxFiles), c.file.MaxBytes} }, [2]int64{0, 0}},
		{"protocol grpc", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			func(c *config) any { return [2]string{c.otlp.Protocol, c.otlp.Endpoint} }, [2]string{"grpc", "localhost:4317"}},
		{"protocol http/json", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
			func(c *config) any { return c.otlp.Protocol }, "http/json"},
		{"headers", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "api-key=s3cr%3Dt, x-tenant = a%20b ,"},
			func(c *config) any { return c.otlp.Headers }, map[string]string{"api-key": "s3cr=t", "x-tenant": "a b"}},
		{"timeout", map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "2500"},
			func(c *config) any { return c.otlp.Timeout }, 2500 * time.Millisecond},
		{"compression", map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"},
			func(c *config) any { return c.otlp.Compression }, "gzip"},
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

func TestNewConfigOptionErrors(t *testing.T) {
	tests := []struct {
		opt  Option
		want string
	}{
		{WithPeriod(-time.Second), "profiler: WithPeriod(-1s): period must be at least 1s"},
		{WithPeriod(0), "profiler: WithPeriod(0s): period must be at least 1s"},
		{WithPeriod(1), "profiler: WithPeriod(1ns): period must be at least 1s"},
		{WithPeriod(999 * time.Millisecond), "profiler: WithPeriod(999ms): period must be at least 1s"},
		{WithProfileTypes(), "profiler: WithProfileTypes(): at least one profile type is required"},
		{WithProfileTypes(CPUProfile, ProfileType(42)), "profiler: WithProfileTypes(ProfileType(42)): unknown profile type"},
		{WithMutexProfileFraction(0), "profiler: WithMutexProfileFraction(0): fraction must be positive"},
		{WithMutexProfileFraction(-3), "profiler: WithMutexProfileFraction(-3): fraction must be positive"},
		{WithBlockProfileRate(-1), "profiler: WithBlockProfileRate(-1): rate must be positive"},
		{WithGoroutineLeakInterval(0), "profiler: WithGoroutineLeakInterval(0s): interval must be positive"},
		{WithOffCPUDutyCycle(0), "profiler: WithOffCPUDutyCycle(0): duty cycle must be a percentage from 1 to 100"},
		{WithOffCPUDutyCycle(101), "profiler: WithOffCPUDutyCycle(101): duty cycle must be a percentage from 1 to 100"},
		{WithExporter("stdout"), `profiler: WithExporter("stdout"): exporter must be "otlp", "file", "none" or "splunk"`},
		{WithFileDir(""), `profiler: WithFileDir(""): directory must not be empty`},
		{WithFileRetention(-1, 0), "profiler: WithFileRetention(-1, 0): bounds must not be negative (0: no bound)"},
		{WithFileRetention(10, -1), "profiler: WithFileRetention(10, -1): bounds must not be negative (0: no bound)"},
		{WithServiceName(" "), `profiler: WithServiceName(" "): service name must not be empty`},
		{WithProtocol("HTTP"), `profiler: WithProtocol("HTTP"): protocol must be "grpc", "http/protobuf" or "http/json"`},
		{WithCompression("br"), `profiler: WithCompression("br"): compression must be "gzip" or "none"`},
		{WithTimeout(-time.Millisecond), "profiler: WithTimeout(-1ms): timeout must be positive"},
		{WithEndpoint("http://collector:4317"), `profiler: WithEndpoint("http://collector:4317"): endpoint must be host:port without a scheme; use WithEndpointURL for a URL`},
		{WithEndpoint("collector"), `profiler: WithEndpoint("collector"): endpoint must be host:port`},
		{WithEndpoint(":4317"), `profiler: WithEndpoint(":4317"): endpoint must name a host`},
		{WithEndpoint("collector:0"), `profiler: WithEndpoint("collector:0"): endpoint port must be a number from 1 to 65535`},
		{WithEndpointURL("collector:4318"), `profiler: WithEndpointURL("collector:4318"): endpoint URL scheme must be http or https`},
		{WithEndpointURL("https://"), `profiler: WithEndpointURL("https://"): endpoint URL must name a host`},
		{WithEndpointURL("http://a b/"), `profiler: WithEndpointURL("http://a b/"): parse`},
		{WithHeaders(map[string]string{"": "v"}), `profiler: WithHeaders(map["":…]): otlp header name must not be empty`},
		{WithLogger(nil), "profiler: WithLogger(nil): logger must not be nil"},
		{WithTLSClientConfig(nil), "profiler: WithTLSClientConfig(nil): TLS configuration must not be nil"},
		{WithRetry(RetryConfig{Enabled: true, InitialInterval: -time.Second}),
			"profiler: WithRetry({Enabled:true InitialInterval:-1s MaxInterval:0s MaxElapsedTime:0s}): intervals and elapsed time must not be negative"},
		{WithRetry(RetryConfig{MaxElapsedTime: -1}),
			"profiler: WithRetry({Enabled:false InitialInterval:0s MaxInterval:0s MaxElapsedTime:-1ns}): intervals and elapsed time must not be negative"},
		{WithRetry(RetryConfig{Enabled: true, InitialInterval: 2 * time.Second, MaxInterval: time.Second}),
			"profiler: WithRetry({Enabled:true InitialInterval:2s MaxInterval:1s MaxElapsedTime:0s}): MaxInterval must not be less than InitialInterval"},
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
		[]Option{WithPeriod(-time.Second), WithTimeout(0)},
		envOf(map[string]string{"PPROFOTEL_EXPORTER": "x", "OTEL_EXPORTER_OTLP_TIMEOUT": "y"}),
	)
	if err == nil {
		t.Fatal("newConfig succeeded, want an error")
	}
	for _, want := range []string{"WithPeriod(-1s)", "WithTimeout(0s)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	// Variables are warnings, never errors.
	for _, notWant := range []string{"PPROFOTEL_EXPORTER", "OTEL_EXPORTER_OTLP_TIMEOUT"} {
		if strings.Contains(err.Error(), notWant) {
			t.Errorf("error %q mentions %s", err, notWant)
		}
	}
}

func TestOptionsWinOverEnv(t *testing.T) {
	env := map[string]string{
		"PPROFOTEL_PERIOD":         "5s",
		"PPROFOTEL_PROFILES":       "cpu",
		"PPROFOTEL_MUTEX_FRACTION": "3",
		"PPROFOTEL_BLOCK_RATE":     "3",
		"PPROFOTEL_EXPORTER":       "none",
		"PPROFOTEL_FILE_DIR":       "/from/env",
		"PPROFOTEL_FILE_FORMAT":    "json",
		"PPROFOTEL_FILE_MAX_FILES": "5",
		"PPROFOTEL_FILE_MAX_BYTES": "6",

		"PPROFOTEL_GOROUTINELEAK_INTERVAL": "1m",
	}
	c := mustConfig(t, []Option{
		WithPeriod(7 * time.Second),
		WithProfileTypes(BlockProfile, HeapProfile, BlockProfile),
		WithMutexProfileFraction(100),
		WithBlockProfileRate(1000000),
		WithExporter(ExporterFile),
		WithFileDir("/from/code"),
		WithFileJSON(false),
		WithFileRetention(7, 0),
		WithGoroutineLeakInterval(time.Hour),
	}, env)
	got := []any{c.period, c.profileTypes, c.rates[MutexProfile], c.rates[BlockProfile], c.exporter, c.file,
		c.intervals[GoroutineLeakProfile]}
	want := []any{7 * time.Second, []ProfileType{HeapProfile, BlockProfile}, 100, 1000000, ExporterFile,
		export.FileConfig{Dir: "/from/code", JSON: false, MaxFiles: 7, MaxBytes: 0}, time.Hour}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}

	// An option shadows the variable, so a bad value of it does no harm.
	mustConfig(t, []Option{WithPeriod(time.Second)}, map[string]string{"PPROFOTEL_PERIOD": "abc"})
}

// TestOTLPPrecedence checks, for every OTLP setting, that an option wins over
// the per-signal variable, which wins over the generic one, which wins over
// the default.
func TestOTLPPrecedence(t *testing.T) {
	// Each layer of the certificate setting trusts another authority.
	caSignal, caGeneric := testcert.New(t), testcert.New(t)
	whichRoots := func(c export.OTLPConfig) any {
		switch {
		case c.TLS == nil:
			return "system"
		case c.TLS.ServerName == "from-option":
			return "option"
		case c.TLS.RootCAs.Equal(caSignal.Roots):
			return "per-signal"
		case c.TLS.RootCAs.Equal(caGeneric.Roots):
			return "generic"
		}
		return "unknown roots"
	}
	type layers struct {
		opt                Option
		perSignal, generic string
	}
	settings := []struct {
		name  string
		suf   string // variable suffix
		l     layers
		base  map[string]string // variables needed to make the setting matter
		opts  []Option
		got   func(export.OTLPConfig) any
		wants [4]any // option, per-signal, generic, default
	}{
		{
			name: "endpoint http", suf: "ENDPOINT",
			l:   layers{WithEndpointURL("http://opt:1/p"), "http://signal:2/s", "http://generic:3"},
			got: func(c export.OTLPConfig) any { return c.Endpoint },
			wants: [4]any{"http://opt:1/p", "http://signal:2/s", "http://generic:3/v1development/profiles",
				"http://localhost:4318/v1development/profiles"},
		},
		{
			name: "endpoint grpc", suf: "ENDPOINT",
			l:     layers{WithEndpoint("opt:1"), "signal:2", "http://generic:3"},
			opts:  []Option{WithProtocol(ProtocolGRPC)},
			got:   func(c export.OTLPConfig) any { return c.Endpoint },
			wants: [4]any{"opt:1", "signal:2", "generic:3", "localhost:4317"},
		},
		{
			name: "headers", suf: "HEADERS",
			l:   layers{WithHeaders(map[string]string{"o": "1"}), "s=2", "g=3"},
			got: func(c export.OTLPConfig) any { return c.Headers },
			wants: [4]any{map[string]string{"o": "1"}, map[string]string{"s": "2"}, map[string]string{"g": "3"},
				map[string]string(nil)},
		},
		{
			name: "timeout", suf: "TIMEOUT",
			l:     layers{WithTimeout(time.Second), "2000", "3000"},
			got:   func(c export.OTLPConfig) any { return c.Timeout },
			wants: [4]any{time.Second, 2 * time.Second, 3 * time.Second, 10 * time.Second},
		},
		{
			name: "compression", suf: "COMPRESSION",
			l:     layers{WithCompression(GzipCompression), "none", "gzip"},
			got:   func(c export.OTLPConfig) any { return c.Compression },
			wants: [4]any{"gzip", "none", "gzip", "none"},
		},
		{
			name: "protocol", suf: "PROTOCOL",
			l:     layers{WithProtocol(ProtocolHTTPJSON), "grpc", "http/json"},
			got:   func(c export.OTLPConfig) any { return c.Protocol },
			wants: [4]any{"http/json", "grpc", "http/json", "http/protobuf"},
		},
		{
			name: "certificate", suf: "CERTIFICATE",
			l:     layers{WithTLSClientConfig(&tls.Config{ServerName: "from-option"}), caSignal.CAFile, caGeneric.CAFile},
			got:   whichRoots,
			wants: [4]any{"option", "per-signal", "generic", "system"},
		},
		{
			// INSECURE decides only for a host:port endpoint.
			name: "insecure", suf: "INSECURE",
			l:     layers{WithInsecure(), "true", "false"},
			base:  map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317"},
			got:   func(c export.OTLPConfig) any { return c.Insecure },
			wants: [4]any{true, true, false, false},
		},
		{
			name: "insecure per-signal false", suf: "INSECURE",
			l:     layers{WithInsecure(), "false", "true"},
			base:  map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317"},
			got:   func(c export.OTLPConfig) any { return c.Insecure },
			wants: [4]any{true, false, true, false},
		},
	}
	for _, s := range settings {
		for level, label := range []string{"option", "per-signal", "generic", "default"} {
			t.Run(s.name+"/"+label, func(t *testing.T) {
				env := map[string]string{}
				for k, v := range s.base {
					env[k] = v
				}
				opts := append([]Option(nil), s.opts...)
				if level <= 0 {
					opts = append(opts, s.l.opt)
				}
				if level <= 1 {
					env["OTEL_EXPORTER_OTLP_PROFILES_"+s.suf] = s.l.perSignal
				}
				if level <= 2 {
					env["OTEL_EXPORTER_OTLP_"+s.suf] = s.l.generic
				}
				c := mustConfig(t, opts, env)
				if got := s.got(c.otlp); !reflect.DeepEqual(got, s.wants[level]) {
					t.Errorf("got %v, want %v", got, s.wants[level])
				}
			})
		}
	}
}

func TestHTTPEndpoint(t *testing.T) {
	tests := []struct {
		name         string
		opts         []Option
		env          map[string]string
		wantEndpoint string
		wantInsecure bool
	}{
		{"generic base without path", nil,
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector:4318"},
			"https://collector:4318/v1development/profiles", false},
		{"generic base with root path", nil,
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"},
			"http://collector:4318/v1development/profiles", true},
		{"generic base with path", nil,
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/otlp"},
			"http://collector:4318/otlp/v1development/profiles", true},
		{"generic base with path and trailing slash", nil,
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/otlp/"},
			"http://collector:4318/otlp/v1development/profiles", true},
		{"generic base without port", nil,
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector.example.com"},
			"https://collector.example.com/v1development/profiles", false},
		{"per-signal used as-is", nil,
			map[string]string{"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT": "https://collector:4318/custom/profiles"},
			"https://collector:4318/custom/profiles", false},
		{"per-signal without path used as-is", nil,
			map[string]string{"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT": "http://collector:4318"},
			"http://collector:4318", true},
		{"WithEndpoint is TLS by default", []Option{WithEndpoint("collector:4318")}, nil,
			"https://collector:4318/v1development/profiles", false},
		{"WithEndpoint and WithInsecure", []Option{WithEndpoint("collector:4318"), WithInsecure()}, nil,
			"http://collector:4318/v1development/profiles", true},
		{"WithEndpoint and INSECURE", []Option{WithEndpoint("[::1]:4318")},
			map[string]string{"OTEL_EXPORTER_OTLP_INSECURE": "true"},
			"http://[::1]:4318/v1development/profiles", true},
		{"WithEndpointURL as-is", []Option{WithEndpointURL("https://collector/a/b?x=1")}, nil,
			"https://collector/a/b?x=1", false},
		{"last endpoint option wins", []Option{WithEndpointURL("https://first:1/"), WithEndpoint("second:2")}, nil,
			"https://second:2/v1development/profiles", false},
		{"WithInsecure does not override a URL from the environment", []Option{WithInsecure()},
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector:4318"},
			"https://collector:4318/v1development/profiles", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustConfig(t, tt.opts, tt.env)
			if c.otlp.Endpoint != tt.wantEndpoint || c.otlp.Insecure != tt.wantInsecure {
				t.Errorf("endpoint, insecure = %q, %v, want %q, %v",
					c.otlp.Endpoint, c.otlp.Insecure, tt.wantEndpoint, tt.wantInsecure)
			}
		})
	}
}

func TestGRPCEndpoint(t *testing.T) {
	grpc := WithProtocol(ProtocolGRPC)
	tests := []struct {
		name         string
		opts         []Option
		env          map[string]string
		wantEndpoint string
		wantInsecure bool
	}{
		{"default", []Option{grpc}, nil, "localhost:4317", true},
		{"http scheme is plaintext", []Option{grpc},
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317/ignored/path"},
			"collector:4317", true},
		{"https scheme is TLS", []Option{grpc},
			map[string]string{"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT": "https://collector:4317"},
			"collector:4317", false},
		{"https scheme wins over INSECURE", []Option{grpc},
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector:4317", "OTEL_EXPORTER_OTLP_INSECURE": "true"},
			"collector:4317", false},
		{"https without port", []Option{grpc},
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector.example.com"},
			"collector.example.com:443", false},
		{"http without port, IPv6", []Option{grpc},
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://[::1]"},
			"[::1]:80", true},
		{"scheme-less is TLS by default", []Option{grpc},
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317"},
			"collector:4317", false},
		{"scheme-less with INSECURE", []Option{grpc},
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317", "OTEL_EXPORTER_OTLP_INSECURE": "TRUE"},
			"collector:4317", true},
		{"protocol from per-signal variable", nil,
			map[string]string{"OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317"},
			"collector:4317", false},
		{"WithEndpointURL http", []Option{grpc, WithEndpointURL("http://collector:4317/x")}, nil,
			"collector:4317", true},
		{"WithEndpoint with WithInsecure", []Option{grpc, WithEndpoint("collector:4317"), WithInsecure()}, nil,
			"collector:4317", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustConfig(t, tt.opts, tt.env)
			if c.otlp.Protocol != "grpc" {
				t.Fatalf("protocol = %q, want grpc", c.otlp.Protocol)
			}
			if c.otlp.Endpoint != tt.wantEndpoint || c.otlp.Insecure != tt.wantInsecure {
				t.Errorf("endpoint, insecure = %q, %v, want %q, %v",
					c.otlp.Endpoint, c.otlp.Insecure, tt.wantEndpoint, tt.wantInsecure)
			}
		})
	}
}

func TestWithInsecureConflictsWithHTTPSURL(t *testing.T) {
	_, err := newConfig([]Option{WithInsecure(), WithEndpointURL("https://collector:4318/v1development/profiles")}, envOf(nil))
	want := `profiler: WithInsecure() conflicts with WithEndpointURL("https://collector:4318/v1development/profiles")`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error = %v, want prefix %q", err, want)
	}
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
			"PPROFOTEL_ENABLED": "false", "PPROFOTEL_PERIOD": "abc", "OTEL_EXPORTER_OTLP_TIMEOUT": "x",
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
	c, err := newConfig([]Option{WithPeriod(-1), WithLogger(l)}, envOf(map[string]string{"OTEL_SDK_DISABLED": "true"}))
	if err != nil || !c.disabled || c.logger != l {
		t.Errorf("newConfig = %+v, %v; want disabled with the given logger and no error", c, err)
	}
}

func TestDefaultLoggerIsQuiet(t *testing.T) {
	// The default logger wraps slog.Default(), whose level is Info unless the
	// application changed it; tests do not change it, as other tests may log.
	c := mustConfig(t, nil, nil)
	ctx := context.Background()
	if c.logger.Enabled(ctx, slog.LevelInfo) || c.logger.Enabled(ctx, slog.LevelDebug) {
		t.Error("default logger passes Info or Debug")
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

// TestOTLPClientCertificateEnv checks that the client certificate and key
// are loaded from either form of their variables, each form resolved on its
// own.
func TestOTLPClientCertificateEnv(t *testing.T) {
	pki := testcert.New(t)
	tests := []struct {
		name string
		env  map[string]string
	}{
		{"generic", map[string]string{
			"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": pki.ClientCertFile,
			"OTEL_EXPORTER_OTLP_CLIENT_KEY":         pki.ClientKeyFile,
		}},
		{"per-signal", map[string]string{
			"OTEL_EXPORTER_OTLP_PROFILES_CLIENT_CERTIFICATE": pki.ClientCertFile,
			"OTEL_EXPORTER_OTLP_PROFILES_CLIENT_KEY":         pki.ClientKeyFile,
		}},
		{"per-signal shadows bad generic", map[string]string{
			"OTEL_EXPORTER_OTLP_PROFILES_CLIENT_CERTIFICATE": pki.ClientCertFile,
			"OTEL_EXPORTER_OTLP_PROFILES_CLIENT_KEY":         pki.ClientKeyFile,
			"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE":          "/nonexistent/cert.pem",
			"OTEL_EXPORTER_OTLP_CLIENT_KEY":                  "/nonexistent/key.pem",
		}},
		{"mixed forms", map[string]string{
			"OTEL_EXPORTER_OTLP_PROFILES_CLIENT_CERTIFICATE": pki.ClientCertFile,
			"OTEL_EXPORTER_OTLP_CLIENT_KEY":                  pki.ClientKeyFile,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustConfig(t, nil, tt.env)
			if c.otlp.TLS == nil || len(c.otlp.TLS.Certificates) != 1 {
				t.Fatalf("TLS = %+v, want one client certificate", c.otlp.TLS)
			}
			got := c.otlp.TLS.Certificates[0]
			if got.Leaf == nil || !bytes.Equal(got.Leaf.Raw, pki.Client.Leaf.Raw) {
				t.Errorf("client certificate is not the one in %s", pki.ClientCertFile)
			}
			if c.otlp.TLS.RootCAs != nil {
				t.Errorf("RootCAs set without a CERTIFICATE variable; want the system roots")
			}
		})
	}
}

func TestOTLPTLSEnvWarnings(t *testing.T) {
	pki := testcert.New(t)
	other := testcert.New(t)
	notPEM := filepath.Join(t.TempDir(), "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string
		want []string // each must be in a warning
	}{
		{"missing CA file", map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"},
			[]string{`profiler: OTEL_EXPORTER_OTLP_CERTIFICATE="/nonexistent/ca.pem": open /nonexistent/ca.pem: no such file or directory`}},
		{"CA file not PEM", map[string]string{"OTEL_EXPORTER_OTLP_PROFILES_CERTIFICATE": notPEM},
			[]string{`profiler: OTEL_EXPORTER_OTLP_PROFILES_CERTIFICATE="` + notPEM + `": the file holds no PEM certificate`}},
		{"CA file holds a key", map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": pki.ClientKeyFile},
			[]string{`OTEL_EXPORTER_OTLP_CERTIFICATE="` + pki.ClientKeyFile + `": the file holds no PEM certificate`}},
		{"certificate without key", map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": pki.ClientCertFile},
			[]string{`profiler: OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE="` + pki.ClientCertFile + `": a client certificate needs its private key in OTEL_EXPORTER_OTLP_CLIENT_KEY`}},
		{"key without certificate", map[string]string{"OTEL_EXPORTER_OTLP_PROFILES_CLIENT_KEY": pki.ClientKeyFile},
			[]string{`profiler: OTEL_EXPORTER_OTLP_PROFILES_CLIENT_KEY="` + pki.ClientKeyFile + `": a client key needs its certificate`}},
		{"missing key file", map[string]string{
			"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": pki.ClientCertFile,
			"OTEL_EXPORTER_OTLP_CLIENT_KEY":         "/nonexistent/key.pem",
		}, []string{`profiler: OTEL_EXPORTER_OTLP_CLIENT_KEY="/nonexistent/key.pem": open /nonexistent/key.pem`}},
		{"missing certificate and key files", map[string]string{
			"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/nonexistent/cert.pem",
			"OTEL_EXPORTER_OTLP_CLIENT_KEY":         "/nonexistent/key.pem",
		}, []string{`OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE="/nonexistent/cert.pem"`, `OTEL_EXPORTER_OTLP_CLIENT_KEY="/nonexistent/key.pem"`}},
		{"key of another certificate", map[string]string{
			"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": pki.ClientCertFile,
			"OTEL_EXPORTER_OTLP_CLIENT_KEY":         other.ClientKeyFile,
		}, []string{`profiler: OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE="` + pki.ClientCertFile + `" and OTEL_EXPORTER_OTLP_CLIENT_KEY="` + other.ClientKeyFile + `": tls: private key does not match public key`}},
		{"certificate file holds a key", map[string]string{
			"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": pki.ClientKeyFile,
			"OTEL_EXPORTER_OTLP_CLIENT_KEY":         pki.ClientKeyFile,
		}, []string{`OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE="` + pki.ClientKeyFile + `" and OTEL_EXPORTER_OTLP_CLIENT_KEY=`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := newConfig(nil, envOf(tt.env))
			if err != nil {
				t.Fatalf("newConfig: %v", err)
			}
			warnings := fmt.Sprint(c.warnings)
			for _, want := range tt.want {
				if !strings.Contains(warnings, want) {
					t.Errorf("warnings = %q\nwant them to contain %q", warnings, want)
				}
			}
			// What could not be read is ignored, as otel-go ignores it:
			// the system roots, no client certificate.
			if c.otlp.TLS != nil && (c.otlp.TLS.RootCAs != nil || len(c.otlp.TLS.Certificates) > 0) {
				t.Errorf("TLS configuration %+v kept part of what failed", c.otlp.TLS)
			}
		})
	}
}

// TestWithTLSClientConfig checks that the option replaces all three
// variables, bad ones included, and keeps its own copy.
func TestWithTLSClientConfig(t *testing.T) {
	pki := testcert.New(t)
	in := &tls.Config{RootCAs: pki.Roots, Certificates: []tls.Certificate{pki.Client}, ServerName: "collector"}
	opt := WithTLSClientConfig(in)
	in.ServerName = "changed later"
	c := mustConfig(t, []Option{opt}, map[string]string{
		"OTEL_EXPORTER_OTLP_CERTIFICATE":        "/nonexistent/ca.pem",
		"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/nonexistent/cert.pem",
	})
	got := c.otlp.TLS
	if got == nil || got == in {
		t.Fatalf("TLS = %p, want a copy of %p", got, in)
	}
	if got.ServerName != "collector" || !got.RootCAs.Equal(pki.Roots) || len(got.Certificates) != 1 {
		t.Errorf("TLS = {ServerName: %q, %d certificates}, want the option's", got.ServerName, len(got.Certificates))
	}
}

func TestRetryConfigResolution(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name string
		opts []Option
		want export.RetryConfig
	}{
		{"default", nil, export.RetryConfig{Enabled: true, InitialInterval: 5 * s, MaxInterval: 30 * s, MaxElapsedTime: time.Minute}},
		{"disabled", []Option{WithRetry(RetryConfig{})},
			export.RetryConfig{Enabled: false, InitialInterval: 5 * s, MaxInterval: 30 * s, MaxElapsedTime: time.Minute}},
		{"all given", []Option{WithRetry(RetryConfig{Enabled: true, InitialInterval: s, MaxInterval: 2 * s, MaxElapsedTime: 10 * s})},
			export.RetryConfig{Enabled: true, InitialInterval: s, MaxInterval: 2 * s, MaxElapsedTime: 10 * s}},
		{"zero fields default", []Option{WithRetry(RetryConfig{Enabled: true, MaxElapsedTime: 5 * time.Minute})},
			export.RetryConfig{Enabled: true, InitialInterval: 5 * s, MaxInterval: 30 * s, MaxElapsedTime: 5 * time.Minute}},
		{"initial above default cap", []Option{WithRetry(RetryConfig{Enabled: true, InitialInterval: time.Minute})},
			export.RetryConfig{Enabled: true, InitialInterval: time.Minute, MaxInterval: time.Minute, MaxElapsedTime: time.Minute}},
		{"cap below default initial", []Option{WithRetry(RetryConfig{Enabled: true, MaxInterval: 2 * s})},
			export.RetryConfig{Enabled: true, InitialInterval: 2 * s, MaxInterval: 2 * s, MaxElapsedTime: time.Minute}},
		{"last wins", []Option{WithRetry(RetryConfig{}), WithRetry(RetryConfig{Enabled: true, InitialInterval: s})},
			export.RetryConfig{Enabled: true, InitialInterval: s, MaxInterval: 30 * s, MaxElapsedTime: time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustConfig(t, tt.opts, nil).retry; got != tt.want {
				t.Errorf("retry = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// tlsReceiver is an OTLP endpoint, over gRPC and HTTP, that records what it
// receives and the User-Agent and Content-Type it was sent with.
type tlsReceiver struct {
	collectorpb.UnimplementedProfilesServiceServer
	mu           sync.Mutex
	requests     []*collectorpb.ExportProfilesServiceRequest
	userAgents   []string
	contentTypes []string
}

func (r *tlsReceiver) Export(ctx context.Context, req *collectorpb.ExportProfilesServiceRequest) (*collectorpb.ExportProfilesServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, req)
	r.userAgents = append(r.userAgents, strings.Join(md.Get("user-agent"), ","))
	r.contentTypes = append(r.contentTypes, strings.Join(md.Get("content-type"), ","))
	return &collectorpb.ExportProfilesServiceResponse{}, nil
}

func (r *tlsReceiver) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	body, err := io.ReadAll(hr.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := new(collectorpb.ExportProfilesServiceRequest)
	if hr.Header.Get("Content-Type") == "application/json" {
		err = protojson.Unmarshal(body, req)
	} else {
		err = proto.Unmarshal(body, req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.requests = append(r.requests, req)
	r.userAgents = append(r.userAgents, hr.Header.Get("User-Agent"))
	r.contentTypes = append(r.contentTypes, hr.Header.Get("Content-Type"))
	r.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// startTLSReceiver serves r with serverTLS and returns its URL.
func startTLSReceiver(t *testing.T, protocol string, r *tlsReceiver, serverTLS *tls.Config) string {
	t.Helper()
	if protocol == "grpc" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(serverTLS)))
		collectorpb.RegisterProfilesServiceServer(srv, r)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = srv.Serve(ln)
		}()
		t.Cleanup(func() {
			srv.Stop()
			<-done
		})
		return "https://" + ln.Addr().String()
	}
	srv := httptest.NewUnstartedServer(r)
	srv.TLS = serverTLS
	// Rejected handshakes are expected; keep them out of the log.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestOTLPTLSFromEnvironment configures TLS and mutual TLS through the
// environment alone and exports to servers that trust only the test
// authority, over every protocol. It also checks the User-Agent and, for
// http/json, that the body is JSON.
func TestOTLPTLSFromEnvironment(t *testing.T) {
	pki := testcert.New(t)
	request := &collectorpb.ExportProfilesServiceRequest{ResourceProfiles: []*profilespb.ResourceProfiles{{SchemaUrl: "https://example.com/schema"}}}
	tests := []struct {
		name              string
		requireClientCert bool
		clientCert        bool
		wantOK            bool
	}{
		{"TLS", false, false, true},
		{"mutual TLS", true, true, true},
		{"mutual TLS without client certificate", true, false, false},
	}
	wantContentType := map[string]string{"grpc": "application/grpc", "http/protobuf": "application/x-protobuf", "http/json": "application/json"}
	for _, protocol := range []string{"grpc", "http/protobuf", "http/json"} {
		for _, tt := range tests {
			t.Run(protocol+"/"+tt.name, func(t *testing.T) {
				r := &tlsReceiver{}
				url := startTLSReceiver(t, protocol, r, pki.ServerConfig(tt.requireClientCert))
				env := map[string]string{
					"OTEL_EXPORTER_OTLP_PROTOCOL":             protocol,
					"OTEL_EXPORTER_OTLP_ENDPOINT":             url,
					"OTEL_EXPORTER_OTLP_PROFILES_CERTIFICATE": pki.CAFile,
				}
				if tt.clientCert {
					env["OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"] = pki.ClientCertFile
					env["OTEL_EXPORTER_OTLP_CLIENT_KEY"] = pki.ClientKeyFile
				}
				c := mustConfig(t, []Option{WithTimeout(5 * time.Second)}, env)
				e, err := export.NewOTLP(c.otlp)
				if err != nil {
					t.Fatalf("NewOTLP: %v", err)
				}
				defer e.Shutdown(context.Background())
				err = e.Export(context.Background(), request)
				if !tt.wantOK {
					if err == nil {
						t.Fatal("Export succeeded without a client certificate, want the server to refuse it")
					}
					r.mu.Lock()
					defer r.mu.Unlock()
					if len(r.requests) != 0 {
						t.Errorf("server accepted %d requests, want none", len(r.requests))
					}
					return
				}
				if err != nil {
					t.Fatalf("Export: %v", err)
				}
				r.mu.Lock()
				defer r.mu.Unlock()
				if len(r.requests) != 1 || !proto.Equal(r.requests[0], request) {
					t.Fatalf("server got %d requests, want the one sent", len(r.requests))
				}
				if ua := r.userAgents[0]; !strings.HasPrefix(ua, "pprofotel-go/"+Version) {
					t.Errorf("User-Agent = %q, want it to start with pprofotel-go/%s", ua, Version)
				}
				if ct := r.contentTypes[0]; ct != wantContentType[protocol] {
					t.Errorf("Content-Type = %q, want %q", ct, wantContentType[protocol])
				}
			})
		}
	}
}
