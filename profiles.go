package profiler

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pprofotel/profiler/internal/collect"
)

// ProfileType selects one of the runtime profiles the profiler collects.
// The numeric order of the constants is the order in which profiles are
// collected and exported. Each is one entry of the profiler's table of
// runtime profiles, from which its name, its default, the runtime rate it
// sets and restores, whether this Go provides it, and how it is read all
// derive.
type ProfileType int

// The profile types, spelled in PPROFOTEL_PROFILES as their String values.
const (
	// CPUProfile samples on-CPU stacks during the share of each window
	// that WithCPUDutyCycle sets (all of it at 100).
	CPUProfile ProfileType = iota
	// HeapProfile reports allocations made during the window and the
	// memory still in use at its end.
	HeapProfile
	// GoroutineProfile reports the stacks of all goroutines at the end of
	// the window.
	GoroutineProfile
	// MutexProfile reports contended mutexes; see [WithMutexProfileFraction].
	MutexProfile
	// BlockProfile reports goroutines blocked on synchronisation
	// primitives; see [WithBlockProfileRate].
	BlockProfile
	// OffCPUProfile reports where goroutines waited (channels, locks,
	// I/O, sleeps, system calls, the scheduler), from the runtime's
	// execution trace, traced a share of every window; see
	// [WithOffCPUDutyCycle]. Its trace parser is linked in by importing
	// package github.com/pprofotel/profiler/offcpu; without it Start
	// fails when an option asks for the profile. While it traces it holds
	// runtime/trace.Start's place and leaves the flight recorder to the
	// application: an application's trace.Start fails until the stretch
	// ends (at most a second at the defaults), and one made first has the
	// stretch skipped, as has a process with more than 50,000 goroutines
	// ([Stats].OffCPUSkipped).
	OffCPUProfile
	// GoroutineLeakProfile reports the goroutines leaked so far: blocked
	// for good on a channel or a sync primitive that no other goroutine
	// can reach. Reading it runs a full garbage collection first, so it
	// is taken in the first window, then at most once per
	// [WithGoroutineLeakInterval] (5 minutes by default), and at Stop.
	// It needs Go 1.27 or later (or Go 1.26 built with
	// GOEXPERIMENT=goroutineleakprofile): elsewhere Start fails when it is
	// asked for; see [ProfileType.Available].
	GoroutineLeakProfile

	numProfileTypes = iota
)

// String returns the name used for t in PPROFOTEL_PROFILES: "cpu", "heap",
// "goroutine", "mutex", "block", "offcpu" or "goroutineleak".
func (t ProfileType) String() string {
	if t.valid() {
		return t.descriptor().Name
	}
	return "ProfileType(" + strconv.Itoa(int(t)) + ")"
}

func (t ProfileType) valid() bool { return t >= 0 && t < numProfileTypes }

// descriptor returns t's entry of the profile table; t must be valid.
func (t ProfileType) descriptor() *collect.Descriptor { return &collect.Profiles[t] }

// parseProfileType maps a name from PPROFOTEL_PROFILES to its type. Case is
// ignored so that "CPU" and "cpu" mean the same.
func parseProfileType(s string) (ProfileType, bool) {
	for t := range ProfileType(numProfileTypes) {
		if strings.EqualFold(s, t.descriptor().Name) {
			return t, true
		}
	}
	return 0, false
}

// defaultProfileTypes are the types whose descriptor says they run by
// default. Mutex and block profiling change runtime sampling rates and are
// opt-in.
func defaultProfileTypes() []ProfileType {
	var types []ProfileType
	for t := range ProfileType(numProfileTypes) {
		if t.descriptor().Default {
			types = append(types, t)
		}
	}
	return types
}

// Available reports why the running Go cannot provide t, and nil when it
// can: Start fails when asked for a type that is not available. An
// application that wants a profile only where the Go it runs on offers it
// asks for the types whose Available is nil.
func (t ProfileType) Available() error {
	if !t.valid() {
		return fmt.Errorf("profiler: unknown profile type %s", t)
	}
	if avail := t.descriptor().Available; avail != nil {
		if err := avail(); err != nil {
			return fmt.Errorf("profiler: profile type %s: %w", t, err)
		}
	}
	return nil
}

// checkAvailable reports the first of types this Go cannot provide.
func checkAvailable(types []ProfileType) error {
	for _, t := range types {
		if err := t.Available(); err != nil {
			return err
		}
	}
	return nil
}
