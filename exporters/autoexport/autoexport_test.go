package autoexport

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pprofotel/profiler/exporters/otlpprofilegrpc"
	"github.com/pprofotel/profiler/exporters/otlpprofilehttp"
	"github.com/pprofotel/profiler/internal/export/registry"
)

// TestNewExporter checks the choice of exporter and the warnings about
// values that cannot be honoured.
func TestNewExporter(t *testing.T) {
	registry.Register("test-failing", func(context.Context) (registry.Exporter, error) {
		return nil, errors.New("no directory")
	})
	tests := []struct {
		name     string
		env      map[string]string
		want     string
		warnings []string
	}{
		{"default", nil, fmt.Sprintf("%T", &otlpprofilehttp.Exporter{}), nil},
		{"none", map[string]string{envExporter: "none"}, "autoexport.discard", nil},
		{"any case", map[string]string{envExporter: "NONE"}, "autoexport.discard", nil},
		{"grpc", map[string]string{envProtocol: "grpc"}, fmt.Sprintf("%T", &otlpprofilegrpc.Exporter{}), nil},
		{"per-signal protocol wins", map[string]string{envProtocol: "grpc", envProfilesProtocol: "http/json"},
			fmt.Sprintf("%T", &otlpprofilehttp.Exporter{}), nil},
		{"unknown name", map[string]string{envExporter: "stdout"}, fmt.Sprintf("%T", &otlpprofilehttp.Exporter{}),
			[]string{`OTEL_PROFILES_EXPORTER="stdout"`}},
		{"not linked", map[string]string{envExporter: "splunk"}, fmt.Sprintf("%T", &otlpprofilehttp.Exporter{}),
			[]string{`exporters/splunk`}},
		{"cannot be built", map[string]string{envExporter: "test-failing", envProtocol: "grpc"},
			fmt.Sprintf("%T", &otlpprofilegrpc.Exporter{}), []string{`"test-failing" cannot be built from the environment (no directory)`}},
		{"unknown protocol", map[string]string{envProtocol: "http"}, fmt.Sprintf("%T", &otlpprofilehttp.Exporter{}),
			[]string{`OTEL_EXPORTER_OTLP_PROTOCOL="http"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var warnings []error
			exp, err := NewExporter(context.Background(),
				registry.WithGetenv(func(k string) string { return tt.env[k] }),
				registry.WithWarn(func(err error) { warnings = append(warnings, err) }))
			if err != nil {
				t.Fatal(err)
			}
			defer exp.Shutdown(context.Background())
			if got := fmt.Sprintf("%T", exp); got != tt.want {
				t.Errorf("exporter %s, want %s", got, tt.want)
			}
			if len(warnings) != len(tt.warnings) {
				t.Fatalf("warnings %q, want %d", warnings, len(tt.warnings))
			}
			for i, w := range tt.warnings {
				if !strings.Contains(warnings[i].Error(), w) {
					t.Errorf("warning %q does not say %s", warnings[i], w)
				}
			}
		})
	}
}
