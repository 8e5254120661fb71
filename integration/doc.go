// Package integration holds the tests that run the profiler against a real
// OpenTelemetry Collector and a real Grafana Pyroscope. It is a module of
// its own so that the Collector's build tooling and the tests' dependencies
// stay out of the profiler's go.mod. The one package meant to be imported
// is testservice, the three-route service of issue 29's proof
// (TestRoutesAndSlowRequests), which the overhead benchmark
// (benchmark/overhead) serves too.
//
// The Collector binary is built from Go modules by build-collector.sh, from
// the manifest otelcol/builder-config.yaml, and found through the
// PPROFOTEL_OTELCOL environment variable; the Pyroscope v2.2.1 server is
// unpacked by pyroscope.sh (which says how to build it where no archive is
// at hand) and found through PPROFOTEL_PYROSCOPE:
//
//	export PPROFOTEL_OTELCOL=$(./build-collector.sh)
//	export PPROFOTEL_PYROSCOPE=$(./pyroscope.sh)
//	go test -race -count=1 ./...
//
// Without PPROFOTEL_OTELCOL the Collector tests fail, except under -short,
// where they are skipped. Without PPROFOTEL_PYROSCOPE the Pyroscope test
// fails, always. The OpAMP tests (opamp_test.go) need nothing: they run
// opamp-go's own server package in the test process.
package integration
