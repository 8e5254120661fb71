// Package autoexport builds the profiles exporter that the environment
// names, as OpenTelemetry's autoexport packages do for traces, metrics and
// logs. The profiler uses it when Start is given no exporter; a program
// that builds its own pipeline may call [NewExporter] too.
//
// It reads these variables; the exporter it builds reads its own (see its
// package):
//
//   - OTEL_PROFILES_EXPORTER: "otlp" (the default), "none" (discard every
//     window), "file" or "splunk". The last two are available only in a
//     program that imports their package (exporters/otlpprofilefile,
//     exporters/splunk), which registers itself when imported, so that a
//     program that does not use them links none of their code.
//   - OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL, else
//     OTEL_EXPORTER_OTLP_PROTOCOL: for "otlp", "http/protobuf" (the
//     default, package otlpprofilehttp), "http/json" (the same with
//     OTLP/JSON bodies) or "grpc" (package otlpprofilegrpc).
//
// Values are read in any case. A value that cannot be honoured (an unknown
// name, an exporter whose package is not linked, one its package cannot
// build from the environment) is warned about once and the OTLP exporter
// over HTTP is used: as the OpenTelemetry specification asks, the
// environment never stops a program from starting.
package autoexport
