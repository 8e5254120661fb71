// Package cputest burns CPU for tests that need CPU profile samples.
//
// A test that spins for a wall-clock duration gets few samples on a loaded
// machine, where the goroutine waits for a core most of that time. Spinning
// until the process has used a given amount of CPU time gives the CPU
// profiler the same number of ticks to sample however busy the machine is.
package cputest

import (
	"syscall"
	"time"
)

var sink uint64

// Spin keeps the calling goroutine busy until the process has used d of CPU
// time since the call, or until 20 times d of wall-clock time has passed, so
// that a machine starved of CPU ends the test rather than hangs it. Other
// busy goroutines of the process count towards d.
func Spin(d time.Duration) {
	start := processCPUTime()
	deadline := time.Now().Add(20 * d)
	x := sink
	for processCPUTime()-start < d && time.Now().Before(deadline) {
		for i := 0; i < 20000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink = x
}

func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
