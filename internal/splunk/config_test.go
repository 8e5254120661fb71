package splunk

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/export"
)

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want Config
	}{
		{
			name: "defaults",
			want: Config{Endpoint: "localhost:4317", Insecure: true, MemoryStackDepth: 128},
		},
		{
			name: "all set",
			env: map[string]string{
				"SPLUNK_PROFILER_ENABLED":             "true",
				"SPLUNK_PROFILER_MEMORY_ENABLED":      "TRUE",
				"SPLUNK_PROFILER_LOGS_ENDPOINT":       "https://collector.example:4443",
				"SPLUNK_PROFILER_CALL_STACK_INTERVAL": "2500",
				"OTEL_EXPORTER_OTLP_ENDPOINT":         "http://ignored:4317",
			},
			want: Config{Enabled: true, MemoryEnabled: true, Endpoint: "collector.example:4443",
				CallStackInterval: 2500 * time.Millisecond, MemoryStackDepth: 128},
		},
		{
			name: "blank values are unset",
			env:  map[string]string{"SPLUNK_PROFILER_ENABLED": " ", "SPLUNK_PROFILER_LOGS_ENDPOINT": "  "},
			want: Config{Endpoint: "localhost:4317", Insecure: true, MemoryStackDepth: 128},
		},
		{
			name: "explicitly off",
			env:  map[string]string{"SPLUNK_PROFILER_ENABLED": "False", "SPLUNK_PROFILER_MEMORY_ENABLED": "false"},
			want: Config{Endpoint: "localhost:4317", Insecure: true, MemoryStackDepth: 128},
		},
		{
			name: "OTLP endpoint as fallback",
			env:  map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel-collector:4317"},
			want: Config{Endpoint: "otel-collector:4317", Insecure: true, MemoryStackDepth: 128},
		},
		{
			name: "URL without port takes the scheme's",
			env:  map[string]string{"SPLUNK_PROFILER_LOGS_ENDPOINT": "https://ingest.example"},
			want: Config{Endpoint: "ingest.example:443", MemoryStackDepth: 128},
		},
		{
			name: "bare host:port uses TLS",
			env:  map[string]string{"SPLUNK_PROFILER_LOGS_ENDPOINT": "collector:4317"},
			want: Config{Endpoint: "collector:4317", MemoryStackDepth: 128},
		},
		{
			name: "bare host:port with OTEL_EXPORTER_OTLP_INSECURE",
			env:  map[string]string{"SPLUNK_PROFILER_LOGS_ENDPOINT": "collector:4317", "OTEL_EXPORTER_OTLP_INSECURE": "true"},
			want: Config{Endpoint: "collector:4317", Insecure: true, MemoryStackDepth: 128},
		},
		{
			name: "IPv6",
			env:  map[string]string{"SPLUNK_PROFILER_LOGS_ENDPOINT": "http://[::1]:4317"},
			want: Config{Endpoint: "[::1]:4317", Insecure: true, MemoryStackDepth: 128},
		},
		{
			name: "GODEBUG profstackdepth, last setting wins",
			env:  map[string]string{"GODEBUG": "profstackdepth=64,gctrace=1,profstackdepth=256"},
			want: Config{Endpoint: "localhost:4317", Insecure: true, MemoryStackDepth: 256},
		},
		{
			name: "GODEBUG profstackdepth above the runtime's ceiling",
			env:  map[string]string{"GODEBUG": "profstackdepth=5000"},
			want: Config{Endpoint: "localhost:4317", Insecure: true, MemoryStackDepth: 1024},
		},
		{
			name: "GODEBUG profstackdepth the runtime ignores",
			env:  map[string]string{"GODEBUG": "profstackdepth=deep"},
			want: Config{Endpoint: "localhost:4317", Insecure: true, MemoryStackDepth: 128},
		},
		{
			name: "shortest interval",
			env:  map[string]string{"SPLUNK_PROFILER_CALL_STACK_INTERVAL": "1000"},
			want: Config{Endpoint: "localhost:4317", Insecure: true, CallStackInterval: time.Second, MemoryStackDepth: 128},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warnings := ConfigFromEnv(func(k string) string { return tt.env[k] })
			if warnings != nil {
				t.Fatal(warnings)
			}
			if got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestConfigFromEnvWarnings(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		// want lists fragments of the error; each names a variable and
		// its value.
		want []string
	}{
		{"enabled", map[string]string{"SPLUNK_PROFILER_ENABLED": "yes"}, []string{`SPLUNK_PROFILER_ENABLED="yes"`}},
		{"memory", map[string]string{"SPLUNK_PROFILER_MEMORY_ENABLED": "1"}, []string{`SPLUNK_PROFILER_MEMORY_ENABLED="1"`}},
		{"interval not a number", map[string]string{"SPLUNK_PROFILER_CALL_STACK_INTERVAL": "10s"}, []string{`SPLUNK_PROFILER_CALL_STACK_INTERVAL="10s"`, "milliseconds"}},
		{"interval too short", map[string]string{"SPLUNK_PROFILER_CALL_STACK_INTERVAL": "100"}, []string{`SPLUNK_PROFILER_CALL_STACK_INTERVAL="100"`, "at least 1000"}},
		{"interval negative", map[string]string{"SPLUNK_PROFILER_CALL_STACK_INTERVAL": "-5"}, []string{`SPLUNK_PROFILER_CALL_STACK_INTERVAL="-5"`}},
		{"endpoint scheme", map[string]string{"SPLUNK_PROFILER_LOGS_ENDPOINT": "grpc://collector:4317"}, []string{`SPLUNK_PROFILER_LOGS_ENDPOINT="grpc://collector:4317"`, `scheme "grpc"`}},
		{"endpoint without port", map[string]string{"SPLUNK_PROFILER_LOGS_ENDPOINT": "collector"}, []string{`SPLUNK_PROFILER_LOGS_ENDPOINT="collector"`}},
		{"endpoint port", map[string]string{"SPLUNK_PROFILER_LOGS_ENDPOINT": "http://collector:99999"}, []string{`port "99999"`}},
		{"fallback endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://"}, []string{`OTEL_EXPORTER_OTLP_ENDPOINT="http://"`, "no host"}},
		{
			"every error at once",
			map[string]string{"SPLUNK_PROFILER_ENABLED": "on", "SPLUNK_PROFILER_CALL_STACK_INTERVAL": "x"},
			[]string{`SPLUNK_PROFILER_ENABLED="on"`, `SPLUNK_PROFILER_CALL_STACK_INTERVAL="x"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, warnings := ConfigFromEnv(func(k string) string { return tt.env[k] })
			err := errors.Join(warnings...)
			if err == nil {
				t.Fatal("no warning")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to contain %s", err, w)
				}
			}
		})
	}
}

// TestConfigFromEnvPartial checks that valid values survive an invalid one,
// so a caller not using the Splunk mode can ignore the warning.
func TestConfigFromEnvPartial(t *testing.T) {
	env := map[string]string{"SPLUNK_PROFILER_MEMORY_ENABLED": "true", "SPLUNK_PROFILER_CALL_STACK_INTERVAL": "soon"}
	got, warnings := ConfigFromEnv(func(k string) string { return env[k] })
	if warnings == nil {
		t.Fatal("no warning")
	}
	if !got.MemoryEnabled || got.Endpoint != "localhost:4317" || got.CallStackInterval != 0 {
		t.Errorf("got %+v", got)
	}
}

func TestConfigOTLP(t *testing.T) {
	base := export.OTLPConfig{
		Protocol: export.ProtocolHTTPProtobuf, Endpoint: "http://localhost:4318/v1development/profiles",
		Headers: map[string]string{"X-SF-Token": "t"}, Timeout: 7 * time.Second, Compression: "gzip", UserAgent: "ua",
	}
	c := Config{Endpoint: "collector:4317", Insecure: true, MemoryEnabled: true, MemoryStackDepth: 256}
	got := c.OTLP(base)
	if got.Protocol != export.ProtocolGRPC || got.Endpoint != "collector:4317" || !got.Insecure ||
		got.Headers["X-SF-Token"] != "t" || got.Timeout != 7*time.Second || got.Compression != "gzip" || got.UserAgent != "ua" {
		t.Errorf("OTLP = %+v", got)
	}
	if o := c.EncodeOptions(); o != (EncodeOptions{MemoryStackDepth: 256}) {
		t.Errorf("EncodeOptions = %+v", o)
	}
}
