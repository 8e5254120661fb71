package export

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pprofotel/profiler/internal/testutil/otlptest"
)

func TestNewOTLPRejectsSettings(t *testing.T) {
	tests := []struct {
		name    string
		cfg     OTLPConfig
		wantErr string // the setting and value the error must name
	}{
		{"unknown protocol", OTLPConfig{Protocol: "http/xml", Endpoint: "localhost:4317"}, `otlp protocol "http/xml"`},
		{"empty protocol", OTLPConfig{Endpoint: "localhost:4317"}, `otlp protocol ""`},
		{"grpc bad endpoint", OTLPConfig{Protocol: ProtocolGRPC, Endpoint: "::bad"}, `otlp endpoint "::bad"`},
		{"grpc empty endpoint", OTLPConfig{Protocol: ProtocolGRPC}, `otlp endpoint "" is empty`},
		{"grpc no port", OTLPConfig{Protocol: ProtocolGRPC, Endpoint: "collector"}, `otlp endpoint "collector"`},
		{"grpc named port", OTLPConfig{Protocol: ProtocolGRPC, Endpoint: "collector:otlp"}, `port "otlp"`},
		{"grpc url", OTLPConfig{Protocol: ProtocolGRPC, Endpoint: "http://collector:4317"}, `otlp endpoint "http://collector:4317"`},
		{"grpc header key", OTLPConfig{Protocol: ProtocolGRPC, Endpoint: "localhost:4317", Headers: map[string]string{"x/y": "1"}}, `otlp header "x/y"`},
		{"grpc header value", OTLPConfig{Protocol: ProtocolGRPC, Endpoint: "localhost:4317", Headers: map[string]string{"x-key": "caf\u00e9"}}, `otlp header "x-key"`},
		{"http scheme", OTLPConfig{Protocol: ProtocolHTTPProtobuf, Endpoint: "ftp://collector/v1development/profiles"}, `scheme "ftp"`},
		{"http no scheme", OTLPConfig{Protocol: ProtocolHTTPProtobuf, Endpoint: "collector:4318"}, `otlp endpoint "collector:4318"`},
		{"http plaintext not insecure", OTLPConfig{Protocol: ProtocolHTTPProtobuf, Endpoint: "http://collector:4318/v1development/profiles"}, `insecure is false`},
		{"https insecure", OTLPConfig{Protocol: ProtocolHTTPJSON, Endpoint: "https://collector:4318/v1development/profiles", Insecure: true}, `insecure is true`},
		{"http no host", OTLPConfig{Protocol: ProtocolHTTPProtobuf, Endpoint: "http:///v1development/profiles", Insecure: true}, `no host`},
		{"http empty", OTLPConfig{Protocol: ProtocolHTTPProtobuf}, `otlp endpoint is empty`},
		{"compression", OTLPConfig{Protocol: ProtocolGRPC, Endpoint: "localhost:4317", Compression: "zstd"}, `otlp compression "zstd"`},
		{"timeout", OTLPConfig{Protocol: ProtocolGRPC, Endpoint: "localhost:4317", Timeout: -1}, `otlp timeout -1ns`},
		{"http header name", OTLPConfig{Protocol: ProtocolHTTPProtobuf, Endpoint: "https://c/p", Headers: map[string]string{"bad key": "v"}}, `otlp header "bad key"`},
		{"http header value", OTLPConfig{Protocol: ProtocolHTTPProtobuf, Endpoint: "https://c/p", Headers: map[string]string{"k": "a\nb"}}, `otlp header "k"`},
		{"user agent", OTLPConfig{Protocol: ProtocolHTTPProtobuf, Endpoint: "https://c/p", UserAgent: "a\r\nb"}, `otlp user agent`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := NewOTLP(tt.cfg)
			if err == nil {
				_ = e.Shutdown(context.Background())
				t.Fatalf("NewOTLP(%+v) succeeded, want error naming %s", tt.cfg, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("NewOTLP error = %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestNewOTLPAccepts(t *testing.T) {
	tests := []OTLPConfig{
		{Protocol: ProtocolGRPC, Endpoint: "localhost:4317"},
		{Protocol: ProtocolGRPC, Endpoint: "[::1]:4317", Insecure: true, Compression: "gzip", Timeout: 0},
		{Protocol: ProtocolGRPC, Endpoint: "collector.example:4317", Compression: "none", Headers: map[string]string{"Authorization": "Bearer x"}},
		{Protocol: ProtocolHTTPProtobuf, Endpoint: "https://collector.example/v1development/profiles"},
		{Protocol: ProtocolHTTPJSON, Endpoint: "http://localhost:4318/v1development/profiles", Insecure: true},
	}
	for _, cfg := range tests {
		e, err := NewOTLP(cfg)
		if err != nil {
			t.Errorf("NewOTLP(%+v): %v", cfg, err)
			continue
		}
		if err := e.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := e.Export(context.Background(), otlptest.Request(1)); !errors.Is(err, ErrShutdown) {
			t.Errorf("Export after Shutdown = %v, want ErrShutdown", err)
		}
		if err := e.Shutdown(context.Background()); err != nil {
			t.Errorf("second Shutdown: %v", err)
		}
	}
}
