// Package otlpattr is the attribute contract of the OTLP profiles requests
// pprofotel sends: the keys that carry what OTLP has no field for (the
// runtime profile's name, pprof's default sample type and sample type
// order, folded locations, mapping flags, build ids). The encoder
// (internal/convert/otlp) writes them and the OTLP -> pprof converter reads them
// back, both from here, so the two cannot drift apart. So does the table of
// what each runtime sample type becomes (SampleTypes). The package holds
// constants and that table only: importing it costs a binary next to
// nothing.
package otlpattr

// Scope attributes: one ScopeProfiles per runtime profile.
const (
	// DefaultSampleType is the scope attribute naming the pprof default
	// sample type.
	DefaultSampleType = "pprof.scope.default_sample_type"
	// SampleTypeOrder is the scope attribute listing, for each Profile of
	// the scope, the index of its sample type in the pprof profile.
	SampleTypeOrder = "pprof.scope.sample_type_order"
)

// ProfileName is the scope and Profile attribute holding the runtime
// profile's name ("cpu", "heap", "goroutine", "mutex", "block",
// "goroutineleak": the names of the profile descriptors), which tells apart
// profiles with the same sample types, such as mutex and block.
const ProfileName = "pprofotel.profile.name"

// Sample attributes of the off-CPU and slow-request profiles, which
// package internal/collect/offcpu writes and pprofotel slow reads.
const (
	// WaitReason is why a goroutine waited, as the execution trace names
	// it ("chan receive", "select", "sync", "network", "sleep",
	// "syscall", "preempted", ...).
	WaitReason = "wait_reason"
	// GoroutineState is what a slow request's goroutine did: "on_cpu",
	// "off_cpu", "runnable", or "untraced" for a part no trace covered.
	GoroutineState = "goroutine_state"
	// BeforeTrace marks, with "true", the part of a slow request before
	// the tracer started, attributed to the state the trace found its
	// goroutine in.
	BeforeTrace = "before_trace"
)

// LocationIsFolded marks a folded pprof location.
const LocationIsFolded = "pprof.location.is_folded"

// Mapping attributes.
const (
	// BuildIDGNU holds the pprof build id of a mapping.
	BuildIDGNU = "process.executable.build_id.gnu"
	// BuildIDGo holds the Go build id of the main executable.
	BuildIDGo = "process.executable.build_id.go"
	// The mapping flags of pprof, set only when true.
	MappingHasFunctions    = "pprof.mapping.has_functions"
	MappingHasFilenames    = "pprof.mapping.has_filenames"
	MappingHasLineNumbers  = "pprof.mapping.has_line_numbers"
	MappingHasInlineFrames = "pprof.mapping.has_inline_frames"
)
