package profiler

import (
	"testing"
	"time"
)

// allowShortDurations lowers the floors of the period, of the CPU
// profile's duration and of the retry intervals for the rest of t, so that
// a test runs its windows and retries in milliseconds. TestDurationFloors
// checks the floors themselves. The package's tests do not run in
// parallel, so nothing else reads the floors meanwhile.
func allowShortDurations(t *testing.T) {
	t.Helper()
	period, cpu, retry := minPeriod, minCPUDuration, minRetryInterval
	minPeriod, minCPUDuration, minRetryInterval = time.Millisecond, time.Millisecond, time.Millisecond
	t.Cleanup(func() { minPeriod, minCPUDuration, minRetryInterval = period, cpu, retry })
}

// TestDurationFloors checks MinPeriod and MinCPUProfileDuration at their
// edges, through an option (Start fails, naming it and its value) and
// through the variable (warned about, and the default applies).
func TestDurationFloors(t *testing.T) {
	if minPeriod != MinPeriod || minCPUDuration != MinCPUProfileDuration || minRetryInterval != MinRetryInterval {
		t.Fatalf("floors %s, %s and %s, want %s, %s and %s: a test lowered them and did not restore them",
			minPeriod, minCPUDuration, minRetryInterval, MinPeriod, MinCPUProfileDuration, MinRetryInterval)
	}
	tests := []struct {
		name    string
		opts    []Option
		env     map[string]string
		wantErr string // of newConfig, for an option
		warning string // for a variable
		period  time.Duration
		cpu     time.Duration
	}{
		{name: "period at the floor", opts: []Option{WithPeriod(time.Second)}, period: time.Second, cpu: time.Second / defaultCPUShare},
		{name: "period below the floor", opts: []Option{WithPeriod(time.Second - 1)},
			wantErr: "profiler: WithPeriod(999.999999ms): period must be at least 1s"},
		{name: "period variable at the floor", env: map[string]string{"PPROFOTEL_PERIOD": "1s"}, period: time.Second, cpu: time.Second / defaultCPUShare},
		{name: "period variable below the floor", env: map[string]string{"PPROFOTEL_PERIOD": "1ns"},
			warning: `profiler: PPROFOTEL_PERIOD="1ns": period must be at least 1s; ignored`, period: defaultPeriod, cpu: defaultPeriod / defaultCPUShare},
		{name: "CPU duration at the floor", opts: []Option{WithCPUProfileDuration(100 * time.Millisecond)}, period: defaultPeriod, cpu: 100 * time.Millisecond},
		{name: "CPU duration below the floor", opts: []Option{WithCPUProfileDuration(100*time.Millisecond - 1)},
			wantErr: "profiler: WithCPUProfileDuration(99.999999ms): CPU profile duration must be at least 100ms"},
		{name: "CPU duration variable at the floor", env: map[string]string{"PPROFOTEL_CPU_DURATION": "100ms"}, period: defaultPeriod, cpu: 100 * time.Millisecond},
		{name: "CPU duration variable below the floor", env: map[string]string{"PPROFOTEL_CPU_DURATION": "10ms"},
			warning: `profiler: PPROFOTEL_CPU_DURATION="10ms": CPU profile duration must be at least 100ms; ignored`,
			period:  defaultPeriod, cpu: defaultPeriod / defaultCPUShare},
		{name: "retry intervals at the floor", opts: []Option{WithRetry(RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond, MaxInterval: 100 * time.Millisecond})},
			period: defaultPeriod, cpu: defaultPeriod / defaultCPUShare},
		{name: "retry intervals of a nanosecond", opts: []Option{WithRetry(RetryConfig{Enabled: true, InitialInterval: 1, MaxInterval: 1})},
			wantErr: "profiler: WithRetry({Enabled:true InitialInterval:1ns MaxInterval:1ns MaxElapsedTime:0s}): InitialInterval and MaxInterval must be 0 (the default) or at least 100ms"},
		{name: "retry cap below the floor", opts: []Option{WithRetry(RetryConfig{Enabled: true, MaxInterval: 99 * time.Millisecond})},
			wantErr: "profiler: WithRetry({Enabled:true InitialInterval:0s MaxInterval:99ms MaxElapsedTime:0s}): InitialInterval and MaxInterval must be 0 (the default) or at least 100ms"},
		{name: "Splunk's interval below the floor", env: map[string]string{"PPROFOTEL_EXPORTER": "splunk", "SPLUNK_PROFILER_CALL_STACK_INTERVAL": "999"},
			warning: `profiler: SPLUNK_PROFILER_CALL_STACK_INTERVAL="999": the call stack interval must be at least 1000 milliseconds; ignored`,
			period:  10 * time.Second, cpu: 10 * time.Second / defaultCPUShare},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := newConfig(tt.opts, envOf(tt.env))
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
			if c.period != tt.period || c.cpuDuration != tt.cpu {
				t.Errorf("period %s, CPU duration %s; want %s and %s", c.period, c.cpuDuration, tt.period, tt.cpu)
			}
		})
	}
}
