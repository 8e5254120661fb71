// Package splunk exports profiles to Splunk Observability as the profiling
// logs of Splunk AlwaysOn Profiling, over OTLP/gRPC (LogsService/Export),
// through a Splunk distribution of the OpenTelemetry Collector or any
// receiver of OTLP logs that forwards them.
//
// The profiles signal of OpenTelemetry is Alpha (v1development), and this
// package receives its requests: its API may change with the protocol.
//
// An Exporter receives the OTLP profiles request of each window, as every
// exporter of the profiler does, and turns its CPU profile into a log
// record of profiling.data.type cpu and its heap profile into one of type
// allocation, with a body in the pprof-gzip-base64 format of Splunk's Java
// and Node.js profilers; other profiles are left out. The request is sent
// whole, or cut between records into requests no larger than
// WithMaxRequestBytes, and a request the receiver could not take for now
// is retried as in package otlpprofilegrpc (WithRetry). A partial success
// is not an error: it is reported to otel.Handle when the application has
// set an error handler (otel.SetErrorHandler), else logged as an error.
//
// What to collect is the profiler's choice, which this package informs
// through Exporter.CollectionDefaults (it implements the profiler's
// CollectionDefaulter): Splunk's defaults are this package's, not the
// profiler's. They are the CPU profile, the heap profile
// when SPLUNK_PROFILER_MEMORY_ENABLED is true, and windows of
// SPLUNK_PROFILER_CALL_STACK_INTERVAL. The profiler applies them where the
// application set nothing.
//
// Importing this package registers it under the name "splunk", which
// OTEL_PROFILES_EXPORTER=splunk selects when the profiler is started
// without an exporter (see package autoexport). Splunk's own
// SPLUNK_PROFILER_ENABLED does not: one variable chooses the exporter.
//
// # Environment variables
//
// New reads the following variables. An option wins over its variable,
// and for the OTLP settings the PROFILES form of a variable over the
// generic one, as in the profiler's other exporters. An invalid value is
// logged once, as a warning through slog.Default(), and ignored.
//
//   - SPLUNK_PROFILER_LOGS_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT: the
//     receiver, as a URL whose scheme, http or https, selects plaintext or
//     TLS (its path is ignored), or as host:port. An invalid one gives way
//     to the next. Default: localhost:4317, plaintext. Options:
//     WithEndpoint, WithEndpointURL.
//   - OTEL_EXPORTER_OTLP_PROFILES_INSECURE, OTEL_EXPORTER_OTLP_INSECURE:
//     "true" selects plaintext for an endpoint given as host:port.
//     Option: WithInsecure.
//   - OTEL_EXPORTER_OTLP_PROFILES_HEADERS, OTEL_EXPORTER_OTLP_HEADERS:
//     metadata sent with every call, as key1=value1,key2=value2 with
//     percent-encoded values (an access token, say). Option: WithHeaders.
//   - OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT, OTEL_EXPORTER_OTLP_TIMEOUT: the
//     bound on one attempt, in milliseconds. Default: 10000. Option:
//     WithTimeout.
//   - OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION, OTEL_EXPORTER_OTLP_COMPRESSION:
//     "gzip" or "none". Default: none. Option: WithCompressor.
//   - OTEL_EXPORTER_OTLP_PROFILES_CERTIFICATE, OTEL_EXPORTER_OTLP_CERTIFICATE:
//     a PEM file of the roots that verify the receiver. Default: the
//     system roots. Option: WithTLSClientConfig.
//   - OTEL_EXPORTER_OTLP_PROFILES_CLIENT_CERTIFICATE,
//     OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and
//     OTEL_EXPORTER_OTLP_PROFILES_CLIENT_KEY, OTEL_EXPORTER_OTLP_CLIENT_KEY:
//     PEM files of the client's certificate and private key, for mutual
//     TLS. Option: WithTLSClientConfig.
//   - SPLUNK_PROFILER_MEMORY_ENABLED: "true" asks for the heap profile, and
//     so for allocation records (CollectionDefaults). Default: false.
//   - SPLUNK_PROFILER_CALL_STACK_INTERVAL: the window, in milliseconds, at
//     least 1000 (CollectionDefaults). In Splunk's Java profiler it is how
//     often every thread's stack is taken; Go's CPU profiler samples at a
//     fixed 100 Hz, so here it sets how often stacks are gathered and sent,
//     and the resolution of the samples' source.event.time. Default: 10000.
//   - GODEBUG: its profstackdepth setting, the runtime's depth limit for
//     heap profile stacks, tells which allocation stacks to mark
//     thread.stack.truncated.
//
// With WithGRPCConn the variables that make a connection (the ENDPOINT
// ones, INSECURE and the certificate files) are not read.
package splunk
