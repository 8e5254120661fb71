// Package otlpprofilegrpc exports profiles over OTLP/gRPC
// (ProfilesService/Export) to an OpenTelemetry Collector or any receiver of
// OTLP profiles.
//
// The profiles signal of OpenTelemetry is Alpha (v1development): the
// requests this package sends change with the protocol, and so may its API.
// Every request names the profiles development version it follows, 1, in
// the metadata key otlp-profiles-development-version, whatever WithHeaders
// or the variables give for that key. A receiver that reads it (the
// Collector does from v0.163.0) refuses a version it does not support
// with INVALID_ARGUMENT, which the Exporter does not retry.
//
// An Exporter sends each request the profiler gives it, cut into parts no
// larger than WithMaxRequestBytes, in order, and retries a part the
// receiver could not take for now (CANCELLED, DEADLINE_EXCEEDED, ABORTED,
// OUT_OF_RANGE, UNAVAILABLE, DATA_LOSS, and RESOURCE_EXHAUSTED with a
// RetryInfo), waiting as long as a RetryInfo asks (WithRetry). A partial
// success, where the receiver accepted the request but rejected some
// profiles, is not an error: it is reported to otel.Handle when the
// application has set an error handler (otel.SetErrorHandler), else
// logged as an error.
//
// # Environment variables
//
// New reads the following variables. Each per-signal PROFILES form wins
// over the generic one, and an option wins over both. An invalid value is
// logged once, as a warning through slog.Default(), and ignored.
//
//   - OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT: the
//     receiver, as a URL whose scheme, http or https, selects plaintext or
//     TLS (its path is ignored), or as host:port. Default: localhost:4317,
//     plaintext. Options: WithEndpoint, WithEndpointURL.
//   - OTEL_EXPORTER_OTLP_PROFILES_INSECURE, OTEL_EXPORTER_OTLP_INSECURE:
//     "true" selects plaintext for an endpoint given as host:port.
//     Option: WithInsecure.
//   - OTEL_EXPORTER_OTLP_PROFILES_HEADERS, OTEL_EXPORTER_OTLP_HEADERS:
//     metadata sent with every call, as key1=value1,key2=value2 with
//     percent-encoded values. Option: WithHeaders.
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
//
// With WithGRPCConn the variables that make a connection (ENDPOINT,
// INSECURE and the certificate files) are not read.
package otlpprofilegrpc
