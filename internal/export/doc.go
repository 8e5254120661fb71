// Package export delivers OTLP profiles requests: over gRPC, over HTTP with
// protobuf or JSON bodies, or into files.
//
// An Exporter makes exactly one attempt per Export call. When an attempt
// fails the error is an *ExportError that keeps what the transport said (the
// gRPC status with its details, or the HTTP status code and Retry-After
// header), and Retryable classifies it by the rules of the OTLP
// specification. Retrying and queueing belong to decorators around an
// Exporter, not to the transports: WithRetry retries by those rules with
// exponential backoff, honouring the delays the receiver asks for.
//
// Every exporter implements one interface, Sender[R], for the request type
// R of its encoding (Exporter for OTLP profiles). The public exporter
// packages exporters/otlpprofilehttp and exporters/otlpprofilegrpc build
// their transport with NewHTTP or NewGRPC from a configuration resolved by
// package otlpconfig, and wrap it in a SplittingExporter: requests cut to
// the size limit, retries by WithRetry, bytes and retries reported to the
// profiler through package report.
//
// The interface is internal on purpose, unlike otel-go's otlptrace.Client:
// its requests are the OTLP profiles v1development messages, which are
// experimental and change shape from one proto release to the next, so a
// public interface over them would break every implementation outside this
// module at each upgrade. Applications choose among the built-in
// exporters (ExporterKind); the interface can be made public once the
// profiles signal is stable.
//
// OTLP/JSON differs from the canonical protobuf JSON mapping: trace, span and
// profile ids are hex strings instead of base64. The HTTP exporter and the
// file exporter encode through package otlpjson, which applies that rule,
// and package pprofconv reads the files back through it.
package export
