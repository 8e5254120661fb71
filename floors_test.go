package profiler

import (
	"testing"
	"time"
)

// TestDurationFloors checks the floors of the window (1s) and of the CPU
// recording (100ms) at their edges, through an option (Start fails, naming
// it and its value) and through the variable (warned about, and the
// default applies). The retry intervals' floor is the exporter packages'.
func TestDurationFloors(t *testing.T) {
	defaultCPU := defaultWindow * defaultCPUDuty / 100
	tests := []struct {
		name    string
		opts    []Option
		env     map[string]string
		wantErr string // of newConfig, for an option
		warning string // for a variable
		window  time.Duration
		cpu     time.Duration
	}{
		{name: "window at the floor", opts: []Option{WithWindow(time.Second)}, window: time.Second, cpu: 170 * time.Millisecond},
		{name: "window below the floor", opts: []Option{WithWindow(time.Second - 1)},
			wantErr: "profiler: WithWindow(999.999999ms): window must be at least 1s"},
		{name: "window variable at the floor", env: map[string]string{"PPROFOTEL_WINDOW": "1s"}, window: time.Second, cpu: 170 * time.Millisecond},
		{name: "window variable below the floor", env: map[string]string{"PPROFOTEL_WINDOW": "1ns"},
			warning: `profiler: PPROFOTEL_WINDOW="1ns": window must be at least 1s; ignored`, window: defaultWindow, cpu: defaultCPU},
		{name: "CPU recording raised to the floor", opts: []Option{WithWindow(time.Second), WithCPUDutyCycle(1)}, window: time.Second, cpu: 100 * time.Millisecond},
		{name: "CPU recording above the floor", opts: []Option{WithWindow(10 * time.Second), WithCPUDutyCycle(1)}, window: 10 * time.Second, cpu: 100 * time.Millisecond},
		{name: "CPU recording at 2%", opts: []Option{WithWindow(10 * time.Second), WithCPUDutyCycle(2)}, window: 10 * time.Second, cpu: 200 * time.Millisecond},
		{name: "short windows in the package's tests", opts: []Option{shortWindows(), WithWindow(20 * time.Millisecond), WithCPUDutyCycle(50)},
			window: 20 * time.Millisecond, cpu: 10 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := newConfig(append([]Option{WithExporter(noneExporter{})}, tt.opts...), envOf(tt.env))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var warnings []string
			for _, w := range c.warnings {
				warnings = append(warnings, w.Error())
			}
			if tt.warning != "" && (len(warnings) != 1 || warnings[0] != tt.warning) || tt.warning == "" && len(warnings) != 0 {
				t.Errorf("warnings %q, want %q", warnings, tt.warning)
			}
			if c.window != tt.window || c.cpuDuration != tt.cpu {
				t.Errorf("window %s, CPU recording %s; want %s and %s", c.window, c.cpuDuration, tt.window, tt.cpu)
			}
		})
	}
}
