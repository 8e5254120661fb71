package profiler

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/pprofotel/profiler/internal/collect"
)

// TestCollectSettings resolves the collection settings from options,
// variables and defaults.
func TestCollectSettings(t *testing.T) {
	maxGoroutines := func(c *config) any { return c.maxGoroutines }
	cpuDuration := func(c *config) any { return c.cpuDuration }
	slowThreshold := func(c *config) any { return c.slowThreshold }
	maxRoutes := func(c *config) any { return c.maxRoutes }
	tests := []struct {
		name string
		opts []Option
		env  map[string]string
		got  func(*config) any
		want any
	}{
		{"goroutines: default", nil, nil, maxGoroutines, collect.DefaultMaxGoroutines},
		{"goroutines: variable", nil, map[string]string{"PPROFOTEL_MAX_GOROUTINES": "500"}, maxGoroutines, 500},
		{"goroutines: variable 0 is no limit", nil, map[string]string{"PPROFOTEL_MAX_GOROUTINES": "0"}, maxGoroutines, 0},
		{"goroutines: option", []Option{WithMaxGoroutines(20_000)}, nil, maxGoroutines, 20_000},
		{"goroutines: option 0 is no limit", []Option{WithMaxGoroutines(0)}, nil, maxGoroutines, 0},
		{"goroutines: option wins", []Option{WithMaxGoroutines(7)}, map[string]string{"PPROFOTEL_MAX_GOROUTINES": "500"}, maxGoroutines, 7},
		// The option shadows the variable, which is then not validated.
		{"goroutines: option shadows an invalid variable", []Option{WithMaxGoroutines(7)}, map[string]string{"PPROFOTEL_MAX_GOROUTINES": "-1"}, maxGoroutines, 7},

		{"slow: default", nil, nil, slowThreshold, 100 * time.Millisecond},
		{"slow: variable", nil, map[string]string{"PPROFOTEL_SLOW_REQUEST_THRESHOLD": "250ms"}, slowThreshold, 250 * time.Millisecond},
		{"slow: option", []Option{WithSlowRequestThreshold(time.Second)}, nil, slowThreshold, time.Second},
		{"slow: option wins", []Option{WithSlowRequestThreshold(50 * time.Millisecond)}, map[string]string{"PPROFOTEL_SLOW_REQUEST_THRESHOLD": "1s"}, slowThreshold, 50 * time.Millisecond},
		{"slow: option shadows an invalid variable", []Option{WithSlowRequestThreshold(50 * time.Millisecond)}, map[string]string{"PPROFOTEL_SLOW_REQUEST_THRESHOLD": "x"}, slowThreshold, 50 * time.Millisecond},
		{"routes: default", nil, nil, maxRoutes, 100},
		{"routes: variable", nil, map[string]string{"PPROFOTEL_MAX_ROUTES": "250"}, maxRoutes, 250},
		{"routes: option", []Option{WithMaxRoutes(10_000)}, nil, maxRoutes, 10_000},
		{"routes: option wins", []Option{WithMaxRoutes(1)}, map[string]string{"PPROFOTEL_MAX_ROUTES": "250"}, maxRoutes, 1},
		{"routes: option shadows an invalid variable", []Option{WithMaxRoutes(3)}, map[string]string{"PPROFOTEL_MAX_ROUTES": "0"}, maxRoutes, 3},

		{"cpu: default, 17% of the window", nil, nil, cpuDuration, 10200 * time.Millisecond},
		{"cpu: default follows the window", []Option{WithWindow(30 * time.Second)}, nil, cpuDuration, 5100 * time.Millisecond},
		{"cpu: default follows PPROFOTEL_WINDOW", nil, map[string]string{"PPROFOTEL_WINDOW": "10s"}, cpuDuration, 1700 * time.Millisecond},
		{"cpu: variable", nil, map[string]string{"PPROFOTEL_CPU_DUTY_CYCLE": "25"}, cpuDuration, 15 * time.Second},
		{"cpu: variable, continuous", nil, map[string]string{"PPROFOTEL_CPU_DUTY_CYCLE": "100"}, cpuDuration, time.Minute},
		{"cpu: option", []Option{WithCPUDutyCycle(50)}, nil, cpuDuration, 30 * time.Second},
		{"cpu: option wins", []Option{WithCPUDutyCycle(10)}, map[string]string{"PPROFOTEL_CPU_DUTY_CYCLE": "25"}, cpuDuration, 6 * time.Second},
		{"cpu: option shadows an invalid variable", []Option{WithCPUDutyCycle(10)}, map[string]string{"PPROFOTEL_CPU_DUTY_CYCLE": "x"}, cpuDuration, 6 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.got(mustConfig(t, tt.opts, tt.env)); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestCollectSettingsErrors: an invalid option fails Start, naming it and
// its value; an invalid variable is warned about, naming it and its value,
// and ignored.
func TestCollectSettingsErrors(t *testing.T) {
	tests := []struct {
		opts []Option
		env  map[string]string
		want string
	}{
		{[]Option{WithMaxGoroutines(-1)}, nil, "profiler: WithMaxGoroutines(-1): must not be negative (0 sets no limit)"},
		{nil, map[string]string{"PPROFOTEL_MAX_GOROUTINES": "-5"}, `profiler: PPROFOTEL_MAX_GOROUTINES="-5": must be a whole number of goroutines, 0 for no limit`},
		{nil, map[string]string{"PPROFOTEL_MAX_GOROUTINES": "1e4"}, `profiler: PPROFOTEL_MAX_GOROUTINES="1e4": must be a whole number of goroutines, 0 for no limit`},
		{[]Option{WithSlowRequestThreshold(time.Millisecond)}, nil, "profiler: WithSlowRequestThreshold(1ms): threshold must be at least 10ms"},
		{[]Option{WithSlowRequestThreshold(-time.Second)}, nil, "profiler: WithSlowRequestThreshold(-1s): threshold must be at least 10ms"},
		{nil, map[string]string{"PPROFOTEL_SLOW_REQUEST_THRESHOLD": "1ms"}, `profiler: PPROFOTEL_SLOW_REQUEST_THRESHOLD="1ms": threshold must be at least 10ms`},
		{[]Option{WithMaxRoutes(0)}, nil, "profiler: WithMaxRoutes(0): must be from 1 to 10000"},
		{[]Option{WithMaxRoutes(10_001)}, nil, "profiler: WithMaxRoutes(10001): must be from 1 to 10000"},
		{nil, map[string]string{"PPROFOTEL_MAX_ROUTES": "0"}, `profiler: PPROFOTEL_MAX_ROUTES="0": must be a whole number of routes from 1 to 10000`},
		{nil, map[string]string{"PPROFOTEL_MAX_ROUTES": "10001"}, `profiler: PPROFOTEL_MAX_ROUTES="10001": must be a whole number of routes from 1 to 10000`},
		{nil, map[string]string{"PPROFOTEL_MAX_ROUTES": "many"}, `profiler: PPROFOTEL_MAX_ROUTES="many": must be a whole number of routes from 1 to 10000`},
		{[]Option{WithCPUDutyCycle(0)}, nil, "profiler: WithCPUDutyCycle(0): duty cycle must be a percentage from 1 to 100"},
		{[]Option{WithCPUDutyCycle(-5)}, nil, "profiler: WithCPUDutyCycle(-5): duty cycle must be a percentage from 1 to 100"},
		{[]Option{WithCPUDutyCycle(101)}, nil, "profiler: WithCPUDutyCycle(101): duty cycle must be a percentage from 1 to 100"},
		{nil, map[string]string{"PPROFOTEL_CPU_DUTY_CYCLE": "101"}, `profiler: PPROFOTEL_CPU_DUTY_CYCLE="101": duty cycle must be a percentage from 1 to 100`},
		{nil, map[string]string{"PPROFOTEL_CPU_DUTY_CYCLE": "0"}, `profiler: PPROFOTEL_CPU_DUTY_CYCLE="0": duty cycle must be a percentage from 1 to 100`},
		{nil, map[string]string{"PPROFOTEL_CPU_DUTY_CYCLE": "10%"}, `profiler: PPROFOTEL_CPU_DUTY_CYCLE="10%": duty cycle must be a percentage from 1 to 100`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			c, err := newConfig(append([]Option{WithExporter(noneExporter{})}, tt.opts...), envOf(tt.env))
			if len(tt.opts) > 0 {
				// An invalid option fails Start.
				if err == nil || err.Error() != tt.want {
					t.Errorf("error = %v, want %q", err, tt.want)
				}
				return
			}
			// An invalid variable is warned about and ignored.
			if err != nil {
				t.Fatalf("error = %v, want a warning %q", err, tt.want)
			}
			if len(c.warnings) != 1 || c.warnings[0].Error() != tt.want+"; ignored" {
				t.Errorf("warnings = %v, want [%q]", c.warnings, tt.want+"; ignored")
			}
			if c.maxGoroutines != collect.DefaultMaxGoroutines || c.cpuDuration != c.window*defaultCPUDuty/100 || c.maxRoutes != 100 {
				t.Errorf("max goroutines %d, CPU duration %v, max routes %d: want the defaults", c.maxGoroutines, c.cpuDuration, c.maxRoutes)
			}
		})
	}
}

// TestGoroutineProfilesSkipped runs the profiler with the goroutine limit
// below the number of running goroutines, and with no limit: the first
// skips every goroutine profile and counts it in Stats and in the metric,
// the second skips none.
func TestGoroutineProfilesSkipped(t *testing.T) {
	for _, tt := range []struct {
		name        string
		limit       int
		wantSkipped bool
	}{
		{"limit below the goroutines", 1, true},
		{"no limit", 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newReceiver()
			endpoint := startReceiver(t, "http", r)
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			defer mp.Shutdown(context.Background())
			p, err := Start(shortWindows(), WithExporter(httpExporter(t, endpoint+"/v1development/profiles")),
				WithProfileTypes(GoroutineProfile, HeapProfile), WithWindow(10*time.Millisecond),
				WithMaxGoroutines(tt.limit), WithMeterProvider(mp), WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatal(err)
			}
			poll(t, "three windows exported", func() bool { return p.Stats().WindowsExported >= 3 })
			before := p.Stats().GoroutineProfilesSkipped
			metrics, units := readMetrics(t, reader)
			after := p.Stats().GoroutineProfilesSkipped
			if err := p.Stop(stopContext(t)); err != nil {
				t.Fatal(err)
			}
			if units["pprofotel.goroutine_profiles.skipped"] != "{window}" {
				t.Errorf("%s: unit %q, want {window}", "pprofotel.goroutine_profiles.skipped", units["pprofotel.goroutine_profiles.skipped"])
			}
			if v := metrics["pprofotel.goroutine_profiles.skipped"]; v < float64(before) || v > float64(after) {
				t.Errorf("%s = %v, Stats said %d then %d", "pprofotel.goroutine_profiles.skipped", v, before, after)
			}
			s := p.Stats()
			var withGoroutines int
			r.mu.Lock()
			for _, req := range r.requests {
				if slices.Contains(scopeNames(req), "goroutine") {
					withGoroutines++
				}
			}
			n := int64(len(r.requests))
			r.mu.Unlock()
			if tt.wantSkipped {
				// Every window was collected above the limit.
				if s.GoroutineProfilesSkipped != s.WindowsCollected || withGoroutines != 0 {
					t.Errorf("skipped %d of %d windows' goroutine profiles, %d sent; want all skipped",
						s.GoroutineProfilesSkipped, s.WindowsCollected, withGoroutines)
				}
			} else if s.GoroutineProfilesSkipped != 0 || int64(withGoroutines) != n {
				t.Errorf("skipped %d goroutine profiles, %d of %d requests hold one; want none skipped",
					s.GoroutineProfilesSkipped, withGoroutines, n)
			}
		})
	}
}
