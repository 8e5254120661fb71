package profiler

import (
	"fmt"
	"time"
)

// collectSettings is what the options on how each window is collected
// asked for; nil means not set in code.
type collectSettings struct {
	maxGoroutines *int
	cpuDuration   *time.Duration
}

// WithMaxGoroutines sets the number of running goroutines above which a
// window goes without its goroutine profile: the runtime writes that
// profile while the application's goroutines wait, for a time that grows
// with their number (about 6 µs per goroutine on the machine of
// benchmark/README.md, "Goroutine profile"). Skipped profiles are counted
// in Stats.GoroutineProfilesSkipped and logged; every window checks again.
// 0 sets no limit; a negative n is an error. The default is 10,000,
// overridden by PPROFOTEL_MAX_GOROUTINES.
func WithMaxGoroutines(n int) Option {
	return optionFunc(func(o *options) {
		if n < 0 {
			o.fail("WithMaxGoroutines", n, "must not be negative (0 sets no limit)")
			return
		}
		o.collect.maxGoroutines = &n
	})
}

// WithCPUProfileDuration sets how long the CPU profile records in each
// window: a duty cycle. The runtime's CPU profiler, which samples every
// thread 100 times a second, costs the application far more than anything
// else the profiler does, and that cost falls in proportion to d. Where in
// the window the recording falls is drawn at random for every window, so
// that work recurring with the period is not always missed. The exported
// CPU profile's time range and duration are the recorded ones, so rates
// computed from it stay true; the other profile types cover the whole
// window. d equal to the period records continuously, back to back; d must
// be at least MinCPUProfileDuration (100ms), which says why, and at most
// the period. The default is a sixth of the period (10s of the default
// 60s), overridden by PPROFOTEL_CPU_DURATION.
func WithCPUProfileDuration(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d < minCPUDuration {
			o.fail("WithCPUProfileDuration", d, fmt.Sprintf("CPU profile duration must be at least %s", minCPUDuration))
			return
		}
		o.collect.cpuDuration = &d
	})
}
