// Package splunk encodes windows as the profiling logs of Splunk AlwaysOn
// Profiling.
//
// Splunk Observability ingests profiling data as OTLP logs following the
// "Profiling ResourceLogs Message" section of Splunk's semantic
// conventions, in the pprof-gzip-base64 format its Java and Node.js
// profilers emit. [Encode] builds such a request from the OTLP profiles
// request of a window, and [Split] divides one that is too large. The
// package exporters/splunk sends the requests over OTLP/gRPC
// (internal/export/logsgrpc), with its retries.
//
// Encode reads the OTLP request back into pprof profiles with package
// pprofconv, the one conversion from OTLP the project has, and writes the
// records' pprof bodies from those. The CPU profile's cpu/nanoseconds,
// which the OTLP encoding leaves out when it is samples/count times the
// period, comes back from the period as the runtime wrote it.
//
// [ConfigFromEnv] and [Config] serve the profiler's own Splunk mode until
// it uses exporters/splunk, which reads the variables itself.
//
// # Records
//
// A request holds one ResourceLogs carrying the profiler's resource (one per
// resource of the OTLP request), one ScopeLogs with scope otel.profiling
// version 0.1.0, and at most two log records per window:
// profiling.data.type cpu, from the CPU profile, and allocation, from the
// heap profile, which the profiler collects when memory profiling is on
// (SPLUNK_PROFILER_MEMORY_ENABLED). Each
// record has the attributes com.splunk.sourcetype=otel.profiling,
// profiling.data.type, profiling.data.format=pprof-gzip-base64 and
// profiling.data.total.frame.count, and a string body: the standard base64
// of the gzipped profile.proto.
//
// The record's time is the midpoint of the time its profile covers (the
// window, or the part of it a CPU profile under a duty cycle recorded:
// each OTLP Profile's time_unix_nano and duration_nano), the same instant
// as the samples' source.event.time; its observed time is when the
// profiler read the runtime's data, the latest end of the request's
// profiles: the window's end, or the CPU profile's when the request holds
// nothing else.
//
// profiling.data.total.frame.count is the sum, over the pprof samples in
// the body, of the frames of each sample's stack as a stack trace would
// print them: every inlined call counts as a frame, and a location without
// symbols as one. The Java and Node.js profilers count the same way (frames
// per emitted sample), and they have no inlining to tell apart.
//
// # Samples
//
// Splunk's profilers emit one pprof sample per observed stack. Go's CPU
// profile instead aggregates a window: one sample per distinct stack and
// label set, with the number of times it was seen. A backend that counts
// samples would then weigh a stack seen 300 times like one seen once, so
// the cpu record writes a stack seen n times as n identical samples, each
// with a count of 1 and its share of the CPU time (the runtime's two
// values, samples/count and cpu/nanoseconds, are kept, so the body still
// opens in go tool pprof with the right totals). Identical samples cost
// little after gzip.
//
// The allocation record has one sample per stack that allocated during the
// window, with a single value, allocationSize in bytes: the stack's
// alloc_space delta, the runtime's estimate of the bytes it allocated.
// Bytes compare the weight of allocations as the conventions ask, and the
// single value is what Splunk's Java profiler writes. The heap profile is
// sampled (runtime.MemProfileRate, 512 KiB by default), which its period
// records.
//
// Every sample carries these labels:
//
//   - source.event.time (int64): the midpoint of the record's time range
//     in Unix milliseconds, the same for every sample of a record. The runtime
//     does not timestamp CPU samples, only the window they fall in; the
//     midpoint is the estimate that is never off by more than half a
//     window, where the start or the end can be off by a whole window. The
//     heap profile is itself as of the last garbage collection, so its
//     window is shifted by up to a GC cycle; the same midpoint is used.
//   - source.event.period (int64, cpu only): the CPU profile's sampling
//     period in milliseconds, 10 at the runtime's 100 Hz.
//   - trace_id and span_id (strings, lower-case hex): copied from the pprof
//     labels that package labels sets while a sampled span runs, so they
//     are present exactly when the sample was taken inside a span. The
//     runtime records labels on CPU samples only, so allocation samples
//     never carry them.
//   - thread.stack.truncated="true" when the runtime probably cut the
//     stack: it keeps at most 64 frames of a CPU sample (maxCPUProfStack)
//     and GODEBUG=profstackdepth frames, 128 by default, of a heap sample,
//     counting inlined calls, and cuts the outermost frames. A stack of
//     exactly that depth is marked, as the runtime does not say whether
//     it cut; a stack that happens to be exactly that deep without a cut is
//     marked too.
//   - every other pprof label of the sample, as the application set it.
//
// thread.id, thread.name and thread.os.id are left out: a goroutine is not
// a thread, the CPU profile records neither the goroutine nor the OS thread
// of a sample, and no value would be true.
//
// # Call stack interval
//
// In Splunk's Java profiler SPLUNK_PROFILER_CALL_STACK_INTERVAL is how
// often a call stack is taken of every thread. Go's CPU profiler already
// samples running goroutines 100 times a CPU second on a signal timer;
// runtime/pprof fixes that rate, and lowering it to one sample every few
// seconds would leave nothing to see. The variable therefore sets the
// collection window: how often stacks are gathered and sent, and so the
// resolution of source.event.time. Its default, 10 seconds, is Java's.
package splunk
