// Package pprofconv reads the OTLP profiles that pprofotel exports and turns
// them back into pprof profiles, the format go tool pprof, its flame graph
// and profile-guided optimization (go build -pgo) read.
//
// Read, ReadFile and ReadPath read OTLP profiles requests
// (ExportProfilesServiceRequest, OTLP Profiles v1development) in every form
// they are stored: the profiler's file exporter writes one request per file,
// as protobuf (.pb) or indented OTLP/JSON (.json); the Collector's file
// exporter writes, with format json, one OTLP/JSON request per line and,
// with format proto, protobuf requests each preceded by its length (4
// bytes, big-endian), compressed with zstd when it is configured so. The
// format is told by the content, not the file name.
//
// Convert selects windows by service, time and profile, and merges them
// into one pprof profile per runtime profile ("cpu", "heap", "goroutine",
// "mutex", "block", "offcpu", "goroutineleak"), with all its sample types,
// as runtime/pprof writes it, and the request counts ("requests":
// requests/count, one sample per route on a frame named after it).
// Span links come back as the pprof labels trace_id and span_id, sample
// attributes as labels: the route of a request is the label route. pprof has no timestamps: a sample that carries one
// value per timestamp (the off-CPU profile's waits) becomes one pprof sample
// holding their sum. PGO reduces a merged CPU profile to what the Go
// compiler uses.
//
// # Untrusted input
//
// What Read and Convert are given may come from anywhere, and they bound
// the memory it can cost, refusing with an error that names the input and
// the limit what goes past it, never with a panic or a hang:
//
//   - Read reads at most MaxInputSize (128 MiB) from one input, and
//     ReadPath reads regular files only from a directory. Input compressed
//     with zstd counts at its decompressed size, and is refused once that
//     passes the limit, having taken about the limit in memory
//     (TestReadZstdBomb), or when a frame asks for a window over 8 MiB,
//     which no Collector writes and which would be allocated up front. A request length longer than what follows it is
//     refused, naming the offset, and never allocated. Decoding allocates
//     at most 128 times the size of what was read, decompressed: about 30
//     for the profiler's files, some 55 for requests compressed one by one,
//     and some 80 (protobuf) to 105 (JSON) for the worst, files of nothing
//     but empty messages (TestReadMemoryBound, TestReadZstdMemory).
//   - Convert builds at most ExpansionPerByte (8) units per byte of the
//     OTLP protobuf encoding of its input, plus ExpansionBase (1 Mi): a
//     location or a sample value is a unit, a label value 8. It allocates at
//     most 40 bytes a unit (about 23 measured, TestConvertMemoryBound), and
//     WriteFile as much again.
//
// In all, reading, converting and writing input of N bytes (decompressed)
// allocates less than 128 N + 80 (1 Mi + 8 N) bytes: 768 times the input
// plus 80 MiB.
package pprofconv
