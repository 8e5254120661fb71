// Package offcpu measures where goroutines wait, from the runtime's
// execution trace.
//
// The Go runtime records in its execution trace every time a goroutine
// stops running (it blocks on a channel, a select, a lock, the network, a
// sleep, a system call, or is preempted) and every time it runs again, with
// the goroutine's stack and a timestamp. A Recorder runs the trace's flight
// recorder (runtime/trace.FlightRecorder) for a share of every cycle, the
// duty cycle, reads what it recorded with golang.org/x/exp/trace, and turns
// each wait into an event, the time it began and how long it lasted, of
// the sample of its kind: the blocking stack, the reason as the trace
// names it, and the span active on the goroutine.
//
// What counts as a wait: a goroutine seen running inside a traced stretch
// that then stops; the wait lasts until it runs again, so it includes the
// time spent runnable after being woken. A wait still open when the stretch
// ends counts up to that end. A goroutine that was already waiting when the
// stretch began adds nothing to it: parked-forever goroutines and idle pool
// workers that did not run in the stretch never appear, and one that did
// run appears only for the time since. The runtime's own goroutines (GC
// workers, the background sweeper) are left out.
//
// Cost is bounded four ways. The trace runs only for the duty cycle's
// share of the time. A stretch is read while it runs, in chunks: every
// poll the recorder asks the flight recorder for what it holds, which ends
// the runtime's generation under way (the one part of the flight
// recorder's memory its MaxBytes does not bound), and hands the parser
// only the generations it has not read yet (chunkWriter). The poll is
// shortened so that a chunk is about an eighth of MaxTraceBytes at the
// rate the last one showed (10 to 250 ms), and the flight recorder keeps
// about a chunk. Third, a stretch reads at most MaxTraceBytes in all and
// a chunk at most a quarter of it, whole generations only: a stretch that
// would read more ends there. Generations the flight recorder dropped
// before they were read (the parser fell behind the trace) are a gap,
// read around. Fourth, a window keeps at most MaxWaits waits, beyond which
// reading stops at that event, as though the stretch had ended there.
// A stretch cut any of these ways is counted (Stats.Truncated). Values are
// scaled by the window's length over the time traced in it (a whole
// stretch's wall-clock time, a cut one's time read, gaps left out), so that
// a window's total estimates the waiting in the whole window; at a 100%
// duty cycle the scale is about 1. Each stretch is as long as
// MaxTraceBytes holds at the rate last seen (the first, which measures
// it, at most a second), with the rest of its cycle shortened alike, so
// that the duty cycle holds.
//
// The recorder's own waits, while it sleeps between polls, are left out.
//
// Spans: package labels writes a runtime/trace log record (category
// labels.TraceLogCategory) on the goroutine when a span's Start gives it
// the span's labels and when its End gives it back the ones before, while
// the trace is on; each record names the span the goroutine enters and
// the one it leaves. A goroutine created inside a span belongs to it as
// well, as its pprof labels do. A goroutine that was already running when
// the stretch began is in a span the stretch cannot see yet: its waits
// stay pending until its first record, and are then linked to the span
// that record says it leaves; those of a goroutine with no record until
// the stretch ends are sent without a link.
package offcpu
