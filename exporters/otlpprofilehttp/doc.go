// Package otlpprofilehttp exports profiles over OTLP/HTTP, with binary
// protobuf bodies (the http/protobuf protocol) or, with WithJSON, OTLP/JSON
// ones (http/json), to an OpenTelemetry Collector or any receiver of OTLP
// profiles.
//
// The profiles signal of OpenTelemetry is Alpha (v1development): the
// requests this package sends change with the protocol, and so may its API.
// Every request names the profiles development version it follows, 1, in
// the header otlp-profiles-development-version, whatever WithHeaders or
// the variables give for that header. A receiver that reads it (the
// Collector does from v0.163.0) refuses a version it does not support
// with HTTP 400, which the Exporter does not retry.
//
// An Exporter sends each request the profiler gives it, cut into parts no
// larger than WithMaxRequestBytes, in order, and retries a part the
// receiver could not take for now (HTTP 429, 502, 503 and 504, or no
// response), waiting as long as a Retry-After header asks (WithRetry). A
// partial success, where the receiver accepted the request but rejected
// some profiles, is not an error: it is reported to otel.Handle when the
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
//     receiver's URL. The PROFILES form is used as is; the generic one gets
//     "/v1development/profiles" appended. The scheme, http or https, selects
//     plaintext or TLS. Default: http://localhost:4318/v1development/profiles.
//     Options: WithEndpoint, WithEndpointURL, WithURLPath.
//   - OTEL_EXPORTER_OTLP_PROFILES_INSECURE, OTEL_EXPORTER_OTLP_INSECURE:
//     "true" selects plaintext for an endpoint given as host:port by
//     WithEndpoint. Option: WithInsecure.
//   - OTEL_EXPORTER_OTLP_PROFILES_HEADERS, OTEL_EXPORTER_OTLP_HEADERS:
//     headers sent with every request, as key1=value1,key2=value2 with
//     percent-encoded values. Option: WithHeaders.
//   - OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT, OTEL_EXPORTER_OTLP_TIMEOUT: the
//     bound on one attempt, in milliseconds. Default: 10000. Option:
//     WithTimeout.
//   - OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION, OTEL_EXPORTER_OTLP_COMPRESSION:
//     "gzip" or "none". Default: none. Option: WithCompression.
//   - OTEL_EXPORTER_OTLP_PROFILES_CERTIFICATE, OTEL_EXPORTER_OTLP_CERTIFICATE:
//     a PEM file of the roots that verify the receiver. Default: the
//     system roots. Option: WithTLSClientConfig.
//   - OTEL_EXPORTER_OTLP_PROFILES_CLIENT_CERTIFICATE,
//     OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and
//     OTEL_EXPORTER_OTLP_PROFILES_CLIENT_KEY, OTEL_EXPORTER_OTLP_CLIENT_KEY:
//     PEM files of the client's certificate and private key, for mutual
//     TLS. Option: WithTLSClientConfig.
//
// With WithHTTPClient the certificate variables are not read: the client's
// transport has its own TLS configuration. The proxy is chosen by
// http.ProxyFromEnvironment (HTTPS_PROXY, HTTP_PROXY, NO_PROXY) unless
// WithProxy or WithHTTPClient says otherwise.
package otlpprofilehttp
