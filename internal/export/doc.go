// Package export delivers OTLP profiles requests: over gRPC, over HTTP with
// protobuf or JSON bodies, or into files.
//
// An Exporter makes exactly one attempt per Export call. When an attempt
// fails the error is an *ExportError that keeps what the transport said (the
// gRPC status with its details, or the HTTP status code and Retry-After
// header), and Retryable classifies it by the rules of the OTLP
// specification. Retrying and queueing belong to decorators around an
// Exporter, not to the transports: WithRetry retries by those rules with
// exponential backoff, honouring the delays the collector asks for.
//
// OTLP/JSON differs from the canonical protobuf JSON mapping: trace, span and
// profile ids are hex strings instead of base64. The HTTP exporter and the
// file exporter encode through package otlpjson, which applies that rule,
// and package pprofconv reads the files back through it.
package export
