// Package otlp turns the decoded runtime profiles of one collection window
// into a single OTLP ExportProfilesServiceRequest
// (go.opentelemetry.io/proto/otlp/profiles/v1development).
//
// # Layout of a request
//
// A request holds one ResourceProfiles for the process and one ScopeProfiles
// per runtime profile (cpu, heap, goroutine, mutex, block, goroutineleak),
// in the order the inputs were given. A pprof profile carries several sample types in one
// message; OTLP gives each Profile a single sample type, so every pprof sample
// type becomes its own Profile, emitted in pprof order, and every Sample has
// exactly one value. otlpattr.SampleTypes says which sample_type and period_type each
// runtime sample type gets, and which are not sent because another one gives
// them exactly (the CPU profile's cpu/nanoseconds).
//
// All profiles of the request share one ProfilesDictionary. Every table starts
// with its zero value at index 0, entries are deduplicated by value, and an
// entry is only added when something that is emitted refers to it, so a
// function that only appears in samples whose value is zero is not sent.
//
// # Attributes that carry pprof information
//
// Every ScopeProfiles carries, besides the SDK's instrumentation scope:
//
//   - pprof.scope.default_sample_type: the pprof default sample type, or the
//     type of the last sample type when the profile did not set one (the
//     convention pprof tools follow).
//   - pprof.scope.sample_type_order: for each Profile of the scope, in order,
//     the index of its sample type in the original pprof profile; a sample
//     type that is not sent leaves its index out.
//   - pprofotel.profile.name: the runtime profile name ("cpu", "heap",
//     "goroutine", "mutex", "block", "goroutineleak"). The same attribute
//     is set on each Profile through its attribute_indices.
//
// Locations carry pprof.location.is_folded when set. Mappings carry
// process.executable.build_id.gnu (the pprof build id, which runtime/pprof
// fills with the ELF GNU build id), process.executable.build_id.go for the
// main executable, and the pprof.mapping.has_functions, has_filenames,
// has_line_numbers and has_inline_frames flags when they are true.
//
// # Samples
//
// pprof string labels become sample attributes with string values. Numeric
// labels are not sent: the only ones the runtime writes are the heap
// profile's object sizes (bytes), whose values are unbounded, and receivers
// that split series by sample attributes would grow a series per size.
// Samples that differ only in numeric labels are merged, so the totals per
// stack stay exact and the mean object size is alloc_space/alloc_objects.
// A sample that has both a
// trace_id label (32 lower-case hex digits) and a span_id label (16 lower-case
// hex digits), see package labels, gets a Sample.link_index instead of these
// two attributes. When either is missing, malformed or all zero they stay
// ordinary attributes. If a sample repeats a label key, the first label wins,
// because OTLP requires attribute keys to be unique within a sample.
//
// A sample whose value is zero for a sample type is left out of that
// Profile; the Profile itself is always emitted, so that the sample type order
// holds. Samples with the same stack and labels are merged by adding their
// values. Samples without any valid location are left out, as OTLP has no way
// to express an empty stack other than the "unset" stack index 0.
// References in the input that are out of range are treated as unset rather
// than failing the whole window.
package otlp
