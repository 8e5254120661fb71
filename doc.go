// Package profiler is an in-process continuous profiler for Go that sends
// the runtime's profiles as OpenTelemetry (OTLP) Profiles.
//
// One call in main turns it on:
//
//	p, err := profiler.Start(profiler.WithServiceName("checkout"))
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer p.Stop(context.Background())
//
// Every period (60 s by default, [WithPeriod]) the profiler ends a window:
// it ends the CPU profile, which records for a part of each window
// ([WithCPUProfileDuration]), reads the heap, goroutine, mutex, block and
// goroutine-leak profiles that are enabled ([WithProfileTypes]), turns the
// cumulative ones into what happened during the window, and sends all of
// them in one OTLP ExportProfilesServiceRequest (profiles v1development)
// with one shared dictionary. [Profiler.Stop] sends the last, partial
// window; [Profiler.Stats] counts what happened to every window.
//
// # What a window holds
//
// Each runtime profile becomes one ScopeProfiles, and each of its sample
// types one Profile:
//
//   - cpu: samples/count (period cpu/nanoseconds) recorded during a part
//     of the window, a sixth by default at a random offset, whose time
//     range the Profile states ([WithCPUProfileDuration]);
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
// warning naming it and its value is logged once. The environment
// variables are:
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
//   - OTEL_EXPORTER_OTLP_ENDPOINT: the OTLP base URL; over HTTP
//     "/v1development/profiles" is appended. Default
//     "http://localhost:4318" ("http://localhost:4317" for gRPC)
//     ([WithEndpoint], [WithEndpointURL]).
//   - OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT: the full profiles URL, used as
//     is.
//   - OTEL_EXPORTER_OTLP_PROTOCOL: "grpc", "http/protobuf" or "http/json".
//     Default "http/protobuf" ([WithProtocol]).
//   - OTEL_EXPORTER_OTLP_HEADERS: headers (gRPC metadata) as key=value
//     pairs ([WithHeaders]).
//   - OTEL_EXPORTER_OTLP_TIMEOUT: one export attempt, in milliseconds.
//     Default 10000 ([WithTimeout]).
//   - OTEL_EXPORTER_OTLP_COMPRESSION: "gzip" or "none". Default "none"
//     ([WithCompression]).
//   - OTEL_EXPORTER_OTLP_INSECURE: "true" for plaintext to a scheme-less
//     gRPC endpoint. Default false ([WithInsecure]).
//   - OTEL_EXPORTER_OTLP_CERTIFICATE: PEM file of the CA that signs the
//     receiver's certificate. Default: the system roots
//     ([WithTLSClientConfig]).
//   - OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE, OTEL_EXPORTER_OTLP_CLIENT_KEY:
//     PEM client certificate and its key, for mutual TLS.
//   - PPROFOTEL_ENABLED: "false" makes Start return a profiler that does
//     nothing; a value other than "true" or "false" is warned about and
//     leaves it on. Default true.
//   - PPROFOTEL_PERIOD: window length, a Go duration ("30s") of at least
//     [MinPeriod], 1s. Default 60s ([WithPeriod]).
//   - PPROFOTEL_PROFILES: comma list of cpu, heap, goroutine, mutex,
//     block, offcpu, goroutineleak. Default "cpu,heap,goroutine"
//     ([WithProfileTypes]). A type this program cannot provide (offcpu
//     without its import, goroutineleak before Go 1.27) is left out with
//     a warning; where an option asks for it, Start fails.
//   - PPROFOTEL_MUTEX_FRACTION: mutex profile fraction while mutex
//     profiling is on. Default 10 ([WithMutexProfileFraction]).
//   - PPROFOTEL_BLOCK_RATE: block profile rate in nanoseconds while block
//     profiling is on. Default 10000 ([WithBlockProfileRate]).
//   - PPROFOTEL_OFFCPU_DUTY: percentage of every cycle (the window, at most
//     10 s) during which the off-CPU profile traces. Default 10
//     ([WithOffCPUDutyCycle]).
//   - PPROFOTEL_GOROUTINELEAK_INTERVAL: least time between two
//     goroutine-leak profiles, a Go duration. Default 5m
//     ([WithGoroutineLeakInterval]).
//   - PPROFOTEL_EXPORTER: "otlp", "file", "none" or "splunk". Default
//     "otlp" ([WithExporter]).
//   - PPROFOTEL_FILE_DIR: directory of the file exporter. Default
//     "pprofotel-profiles" under the temporary directory ([WithFileDir]).
//   - PPROFOTEL_FILE_FORMAT: "proto" or "json". Default "proto"
//     ([WithFileJSON]).
//   - PPROFOTEL_FILE_MAX_FILES, PPROFOTEL_FILE_MAX_BYTES: the file
//     exporter's retention; the oldest of its files are removed beyond
//     this many files or bytes, 0 for no limit. Default 1000 files and
//     1073741824 bytes (1 GiB) ([WithFileRetention]).
//   - PPROFOTEL_CPU_DURATION: how long the CPU profile records in each
//     window, a Go duration from [MinCPUProfileDuration], 100ms, up to the
//     period, which records continuously.
//     Default a sixth of the period, at a random offset in each window
//     ([WithCPUProfileDuration]).
//   - PPROFOTEL_MAX_GOROUTINES: above this many goroutines a window goes
//     without its goroutine profile; 0 sets no limit. Default 10000
//     ([WithMaxGoroutines]).
//   - PPROFOTEL_PROCESS_CONTEXT: "false" stops publishing the resource as
//     the process context that the OpenTelemetry eBPF profiler reads
//     (OTEP 4719, Linux amd64 and arm64 only). Default true
//     ([WithProcessContext]).
//   - SPLUNK_PROFILER_ENABLED: "true" sends profiles as Splunk AlwaysOn
//     Profiling logs ([ExporterSplunk]). Default false.
//   - SPLUNK_PROFILER_MEMORY_ENABLED: "true" adds allocations to them.
//     Default false.
//   - SPLUNK_PROFILER_LOGS_ENDPOINT: their OTLP/gRPC endpoint. Default
//     OTEL_EXPORTER_OTLP_ENDPOINT, else "http://localhost:4317".
//   - SPLUNK_PROFILER_CALL_STACK_INTERVAL: their window, in milliseconds
//     (at least 1000). Default 10000.
//
// Every OTEL_EXPORTER_OTLP_* variable above also has a per-signal form,
// OTEL_EXPORTER_OTLP_PROFILES_*, which wins over it. A variable set to a
// blank value counts as unset.
//
// # Errors
//
// Start fails with [ErrAlreadyRunning] while another profiler runs in the
// process. The error of [Profiler.Stop] holds an [*UndeliveredError] when
// windows could not be delivered. While it runs, the profiler hands its
// errors (windows not delivered, dropped or not converted) to otel.Handle,
// as the OpenTelemetry SDK's components do, and to slog as well only when
// [WithLogger] is given; warnings go to the logger alone.
//
// # Trace links
//
// Package labels wraps a TracerProvider so that CPU and goroutine samples
// taken inside a span, and leaked goroutines started inside one, carry its
// trace and span ids; the profiler sends them as OTLP links.
package profiler
