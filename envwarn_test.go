package profiler

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestStartLogsBoundedWarnings checks what Start logs about invalid
// variables: a megabyte value is cut. (The exporter packages check that
// the HEADERS variables, which hold credentials, show no value at all.)
func TestStartLogsBoundedWarnings(t *testing.T) {
	huge := strings.Repeat("9", 1<<20) + "x"
	tests := []struct {
		name, variable, value string
		want                  string // in the log
		absent                string // from the log
	}{
		{"huge window", "PPROFOTEL_WINDOW", huge, `…(1048577 bytes)`, strings.Repeat("9", 200)},
		{"huge resource attributes", "OTEL_RESOURCE_ATTRIBUTES", "k=" + huge + "%zz", `…(1048582 bytes)`, strings.Repeat("9", 200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(tt.variable, tt.value)
			var logs bytes.Buffer
			p, err := Start(WithExporter(noneExporter{}), WithProfileTypes(GoroutineProfile), WithProcessContext(false),
				WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Stop(stopContext(t)); err != nil {
				t.Fatal(err)
			}
			log := logs.String()
			if !strings.Contains(log, tt.want) {
				t.Errorf("the log lacks %q:\n%.2000s", tt.want, log)
			}
			if strings.Contains(log, tt.absent) {
				t.Errorf("the log shows %q:\n%.2000s", tt.absent, log)
			}
			if len(log) > 2000 {
				t.Errorf("%d bytes logged, want the value cut", len(log))
			}
		})
	}
}
