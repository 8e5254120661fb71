package profiler

import (
	"strings"
	"testing"
)

// TestWithHeadersErrors checks that a header that cannot be sent makes
// Start fail with an error that names WithHeaders and the header, and
// shows no header value: values are credentials more often than not.
func TestWithHeadersErrors(t *testing.T) {
	const secret = "s3cr3t-token"
	tests := []struct {
		name    string
		opts    []Option
		env     map[string]string
		want    string
		wantNil bool
	}{
		{
			name: "empty name",
			opts: []Option{WithHeaders(map[string]string{"": secret, "Authorization": "Bearer " + secret})},
			want: `profiler: WithHeaders(map["":… "Authorization":…]): otlp header name must not be empty`,
		},
		{
			name: "blank name",
			opts: []Option{WithHeaders(map[string]string{" ": secret})},
			want: `profiler: WithHeaders(map[" ":…]): otlp header " ": invalid name`,
		},
		{
			name: "name that is not an HTTP token",
			opts: []Option{WithHeaders(map[string]string{"x key": secret})},
			want: `profiler: WithHeaders(map["x key":…]): otlp header "x key": invalid name`,
		},
		{
			name: "value with a control character",
			opts: []Option{WithHeaders(map[string]string{"Authorization": "Bearer " + secret + "\n"})},
			want: `profiler: WithHeaders(map["Authorization":…]): otlp header "Authorization": invalid value, with a control character (the value is not shown: it may be a secret)`,
		},
		{
			name: "gRPC metadata key, protocol from an option",
			opts: []Option{WithProtocol(ProtocolGRPC), WithHeaders(map[string]string{"X+Key": secret})},
			want: `profiler: WithHeaders(map["X+Key":…]): otlp header "X+Key": gRPC metadata keys allow only 0-9 a-z - _ .`,
		},
		{
			name: "gRPC metadata value, protocol from the environment",
			env:  map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			opts: []Option{WithHeaders(map[string]string{"x-token": "caf\u00e9-" + secret})},
			want: `profiler: WithHeaders(map["x-token":…]): otlp header "x-token": gRPC metadata values must be printable ASCII (the value is not shown: it may be a secret)`,
		},
		{
			name:    "the same over HTTP",
			opts:    []Option{WithHeaders(map[string]string{"x-token": "caf\u00e9-" + secret, "X+Key": secret})},
			wantNil: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newConfig(tt.opts, envOf(tt.env))
			if tt.wantNil {
				if err != nil {
					t.Fatalf("newConfig: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error shows a header value: %v", err)
			}
		})
	}
}
