package otlpconfig

import (
	"strings"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/export"
	"github.com/pprofotel/profiler/internal/testutil/testcert"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestResolveEndpoint(t *testing.T) {
	for _, tt := range []struct {
		name         string
		transport    Transport
		set          func(*Settings)
		env          map[string]string
		wantEndpoint string
		wantInsecure bool
		wantWarning  string
	}{
		{"gRPC default", GRPC, nil, nil, "localhost:4317", true, ""},
		{"HTTP default", HTTP, nil, nil, "http://localhost:4318/v1development/profiles", true, ""},
		{"gRPC host:port variable uses TLS", GRPC, nil,
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317"}, "collector:4317", false, ""},
		{"gRPC host:port variable, INSECURE", GRPC, nil,
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317", "OTEL_EXPORTER_OTLP_PROFILES_INSECURE": "true"}, "collector:4317", true, ""},
		{"gRPC https URL takes the scheme's port", GRPC, nil,
			map[string]string{"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT": "https://collector/ignored/path"}, "collector:443", false, ""},
		{"gRPC PROFILES variable wins", GRPC, nil,
			map[string]string{"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT": "http://p:1", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://g:2"}, "p:1", true, ""},
		{"gRPC invalid variable falls back", GRPC, nil,
			map[string]string{"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT": "p:0", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://g:2"}, "g:2", true,
			`OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT="p:0"`},
		{"gRPC WithEndpointURL", GRPC, func(s *Settings) { s.SetEndpointURL("https://c:7") },
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://g:2"}, "c:7", false, ""},
		{"gRPC WithEndpoint and WithInsecure", GRPC, func(s *Settings) { s.SetEndpoint("c:7"); s.SetInsecure() }, nil, "c:7", true, ""},
		{"HTTP generic variable gets the path", HTTP, nil,
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c:4318/"}, "https://c:4318/v1development/profiles", false, ""},
		{"HTTP host:port variable refused", HTTP, nil,
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4318"}, "http://localhost:4318/v1development/profiles", true,
			"must be a URL"},
		{"HTTP WithEndpoint uses TLS", HTTP, func(s *Settings) { s.SetEndpoint("c:1") }, nil, "https://c:1/v1development/profiles", false, ""},
		{"gRPC endpoint variables of another signal", GRPC, func(s *Settings) {
			s.SetEndpointVariables("SPLUNK_PROFILER_LOGS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
		},
			map[string]string{"SPLUNK_PROFILER_LOGS_ENDPOINT": "https://ingest:4317", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://g:2", "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT": "http://p:1"},
			"ingest:4317", false, ""},
		{"gRPC endpoint variables: an invalid one gives way", GRPC, func(s *Settings) {
			s.SetEndpointVariables("SPLUNK_PROFILER_LOGS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
		},
			map[string]string{"SPLUNK_PROFILER_LOGS_ENDPOINT": "ingest:0", "OTEL_EXPORTER_OTLP_ENDPOINT": "g:2", "OTEL_EXPORTER_OTLP_INSECURE": "true"},
			"g:2", true, `SPLUNK_PROFILER_LOGS_ENDPOINT="ingest:0"`},
		{"gRPC endpoint variables unset: the default, not the PROFILES variable", GRPC, func(s *Settings) { s.SetEndpointVariables("SPLUNK_PROFILER_LOGS_ENDPOINT") },
			map[string]string{"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT": "http://p:1"}, "localhost:4317", true, ""},
		{"HTTP WithURLPath", HTTP, func(s *Settings) { s.SetEndpointURL("http://c:1/a?x=1"); s.SetURLPath("/b") }, nil, "http://c:1/b?x=1", true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := New("test", tt.transport)
			if tt.set != nil {
				tt.set(s)
			}
			cfg, warnings, err := s.Resolve(env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.OTLP.Endpoint != tt.wantEndpoint || cfg.OTLP.Insecure != tt.wantInsecure {
				t.Errorf("endpoint %q insecure %v, want %q %v", cfg.OTLP.Endpoint, cfg.OTLP.Insecure, tt.wantEndpoint, tt.wantInsecure)
			}
			switch {
			case tt.wantWarning == "" && len(warnings) > 0:
				t.Errorf("warnings %v, want none", warnings)
			case tt.wantWarning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0].Error(), tt.wantWarning)):
				t.Errorf("warnings %v, want one naming %q", warnings, tt.wantWarning)
			}
		})
	}
}

func TestResolveSettings(t *testing.T) {
	s := New("test", HTTP)
	cfg, warnings, err := s.Resolve(env(map[string]string{
		"OTEL_EXPORTER_OTLP_TIMEOUT":              "2500",
		"OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION": "GZIP",
	}))
	if err != nil || len(warnings) > 0 {
		t.Fatal(err, warnings)
	}
	if cfg.OTLP.Timeout != 2500*time.Millisecond || cfg.OTLP.Compression != CompressionGzip {
		t.Errorf("timeout %v compression %q", cfg.OTLP.Timeout, cfg.OTLP.Compression)
	}
	if cfg.OTLP.Protocol != export.ProtocolHTTPProtobuf || cfg.OTLP.UserAgent != UserAgent || cfg.MaxRequestBytes != 0 {
		t.Errorf("protocol %q user agent %q max %d", cfg.OTLP.Protocol, cfg.OTLP.UserAgent, cfg.MaxRequestBytes)
	}
	if cfg.Retry != export.DefaultRetryConfig {
		t.Errorf("retry %+v, want the default", cfg.Retry)
	}
}

func TestResolveRetry(t *testing.T) {
	def := export.DefaultRetryConfig
	for _, tt := range []struct {
		in, want export.RetryConfig
	}{
		{export.RetryConfig{Enabled: true}, def},
		{export.RetryConfig{}, export.RetryConfig{InitialInterval: def.InitialInterval, MaxInterval: def.MaxInterval, MaxElapsedTime: def.MaxElapsedTime}},
		{export.RetryConfig{Enabled: true, MaxInterval: time.Second}, export.RetryConfig{Enabled: true, InitialInterval: time.Second, MaxInterval: time.Second, MaxElapsedTime: def.MaxElapsedTime}},
		{export.RetryConfig{Enabled: true, InitialInterval: time.Minute}, export.RetryConfig{Enabled: true, InitialInterval: time.Minute, MaxInterval: time.Minute, MaxElapsedTime: def.MaxElapsedTime}},
	} {
		if got := ResolveRetry(&tt.in); got != tt.want {
			t.Errorf("ResolveRetry(%+v) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestTLSVariables(t *testing.T) {
	pki := testcert.New(t)
	for _, tt := range []struct {
		name        string
		env         map[string]string
		wantRoots   bool
		wantCert    bool
		wantWarning string
	}{
		{"CA and client pair", map[string]string{
			"OTEL_EXPORTER_OTLP_CERTIFICATE":                 pki.CAFile,
			"OTEL_EXPORTER_OTLP_PROFILES_CLIENT_CERTIFICATE": pki.ClientCertFile,
			"OTEL_EXPORTER_OTLP_CLIENT_KEY":                  pki.ClientKeyFile,
		}, true, true, ""},
		{"certificate without key", map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": pki.ClientCertFile},
			false, false, "needs its private key"},
		{"missing CA file", map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"},
			false, false, `OTEL_EXPORTER_OTLP_CERTIFICATE="/nonexistent/ca.pem"`},
		{"CA file without PEM", map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": pki.ClientKeyFile},
			false, false, "holds no PEM certificate"},
		{"key and certificate swapped", map[string]string{
			"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": pki.ClientKeyFile,
			"OTEL_EXPORTER_OTLP_CLIENT_KEY":         pki.ClientCertFile,
		}, false, false, "ignored"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, warnings, err := New("test", GRPC).Resolve(env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			c := cfg.OTLP.TLS
			if c == nil {
				t.Fatal("no TLS configuration")
			}
			if (c.RootCAs != nil) != tt.wantRoots || (len(c.Certificates) == 1) != tt.wantCert {
				t.Errorf("roots %v certificates %d", c.RootCAs != nil, len(c.Certificates))
			}
			switch {
			case tt.wantWarning == "" && len(warnings) > 0:
				t.Errorf("warnings %v", warnings)
			case tt.wantWarning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0].Error(), tt.wantWarning)):
				t.Errorf("warnings %v, want one containing %q", warnings, tt.wantWarning)
			}
		})
	}
}

// TestOptionsErrorsTogether checks that every bad option is reported at
// once.
func TestOptionsErrorsTogether(t *testing.T) {
	s := New("test", GRPC)
	s.SetTimeout(-1)
	s.SetMaxRequestBytes(0)
	s.SetCompression("WithCompressor", "br")
	_, _, err := s.Resolve(env(nil))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"test: WithTimeout(-1ns)", "test: WithMaxRequestBytes(0)", `test: WithCompressor("br")`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
