// Package export holds what the exporter packages share: the OTLP/gRPC and
// OTLP/HTTP transports (protobuf or JSON bodies), the retry policy and the
// classification of failures.
//
// A transport makes exactly one attempt per Export call. When an attempt
// fails the error is an *ExportError that keeps what the transport said (the
// gRPC status with its details, or the HTTP status code and Retry-After
// header), and Retryable classifies it by the rules of the OTLP
// specification. Retrying belongs to a decorator around a transport, not to
// the transports: WithRetry retries by those rules with exponential
// backoff, honouring the delays the receiver asks for.
//
// Every transport implements Sender[R] for the request type R of its
// encoding: Exporter, the OTLP profiles one, which has the method set of
// the root package's public Exporter; and the OTLP logs one of the Splunk
// exporter (package logsgrpc). The exporter packages
// exporters/otlpprofilehttp and exporters/otlpprofilegrpc build their
// transport with NewHTTP or NewGRPC from a configuration resolved by
// package otlpconfig, and wrap it in a SplittingExporter: requests cut to
// the size limit, retries by WithRetry, bytes and retries reported to the
// profiler through package report.
//
// OTLP/JSON differs from the canonical protobuf JSON mapping: trace, span and
// profile ids are hex strings instead of base64. The HTTP transport and
// exporters/otlpprofilefile encode through package otlpjson, which applies
// that rule, and package pprofconv reads the files back through it.
package export
