// Package collect reads the runtime's profiles once per window and turns the
// cumulative ones into deltas.
//
// The runtime keeps heap allocations, mutex contention and blocking as
// totals since the process started. The profiler reports what happened in
// each window instead (OTLP delta temporality), so the collector keeps, per
// profile, the values it reported last for every stack and subtracts them.
// The in-use heap and the goroutine profile are snapshots and pass through;
// the CPU profile is recorded per window and needs no subtraction.
package collect
