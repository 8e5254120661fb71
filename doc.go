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
// Every period (60 s by default) the profiler ends a window: it stops and
// restarts the CPU profile, reads the heap, goroutine, mutex and block
// profiles that are enabled, turns the cumulative ones into what happened
// during the window, and sends all of them in one OTLP
// ExportProfilesServiceRequest (profiles v1development) with one shared
// dictionary.
//
// # What a window holds
//
// Each runtime profile becomes one ScopeProfiles, and each of its sample
// types one Profile:
//
//   - cpu: samples/count (period cpu/nanoseconds) recorded during the
//     window; cpu/nanoseconds, which is samples times the period, is not
//     sent.
//   - heap: alloc_objects and alloc_space allocated during the window;
//     inuse_objects and inuse_space live at the window's end (as of the
//     last garbage collection, as the runtime reports them).
//   - goroutine: goroutines at the window's end.
//   - mutex: mutex_contentions and mutex_delay during the window; block:
//     block_contentions and block_delay, so that the two are distinct
//     profiles by their sample and period types.
//
// The scope attribute and the Profile attribute "pprofotel.profile.name"
// (cpu, heap, goroutine, mutex or block) name the runtime profile. Numeric
// pprof labels (the heap profile's object sizes) are not sent.
//
// # Configuration
//
// Options passed to Start win over environment variables, which win over
// the defaults. The environment variables are those of the OTLP exporter
// specification (OTEL_EXPORTER_OTLP_* and OTEL_EXPORTER_OTLP_PROFILES_*),
// OTEL_SDK_DISABLED, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, and the
// profiler's own PPROFOTEL_* variables; README.md lists every one with its
// default.
//
// # Trace links
//
// Package labels wraps a TracerProvider so that CPU and goroutine samples
// taken inside a span carry its trace and span ids; the profiler sends them
// as OTLP links.
package profiler
