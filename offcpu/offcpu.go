// Package offcpu links the off-CPU profile into a program that uses the
// profiler. It has no API: import it for its side effect,
//
//	import _ "github.com/pprofotel/profiler/offcpu"
//
// and ask for [profiler.OffCPUProfile] (or PPROFOTEL_PROFILES=...,offcpu).
// Without the import, Start refuses OffCPUProfile when an option asks for
// it, and leaves it out with a warning when the environment does.
//
// The profile is read from the runtime's execution trace with
// golang.org/x/exp/trace, which adds about half a megabyte to a binary.
// Keeping it behind this import spares that to every program that does
// not ask for the profile, as package time/tzdata does for its database.
//
// With the off-CPU profile comes the slow-request profile (slowrequests):
// for every request slower than [profiler.WithSlowRequestThreshold], where
// its wall time went, on CPU, off CPU and runnable, by stack, linked to
// its span (docs/slow-requests.md).
package offcpu

import (
	"time"

	"github.com/pprofotel/profiler/internal/collect"
	recorder "github.com/pprofotel/profiler/internal/collect/offcpu"
)

func init() {
	collect.RegisterOffCPU(func(now time.Time, cfg collect.RecorderConfig) collect.Recorder {
		return recorder.Start(now, recorder.Config{Logger: cfg.Logger, Stats: &cfg.Omissions.OffCPU, SlowThreshold: cfg.SlowThreshold, Stretches: cfg.Stretches})
	}, recorder.SetDutyCycle)
}
