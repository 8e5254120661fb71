// Package collect reads the runtime's profiles once per window and turns the
// cumulative ones into deltas.
//
// The runtime keeps heap allocations, mutex contention and blocking as
// totals since the process started. The profiler reports what happened in
// each window instead (OTLP delta temporality), so the collector keeps, per
// profile, the values it reported last for every stack and subtracts them.
// The in-use heap, the goroutine and the goroutine-leak profiles are
// snapshots and pass through; the CPU profile is recorded per window and
// needs no subtraction. A profile too costly to read every window (the
// goroutine-leak profile, whose every read is a full garbage collection)
// has an Interval: it is read in the first window, every nth after it and
// at Stop. Profiles are read in the table's order, and the goroutine-leak
// profile is its last entry, so that its garbage collection does not
// delay the others' reads.
//
// Profiles is the one table of runtime profiles: one Descriptor per
// profile, with its shape (which values are cumulative), its default, the
// runtime rate it needs, whether this Go provides it, where it is read
// from (runtime/pprof, or a Recorder of the profiler's own: the off-CPU
// profile, from the execution trace) and how often. The Collector and the
// root package's ProfileType both derive from it, so a new profile type is
// one entry there.
package collect
