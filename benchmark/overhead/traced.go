package main

import (
	"net/http"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pprofotel/profiler/integration/testservice"
	"github.com/pprofotel/profiler/labels"
)

// routes returns the handler of the service's routes: /work, and /lock of
// issue 29's three-route service, which makes one request in
// testservice.LockEvery wait testservice.LockHold on a contended mutex (the
// load sends every -lock-every-th request there). When traced, every
// request runs in a server span, as in an instrumented service: an SDK
// TracerProvider (every span sampled, none exported, so that what is
// measured is the spans and what the profiler does with them) wrapped with
// labels.WrapTracerProvider, and testservice.Middleware, which sets the
// span's http.route once the mux has matched it. The returned function
// stops the service's background goroutine.
func routes(work http.Handler, traced bool) (http.Handler, func()) {
	lock := testservice.New()
	mux := http.NewServeMux()
	mux.Handle("/work", work)
	mux.Handle(testservice.RouteLock, lock.Handler())
	if !traced {
		return mux, lock.Close
	}
	tp := labels.WrapTracerProvider(sdktrace.NewTracerProvider())
	return testservice.Middleware(tp.Tracer("overhead"), mux, nil), lock.Close
}
