package logsgrpc

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/export"
)

// TestNewInvalid checks that the logs sender of the Splunk exporter
// refuses a configuration it cannot use, naming the setting.
func TestNewInvalid(t *testing.T) {
	tests := []struct {
		name string
		cfg  export.OTLPConfig
		want string
	}{
		{"http protocol", export.OTLPConfig{Protocol: export.ProtocolHTTPProtobuf, Endpoint: "localhost:4317"}, `protocol "http/protobuf"`},
		{"no port", export.OTLPConfig{Endpoint: "localhost"}, `endpoint "localhost"`},
		{"port zero", export.OTLPConfig{Endpoint: "localhost:0"}, `port "0"`},
		{"empty endpoint", export.OTLPConfig{}, `endpoint ""`},
		{"compression", export.OTLPConfig{Endpoint: "localhost:4317", Compression: "br"}, `compression "br"`},
		{"negative timeout", export.OTLPConfig{Endpoint: "localhost:4317", Timeout: -time.Second}, "timeout -1s"},
		{"header key", export.OTLPConfig{Endpoint: "localhost:4317", Headers: map[string]string{"bad key": "v"}}, `header "bad key"`},
		{"header value", export.OTLPConfig{Endpoint: "localhost:4317", Headers: map[string]string{"k": "tab\there"}}, `header "k"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := New(tt.cfg)
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
