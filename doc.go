// Package profiler is an in-process continuous profiler for Go that sends
// the runtime's profiles as OpenTelemetry (OTLP) Profiles.
//
// One call in main turns it on; Stop, with a deadline, sends the last
// window:
//
//	p, err := profiler.Start(profiler.WithServiceName("checkout"))
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer func() {
//		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
//		defer cancel()
//		p.Stop(ctx)
//	}()
//
// Every window (60 s by default, [WithWindow]) the profiler ends the CPU
// profile, which records for a share of each window ([WithCPUDutyCycle]),
// reads the heap, goroutine, mutex, block and goroutine-leak profiles that
// are enabled ([WithProfileTypes]), turns the cumulative ones into what
// happened during the window, and hands all of them, as one OTLP
// ExportProfilesServiceRequest (profiles v1development) with one shared
// dictionary, to its [Exporter]. [Profiler.Stop] sends the last, partial
// window; [Profiler.Stats] counts what happened to every window.
//
// # Where windows go
//
// An [Exporter] sends them. The packages under
// github.com/pprofotel/profiler/exporters provide the usual ones, each
// with its options and environment variables: otlpprofilehttp and
// otlpprofilegrpc (OTLP to a Collector or any OTLP backend),
// otlpprofilefile (files that the pprofotel command turns into pprof and
// PGO profiles) and splunk (Splunk AlwaysOn Profiling logs). An
// application may write its own. Without [WithExporter], the environment
// chooses, as OpenTelemetry's autoexport does for traces: see
// OTEL_PROFILES_EXPORTER below.
//
// # What a window holds
//
// Each runtime profile becomes one ScopeProfiles, and each of its sample
// types one Profile:
//
//   - cpu: samples/count (period cpu/nanoseconds) recorded during a part
//     of the window, 17 % by default at a random offset, whose time
//     range the Profile states ([WithCPUDutyCycle]);
//     cpu/nanoseconds, which is samples times the period, is not sent.
//   - heap: alloc_objects and alloc_space allocated during the window;
//     inuse_objects and inuse_space live at the window's end (as of the
//     last garbage collection, as the runtime reports them).
//   - goroutine: goroutines at the window's end.
//   - mutex: mutex_contentions and mutex_delay during the window; block:
//     block_contentions and block_delay, so that the two are distinct
//     profiles by their sample and period types.
//   - offcpu (opt-in, and linked in by importing package
//     github.com/pprofotel/profiler/offcpu for its side effect):
//     off_cpu/nanoseconds, the time goroutines spent
//     waiting (channel, select, sync, network, sleep, syscall, preempted,
//     ... as the execution trace names it, in the sample attribute
//     "wait_reason"), by the stack where they blocked, linked to the span
//     active on the goroutine; one value and one timestamp (the wait's
//     start) per wait. The execution tracer runs a share of every window
//     ([WithOffCPUDutyCycle]) and values are scaled to the whole window.
//     With it comes slowrequests: wall/nanoseconds, for each request (a
//     local root span of a tracer wrapped by package labels) slower than
//     [WithSlowRequestThreshold], where its wall time went, by the state
//     of its goroutine ("goroutine_state": on_cpu, off_cpu with its
//     "wait_reason", runnable) and stack, linked to its span; the values
//     of a request add up to its duration. The tracer runs on, or starts,
//     while requests that ran half the threshold live, within a budget of
//     its own.
//   - goroutineleak: goroutineleak/count, the goroutines leaked so far
//     (blocked for good on a channel or sync primitive no other goroutine
//     can reach), with their labels, found at the window's end. Opt-in and
//     Go 1.27 only: each read runs a full garbage collection, so it is taken
//     in the first window, then once per [WithGoroutineLeakInterval] (5
//     minutes), and at Stop, after the window's other profiles.
//
// The scope attribute and the Profile attribute "pprofotel.profile.name"
// (cpu, heap, goroutine, mutex, block, offcpu or goroutineleak) name the
// runtime profile. Numeric pprof labels (the heap profile's object sizes)
// are not sent.
//
// # Configuration
//
// Options passed to [Start] win over environment variables, which win over
// the defaults. An invalid option is a programming error: Start fails with
// an error that names it and its value. An invalid variable never makes
// Start fail: as the OpenTelemetry specification asks, and as the
// OpenTelemetry Go SDK does, it is ignored (the next variable in line or
// the default applies; a boolean that is not "true" reads as false) and a
// warning naming it and its value is logged once. The profiler reads these
// variables; each exporter package lists its own:
//
//   - OTEL_SDK_DISABLED: "true" makes Start return a profiler that does
//     nothing (and no error). Default false.
//   - OTEL_CONFIG_FILE: not read (the configuration file's schema has no
//     profiles section); setting it logs a warning, and the other
//     variables still apply.
//   - OTEL_SERVICE_NAME: service.name ([WithServiceName] wins). Default
//     "unknown_service:<executable>".
//   - OTEL_RESOURCE_ATTRIBUTES: resource attributes as key=value pairs
//     separated by commas, values percent-encoded ([WithResource]).
//   - OTEL_PROFILES_EXPORTER: the exporter when [WithExporter] is not
//     given: "otlp" (the default), "none" (discard every window), "file"
//     or "splunk"; the last two only in a program that imports their
//     package (exporters/otlpprofilefile, exporters/splunk), and otherwise
//     warned about, the OTLP exporter being used. Package
//     exporters/autoexport reads it and the protocol below.
//   - OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL, else
//     OTEL_EXPORTER_OTLP_PROTOCOL: for "otlp", "http/protobuf" (the
//     default, package otlpprofilehttp), "http/json" (the same, with
//     OTLP/JSON bodies) or "grpc" (package otlpprofilegrpc). The exporter
//     package reads the endpoint, headers, TLS and the other
//     OTEL_EXPORTER_OTLP_* variables.
//   - PPROFOTEL_ENABLED: "false" makes Start return a profiler that does
//     nothing; a value other than "true" or "false" is warned about and
//     leaves it on. Default true.
//   - PPROFOTEL_WINDOW: window length, a Go duration ("30s") of at least
//     1s. Default 60s ([WithWindow]).
//   - PPROFOTEL_PROFILES: comma list of cpu, heap, goroutine, mutex, block,
//     offcpu, goroutineleak. Default "cpu,heap,goroutine" ([WithProfileTypes]).
//     An unknown name, or a type this program cannot provide (offcpu
//     without its import, goroutineleak before Go 1.27), is left out with
//     a warning and the other names stand; where an option asks for such
//     a type, Start fails.
//   - PPROFOTEL_CPU_DUTY_CYCLE: percentage of every window, 1 to 100,
//     during which the CPU profile records, at a random offset; 100
//     records continuously. Default 17 ([WithCPUDutyCycle]).
//   - PPROFOTEL_OFFCPU_DUTY_CYCLE: percentage of every cycle (the window,
//     at most 10 s) during which the off-CPU profile traces. Default 10
//     ([WithOffCPUDutyCycle]).
//   - PPROFOTEL_SLOW_REQUEST_THRESHOLD: least duration of a request that
//     the off-CPU profile explains as slow, a Go duration of at least 10ms.
//     Default 100ms ([WithSlowRequestThreshold]).
//   - PPROFOTEL_MUTEX_PROFILE_FRACTION: mutex profile fraction while
//     mutex profiling is on. Default 10 ([WithMutexProfileFraction]).
//   - PPROFOTEL_BLOCK_PROFILE_RATE: block profile rate in nanoseconds
//     while block profiling is on. Default 10000 ([WithBlockProfileRate]).
//   - PPROFOTEL_GOROUTINELEAK_INTERVAL: least time between two
//     goroutine-leak profiles, a Go duration. Default 5m
//     ([WithGoroutineLeakInterval]).
//   - PPROFOTEL_MAX_GOROUTINES: above this many goroutines a window goes
//     without its goroutine profile; 0 sets no limit. Default 10000
//     ([WithMaxGoroutines]).
//   - PPROFOTEL_MAX_ROUTES: the most distinct routes a window
//     carries, 1 to 10000; the requests of the others count under
//     "_other". Default 100 ([WithMaxRoutes]).
//   - PPROFOTEL_PROCESS_CONTEXT: "false" stops publishing the resource as
//     the process context that the OpenTelemetry eBPF profiler reads (OTEP
//     4719, with OTEP 4947's threadlocal.schema_version
//     "go_pprof_labels_v1"; Linux amd64 and arm64 only). Default true
//     ([WithProcessContext]).
//
// A variable set to a blank value counts as unset. Every other PPROFOTEL_
// variable set in the environment, but for those of the exporter and
// opamp packages, is warned about once by name, with the closest name
// the profiler reads when one is close. Four variables were renamed to
// the stem of their option and remote key, and the old names are still
// read, with a warning, when the new ones are not set, until release
// 0.2.0: PPROFOTEL_CPU_DUTY, PPROFOTEL_OFFCPU_DUTY,
// PPROFOTEL_MUTEX_FRACTION and PPROFOTEL_BLOCK_RATE. The older
// PPROFOTEL_PERIOD (now PPROFOTEL_WINDOW) and PPROFOTEL_CPU_DURATION (a
// duration, now the percentage PPROFOTEL_CPU_DUTY_CYCLE) are not read;
// their warning names what replaced them.
//
// # Errors
//
// Start fails with [ErrAlreadyRunning] while another profiler runs in the
// process. The error of [Profiler.Stop] holds an [*UndeliveredError] when
// windows could not be delivered. While it runs, the profiler logs
// through one logger ([WithLogger], else slog's default, which shows
// warnings and errors), in its format. Its errors (windows not delivered,
// dropped or not converted) go there too, unless the application has set
// an OpenTelemetry error handler (otel.SetErrorHandler): then they go to
// otel.Handle, as the OpenTelemetry SDK's components send theirs, and to
// the logger as well only when [WithLogger] is given.
//
// # Trace links
//
// Package labels wraps a TracerProvider so that CPU and goroutine samples
// taken inside a span, and leaked goroutines started inside one, carry its
// trace and span ids; the profiler sends them as OTLP links. Samples taken
// in a request (a local root span and the spans under it) also carry its
// route, the sample attribute "route" (the span's http.route, else
// its name), and every window counts the requests that ended in it by
// route (the "requests" profile): see docs/what-is-sent.md.
package profiler
