// Package processctx publishes the process context of OTEP 4719: the
// resource of this process, in a small memory mapping that readers outside
// the process, such as the OpenTelemetry eBPF profiler, find through
// /proc/<pid>/maps and read through /proc/<pid>/mem.
//
// The layout follows the SIG's C reference publisher and the eBPF
// profiler's reader where they differ from the OTEP text: a 32-byte header
//
//	offset  0  "OTEL_CTX"
//	offset  8  uint32 version, 2
//	offset 12  uint32 payload size
//	offset 16  uint64 publication time, CLOCK_BOOTTIME nanoseconds
//	offset 24  uint64 address of the payload
//
// in a mapping named OTEL_CTX, and a payload elsewhere: the protobuf
// message ProcessContext whose field 1 is the opentelemetry.proto
// Resource and whose field 2, its attributes, holds the thread-local
// reference data of OTEP 4947 for Go: threadlocal.schema_version
// "go_pprof_labels_v1", which tells a reader to take a goroutine's trace
// context from its pprof labels. The publication time is written last and is zero while the
// header changes, so that a reader who sees the same non-zero time before
// and after reading the payload has read a consistent copy.
//
// Both the header and the payload are mmap'd, outside the Go heap, so that
// the garbage collector neither moves nor frees what another process
// reads. Only Linux on amd64 and arm64 publishes, the platforms the eBPF
// profiler runs on; elsewhere Publish returns errors.ErrUnsupported.
package processctx
