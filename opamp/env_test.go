package opamp

import (
	"crypto/tls"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestConfig: options over variables over defaults; a bad option is an
// error naming it, a bad variable a warning naming it, and ignored.
func TestConfig(t *testing.T) {
	for _, tt := range []struct {
		name     string
		opts     []Option
		env      map[string]string
		endpoint string
		headers  string
		hb       time.Duration
		warning  string
		err      string
	}{
		{name: "defaults", endpoint: "ws://localhost:4320/v1/opamp", hb: 30 * time.Second},
		{name: "environment", env: map[string]string{
			"PPROFOTEL_OPAMP_ENDPOINT": "https://opamp.example.com/v1/opamp", "PPROFOTEL_OPAMP_HEADERS": "Authorization=Bearer%20x",
			"PPROFOTEL_OPAMP_HEARTBEAT_INTERVAL": "5s"},
			endpoint: "https://opamp.example.com/v1/opamp", headers: "map[Authorization:Bearer x]", hb: 5 * time.Second},
		{name: "options win", opts: []Option{WithEndpointURL("http://127.0.0.1:4320/v1/opamp"), WithHeaders(map[string]string{"X-A": "1"}),
			WithHeartbeatInterval(time.Minute)},
			env:      map[string]string{"PPROFOTEL_OPAMP_ENDPOINT": "ws://elsewhere:1/", "PPROFOTEL_OPAMP_HEADERS": "X-B=2"},
			endpoint: "http://127.0.0.1:4320/v1/opamp", headers: "map[X-A:1]", hb: time.Minute},
		{name: "bad endpoint variable", env: map[string]string{"PPROFOTEL_OPAMP_ENDPOINT": "grpc://host:1"},
			endpoint: "ws://localhost:4320/v1/opamp", hb: 30 * time.Second, warning: `PPROFOTEL_OPAMP_ENDPOINT="grpc://host:1"`},
		{name: "bad heartbeat variable", env: map[string]string{"PPROFOTEL_OPAMP_HEARTBEAT_INTERVAL": "10ms"},
			endpoint: "ws://localhost:4320/v1/opamp", hb: 30 * time.Second, warning: "interval must be at least 1s"},
		{name: "bad header variable", env: map[string]string{"PPROFOTEL_OPAMP_HEADERS": "Bad Name=secret,X-Ok=1"},
			endpoint: "ws://localhost:4320/v1/opamp", headers: "map[X-Ok:1]", hb: 30 * time.Second, warning: "PPROFOTEL_OPAMP_HEADERS=("},
		{name: "bad endpoint option", opts: []Option{WithEndpointURL("localhost:4320")}, err: `opamp: WithEndpointURL("localhost:4320")`},
		{name: "bad header option", opts: []Option{WithHeaders(map[string]string{"a b": "secret"})}, err: `WithHeaders(header "a b")`},
		{name: "short heartbeat", opts: []Option{WithHeartbeatInterval(time.Millisecond)}, err: "WithHeartbeatInterval(1ms)"},
		{name: "nil TLS", opts: []Option{WithTLSClientConfig(nil)}, err: "WithTLSClientConfig(nil)"},
		{name: "nil logger", opts: []Option{WithLogger(nil)}, err: "WithLogger(nil)"},
		{name: "bounds", opts: []Option{WithMaxCPUDutyCycle(0), WithMaxOffCPUDutyCycle(101), WithMinWindow(0),
			WithMinMutexProfileFraction(-1), WithMinBlockProfileRate(0), WithMaxGoroutineGuard(0), WithMinGoroutineLeakInterval(-1), WithMaxExpiry(0)},
			err: "WithMaxCPUDutyCycle(0)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := newConfig(tt.opts, func(k string) string { return tt.env[k] })
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || strings.Contains(err.Error(), "secret") {
					t.Fatalf("error %v, want one containing %q and no header value", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			headers := ""
			if c.headers != nil {
				headers = fmt.Sprint(c.headers)
			}
			if c.endpoint.String() != tt.endpoint || headers != tt.headers || c.heartbeat != tt.hb {
				t.Errorf("endpoint %s, headers %s, heartbeat %s", c.endpoint, headers, c.heartbeat)
			}
			var warnings []string
			for _, w := range c.warnings {
				warnings = append(warnings, w.Error())
			}
			if got := strings.Join(warnings, "\n"); tt.warning == "" && got != "" || !strings.Contains(got, tt.warning) || strings.Contains(got, "secret") {
				t.Errorf("warnings %q, want one containing %q and no header value", got, tt.warning)
			}
		})
	}
	// All the bounds' errors at once.
	_, err := newConfig([]Option{WithMaxCPUDutyCycle(0), WithMinWindow(0), WithMaxExpiry(-time.Second)}, func(string) string { return "" })
	if err == nil || strings.Count(err.Error(), "opamp: ") != 3 {
		t.Errorf("error %v, want three", err)
	}
	c, err := newConfig([]Option{WithTLSClientConfig(&tls.Config{ServerName: "x"})}, func(string) string { return "" })
	if err != nil || c.tls.ServerName != "x" {
		t.Errorf("TLS configuration not kept: %v", err)
	}
}
