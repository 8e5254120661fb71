// Package pprofconv reads the OTLP profiles that pprofotel exports and turns
// them back into pprof profiles, the format go tool pprof, its flame graph
// and profile-guided optimization (go build -pgo) read.
//
// Read, ReadFile and ReadPath read OTLP profiles requests
// (ExportProfilesServiceRequest, OTLP Profiles v1development) in every form
// they are stored: the profiler's file exporter writes one request per file,
// as protobuf (.pb) or indented OTLP/JSON (.json); the Collector's file
// exporter writes one OTLP/JSON request per line. The format is told by the
// content, not the file name.
//
// Convert selects windows by service, time and profile, and merges them
// into one pprof profile per runtime profile ("cpu", "heap", "goroutine",
// "mutex", "block", "offcpu", "goroutineleak"), with all its sample types,
// as runtime/pprof writes it. Span links come back as the pprof labels
// trace_id and span_id. pprof has no timestamps: a sample that carries one
// value per timestamp (the off-CPU profile's waits) becomes one pprof sample
// holding their sum. PGO reduces a merged CPU profile to what the Go
// compiler uses.
package pprofconv
