//go:build !linux

package testservice

import "time"

// threadCPU returns 0: only Linux gives a thread's CPU time cheaply, and
// the tests that read Request.CPU run on Linux.
func threadCPU() time.Duration { return 0 }
