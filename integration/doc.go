// Package integration holds the tests that run the profiler against a real
// OpenTelemetry Collector. It is a module of its own so that the
// Collector's build tooling and the tests' dependencies stay out of the
// profiler's go.mod; it contains no code meant to be imported.
//
// The Collector binary is built from Go modules by build-collector.sh, from
// the manifest otelcol/builder-config.yaml, and found through the
// PPROFOTEL_OTELCOL environment variable:
//
//	export PPROFOTEL_OTELCOL=$(./build-collector.sh)
//	go test -race -count=1 ./...
//
// Without PPROFOTEL_OTELCOL the tests fail, except under -short, where
// they are skipped.
package integration
