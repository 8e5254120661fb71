// Package offcpu measures where goroutines wait, from the runtime's
// execution trace.
//
// The Go runtime records in its execution trace every time a goroutine
// stops running (it blocks on a channel, a select, a lock, the network, a
// sleep, a system call, or is preempted) and every time it runs again, with
// the goroutine's stack and a timestamp. A Recorder subscribes to the
// trace with runtime/trace.Start for a share of every cycle, the duty
// cycle, reads what it receives with golang.org/x/exp/trace, and turns
// each wait into an event, the time it began and how long it lasted, of
// the sample of its kind: the blocking stack, the reason as the trace
// names it, and the span active on the goroutine.
//
// Sharing the tracer: the runtime allows one trace.Start and one flight
// recorder (runtime/trace.FlightRecorder) at a time, side by side. The
// Recorder takes trace.Start's place and leaves the flight recorder to
// the application, whose flight recorder then starts, snapshots and
// stops at any time, and is traced along. An application's trace.Start
// is the one conflict left: while it runs, stretches are skipped
// (Stats.Skipped); while a stretch runs, it fails with "execution tracer
// already enabled", for at most the stretch's length (a second at the
// defaults). trace.Stop has no handle: an application that calls it
// without a trace.Start of its own ends the Recorder's stretch early, and
// the Recorder then takes care not to stop the trace a second time, under
// the application's flight recorder (stopTrace).
//
// What counts as a wait: a goroutine seen running inside a traced stretch
// that then stops; the wait lasts until it runs again, so it includes the
// time spent runnable after being woken. A wait still open when the
// stretch ends counts up to that end. A goroutine that was already waiting
// when the stretch began adds nothing to it: parked-forever goroutines and
// idle pool workers that did not run in the stretch never appear, and one
// that did run appears only for the time since. The runtime's own
// goroutines (the garbage collector's workers, the sweeper, the
// scavenger, the tracer's) and the reader runtime/trace runs for the
// trace are left out, whatever they wait for: on a busy machine the
// sweeper alone yields tens of thousands of times a second (skipStack).
//
// Cost is bounded five ways. The trace runs only for the duty cycle's
// share of the time. The parser reads whole generations only; the runtime
// ends one about every second and when the trace stops, and each is
// parsed as soon as it ends, while the stretch runs (traceSink). Third, a
// stretch keeps at most MaxTraceBytes of trace: once it holds three
// quarters of it the stretch ends, which ends the generation under way,
// and a generation that would cross MaxTraceBytes before it ends is
// dropped whole. Each stretch is as long as three quarters of
// MaxTraceBytes holds at the rate last seen (the first, which measures
// it, at most a second), with the rest of its cycle shortened alike, so
// that the duty cycle holds. Fourth, a window keeps at most MaxWaits
// waits, beyond which reading stops at that event, as though the stretch
// had ended there. A stretch cut any of these ways is counted
// (Stats.Truncated). Values are scaled by the window's length over the
// time traced in it (a whole stretch's wall-clock time, a cut one's time
// read), so that a window's total estimates the waiting in the whole
// window; at a 100% duty cycle the scale is about 1. Fifth, no stretch is
// traced with more than MaxTracedGoroutines goroutines: every generation's end
// writes the state of every goroutine that did not run, and the runtime
// and the parser keep state for each, about 1 KB a goroutine at the peak
// whatever MaxTraceBytes (Stats.Skipped).
//
// Stalls: starting the tracer stops the world once (runtime.StartTrace),
// so every stretch pauses the application twice (its short trace first,
// see Slow requests), as a garbage collection does; ending a generation and stopping the trace preempt the
// processors one at a time. The recorder bounds how often (at most once
// a cycle, never while the window is full or the tracer already runs for
// the application's flight recorder), not how long: that is the
// runtime's, and under contention for the CPUs it is as long as the
// operating system keeps a thread from running.
//
// The recorder's own waits, while it waits for the trace, are left out.
//
// Spans: package labels writes a runtime/trace log record (category
// labels.TraceLogCategory) on the goroutine when a span's Start gives it
// the span's labels and when its End gives it back the ones before, while
// the trace is on; each record names the span the goroutine enters and
// the one it leaves, and the route of the request it is under, which
// the wrapper writes again when a request is renamed as it ends. A
// goroutine created inside a span belongs to it as well, as its pprof
// labels do, and every wait of a request's goroutines, kept before or
// after such a record, takes the request's last route. A goroutine that was already running when
// the stretch began is in a span the stretch cannot see yet: its waits
// stay pending until its first record, and are then linked to the span
// that record says it leaves; those of a goroutine with no record until
// the stretch ends are sent without a link.
//
// # Slow requests
//
// The recorder also explains slow requests (docs/slow-requests.md). The
// request tracker (package internal/collect/requests) reports a local
// root span that has run half the slow-request threshold (Watch) and its
// end (Ended). While watched requests live, a duty stretch goes on past
// its length (its waits still end there) or, while the recorder rests, a
// trace of their own runs (no waits kept), lingering after the last one
// ends for as long as that costs less than a start, at most 250 ms; both
// within a budget of trace bytes, 128 KiB a second
// and 2 MiB at once, each start charged 32 KiB and its short first
// trace. One trace serves every request watched while it runs; once the
// budget is spent it goes on, in debt up to a quarter of the burst, until
// the requests watched until then end, and for requests of a route
// with fewer than 10 explained in the window. At most 16 requests are
// watched at once (32 for routes none of which is watched) and 1,000
// explained a window, the slowest 10 of each
// route first, then the slowest; what is not explained is counted
// (Stats.SlowRequestsDropped).
//
// The runtime writes the stack of a goroutine already waiting when a trace
// starts only at the end of the trace's first generation, and only if it
// did not run until then (go.dev/issue/65634): a request blocked before the
// trace and woken within its first second would have no stack for its
// wait. So every trace, a duty stretch's too (a request may turn long
// during it), is preceded by a short one, started and stopped at once,
// whose end writes every waiting goroutine's stack; the wait's reason is
// read from where it parked. A wait one trace's end cut and the next found
// open at the same place is one wait. The next trace does not wait for the
// last of one to be read: at a collection with watched requests live it
// starts first, and at a stretch's end the tracker's reports are taken in
// while the stretch is read (reading.poll), a watch trace started for a
// request turned long meanwhile.
//
// The reading follows the state of every goroutine (running, waiting with
// its reason and stack, runnable) and keeps the intervals of the
// goroutines of watched requests, by the local root span the label
// wrapper's records name, and, until a record names their span, of the
// goroutines whose span is not known yet (at most 32,768 intervals in
// all). A request that ended at or over the threshold is explained from
// its goroutine's intervals (the goroutine that ended its span) over the
// span's time: each interval is an event of the sample of its state,
// reason and stack (a running interval's, the CPU profile's samples in it
// when the CPU profile runs, else where it stopped), and the part before the first interval kept is the
// state the trace found the goroutine in, marked before_trace, so that
// the values add up to the request's duration. That part is at most the
// threshold, or twice what the traces saw of the request: a request
// whose trace found its goroutine later (a trace started late, as the
// request ended, finds it past what made it slow) is dropped, not
// explained from the state of its last moments.
package offcpu
