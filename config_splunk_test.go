package profiler

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSplunkModeConfig checks how the Splunk encoding is selected and how
// its variables combine with the profiler's own settings: options win over
// variables, the profiler's variables win over Splunk's, Splunk's fill in
// the rest.
func TestSplunkModeConfig(t *testing.T) {
	tests := []struct {
		name         string
		opts         []Option
		env          map[string]string
		wantExporter ExporterKind
		wantTypes    []ProfileType
		wantPeriod   time.Duration
		wantEndpoint string
		wantInsecure bool
		wantMemory   bool
	}{
		{
			name:         "off unless asked",
			env:          map[string]string{"SPLUNK_PROFILER_MEMORY_ENABLED": "true"},
			wantExporter: ExporterOTLP, wantTypes: defaultProfileTypes(), wantPeriod: defaultPeriod,
			wantEndpoint: defaultHTTPEndpoint, wantInsecure: true,
		},
		{
			name:         "SPLUNK_PROFILER_ENABLED alone",
			env:          map[string]string{"SPLUNK_PROFILER_ENABLED": "true"},
			wantExporter: ExporterSplunk, wantTypes: []ProfileType{CPUProfile}, wantPeriod: 10 * time.Second,
			wantEndpoint: "localhost:4317", wantInsecure: true,
		},
		{
			name: "Splunk's variables fill in",
			env: map[string]string{
				"PPROFOTEL_EXPORTER":                  "splunk",
				"SPLUNK_PROFILER_MEMORY_ENABLED":      "true",
				"SPLUNK_PROFILER_CALL_STACK_INTERVAL": "5000",
				"SPLUNK_PROFILER_LOGS_ENDPOINT":       "https://collector.example:4317",
				"OTEL_EXPORTER_OTLP_ENDPOINT":         "http://other:4318",
			},
			wantExporter: ExporterSplunk, wantTypes: []ProfileType{CPUProfile, HeapProfile}, wantPeriod: 5 * time.Second,
			wantEndpoint: "collector.example:4317", wantInsecure: false, wantMemory: true,
		},
		{
			name: "the profiler's own variables win over Splunk's",
			env: map[string]string{
				"SPLUNK_PROFILER_ENABLED":             "true",
				"SPLUNK_PROFILER_CALL_STACK_INTERVAL": "5000",
				"PPROFOTEL_PERIOD":                    "30s",
				"PPROFOTEL_PROFILES":                  "cpu,heap",
			},
			wantExporter: ExporterSplunk, wantTypes: []ProfileType{CPUProfile, HeapProfile}, wantPeriod: 30 * time.Second,
			wantEndpoint: "localhost:4317", wantInsecure: true, wantMemory: true,
		},
		{
			name: "an endpoint option wins over every variable",
			opts: []Option{WithEndpointURL("http://127.0.0.1:9999")},
			env: map[string]string{
				"SPLUNK_PROFILER_ENABLED":       "true",
				"SPLUNK_PROFILER_LOGS_ENDPOINT": "https://collector.example:4317",
			},
			wantExporter: ExporterSplunk, wantTypes: []ProfileType{CPUProfile}, wantPeriod: 10 * time.Second,
			wantEndpoint: "127.0.0.1:9999", wantInsecure: true,
		},
		{
			name:         "WithExporter wins over SPLUNK_PROFILER_ENABLED",
			opts:         []Option{WithExporter(ExporterNone)},
			env:          map[string]string{"SPLUNK_PROFILER_ENABLED": "true"},
			wantExporter: ExporterNone, wantTypes: defaultProfileTypes(), wantPeriod: defaultPeriod,
			wantEndpoint: defaultHTTPEndpoint, wantInsecure: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustConfig(t, tt.opts, tt.env)
			if c.exporter != tt.wantExporter {
				t.Errorf("exporter = %q, want %q", c.exporter, tt.wantExporter)
			}
			if !slices.Equal(c.profileTypes, tt.wantTypes) {
				t.Errorf("profile types = %v, want %v", c.profileTypes, tt.wantTypes)
			}
			if c.period != tt.wantPeriod {
				t.Errorf("period = %v, want %v", c.period, tt.wantPeriod)
			}
			if c.otlp.Endpoint != tt.wantEndpoint || c.otlp.Insecure != tt.wantInsecure {
				t.Errorf("endpoint = %q insecure %v, want %q insecure %v", c.otlp.Endpoint, c.otlp.Insecure, tt.wantEndpoint, tt.wantInsecure)
			}
			if tt.wantExporter == ExporterSplunk {
				if c.otlp.Protocol != "grpc" {
					t.Errorf("protocol = %q, want grpc: Splunk's logs go over gRPC", c.otlp.Protocol)
				}
				if c.splunk.MemoryEnabled != tt.wantMemory {
					t.Errorf("memory = %v, want %v", c.splunk.MemoryEnabled, tt.wantMemory)
				}
			}
		})
	}
}

func TestSplunkVariablesAreCheckedOnlyInSplunkMode(t *testing.T) {
	bad := map[string]string{"SPLUNK_PROFILER_CALL_STACK_INTERVAL": "often"}
	if c := mustConfig(t, nil, bad); len(c.warnings) != 0 {
		t.Errorf("a bad Splunk variable was warned about in a profiler that does not use Splunk: %v", c.warnings)
	}
	bad["PPROFOTEL_EXPORTER"] = "splunk"
	c := mustConfig(t, nil, bad)
	if w := fmt.Sprint(c.warnings); !strings.Contains(w, "SPLUNK_PROFILER_CALL_STACK_INTERVAL") || !strings.Contains(w, "often") {
		t.Errorf("warnings = %v, want one naming SPLUNK_PROFILER_CALL_STACK_INTERVAL and its value", c.warnings)
	}
}
