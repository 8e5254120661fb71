package export

import (
	"context"
	"errors"
	"strings"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// testRequest builds a small but complete request; n varies the sample
// values and timestamps so that requests can be told apart.
func testRequest(n int) *collectorpb.ExportProfilesServiceRequest {
	strs := []string{"", "cpu", "nanoseconds", "samples", "count", "main.work", "/src/main.go", "service.name", "<svc & co>", "thread.name"}
	return &collectorpb.ExportProfilesServiceRequest{
		Dictionary: &profilespb.ProfilesDictionary{
			MappingTable: []*profilespb.Mapping{{}, {MemoryStart: 0x400000, MemoryLimit: 0xffffffffffff0000, FilenameStrindex: 6}},
			LocationTable: []*profilespb.Location{{}, {
				MappingIndex: 1,
				Address:      0x401234,
				Lines:        []*profilespb.Line{{FunctionIndex: 1, Line: 42, Column: 7}},
			}},
			FunctionTable: []*profilespb.Function{{}, {NameStrindex: 5, SystemNameStrindex: 5, FilenameStrindex: 6, StartLine: 40}},
			LinkTable: []*profilespb.Link{{}, {
				TraceId: []byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
				SpanId:  []byte{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
			}},
			StringTable: strs,
			AttributeTable: []*profilespb.KeyValueAndUnit{{}, {
				KeyStrindex: 9,
				Value:       &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "worker"}},
			}},
			StackTable: []*profilespb.Stack{{}, {LocationIndices: []int32{1}}},
		},
		ResourceProfiles: []*profilespb.ResourceProfiles{{
			Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{
				Key:   "service.name",
				Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "<svc & co>"}},
			}}},
			ScopeProfiles: []*profilespb.ScopeProfiles{{
				Scope: &commonpb.InstrumentationScope{Name: "github.com/pprofotel/profiler", Version: "0.1.0"},
				Profiles: []*profilespb.Profile{{
					SampleType:   &profilespb.ValueType{TypeStrindex: 1, UnitStrindex: 2},
					PeriodType:   &profilespb.ValueType{TypeStrindex: 1, UnitStrindex: 2},
					Period:       10_000_000,
					TimeUnixNano: 1_763_769_599_000_000_000 + uint64(n),
					DurationNano: 60_000_000_000,
					ProfileId:    []byte{0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, byte(n)},
					Samples: []*profilespb.Sample{
						{StackIndex: 1, LinkIndex: 1, AttributeIndices: []int32{1}, Values: []int64{int64(n+1) * 10_000_000}},
						{StackIndex: 1, Values: []int64{1 << 62}},
					},
				}},
			}},
		}},
	}
}

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
		if err := e.Export(context.Background(), testRequest(1)); !errors.Is(err, ErrShutdown) {
			t.Errorf("Export after Shutdown = %v, want ErrShutdown", err)
		}
		if err := e.Shutdown(context.Background()); err != nil {
			t.Errorf("second Shutdown: %v", err)
		}
	}
}
