// Package pprofdecode decodes what runtime/pprof writes (profile.proto,
// gzip-compressed or not) into a profile held as plain data. Its name keeps
// it apart from github.com/google/pprof/profile, which the tests and the
// converter use alongside it.
//
// The decoded profile is the in-memory form that the collector computes deltas on and that the
// OTLP builder turns into a request. Strings are resolved (no string table)
// and cross references are slice indices, so the types can be built by hand
// in tests.
//
// Parse and Decoder decode the pprof protobuf format (profile.proto) that
// runtime/pprof writes, gzip-compressed or not. The decoder reads the wire
// format directly, without reflection, and allocates a fixed handful of
// slices per profile rather than one object per sample, location or
// string. Input is untrusted: malformed data yields an error naming what is
// wrong, never a panic, and decompression is bounded by a size limit.
package pprofdecode
