package export

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestNewLogsGRPCInvalid checks that the logs sender of the Splunk exporter
// refuses a configuration it cannot use, naming the setting.
func TestNewLogsGRPCInvalid(t *testing.T) {
	tests := []struct {
		name string
		cfg  OTLPConfig
		want string
	}{
		{"http protocol", OTLPConfig{Protocol: ProtocolHTTPProtobuf, Endpoint: "localhost:4317"}, `protocol "http/protobuf"`},
		{"no port", OTLPConfig{Endpoint: "localhost"}, `endpoint "localhost"`},
		{"port zero", OTLPConfig{Endpoint: "localhost:0"}, `port "0"`},
		{"empty endpoint", OTLPConfig{}, `endpoint ""`},
		{"compression", OTLPConfig{Endpoint: "localhost:4317", Compression: "br"}, `compression "br"`},
		{"negative timeout", OTLPConfig{Endpoint: "localhost:4317", Timeout: -time.Second}, "timeout -1s"},
		{"header key", OTLPConfig{Endpoint: "localhost:4317", Headers: map[string]string{"bad key": "v"}}, `header "bad key"`},
		{"header value", OTLPConfig{Endpoint: "localhost:4317", Headers: map[string]string{"k": "tab\there"}}, `header "k"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := NewLogsGRPC(tt.cfg)
			if err == nil {
				_ = e.Shutdown(context.Background())
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to name %s", err, tt.want)
			}
		})
	}
}
