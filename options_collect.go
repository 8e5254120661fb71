package profiler

import "time"

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
