package testservice

import (
	"context"
	"net/http"
	"runtime"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Request is what the middleware measured of one request, handed to the
// observer when its span has ended.
type Request struct {
	// Route is the pattern the mux matched, as the span's http.route.
	Route string
	// TraceID and SpanID are the server span's, in lower-case hex.
	TraceID, SpanID string
	// Start and End are taken just after the span started and just before
	// it ended.
	Start, End time.Time
	// CPU is the CPU time of the request's goroutine between Start and
	// End: the thread's CPU clock, the goroutine being locked to its
	// thread for the span's duration, so that the thread runs nothing
	// else.
	CPU time.Duration
	// Contended says that a /lock request waited on the mutex.
	Contended bool
}

type requestKey struct{}

// FromContext returns the Request of the request whose context ctx is,
// or nil when it is not observed.
func FromContext(ctx context.Context) *Request {
	r, _ := ctx.Value(requestKey{}).(*Request)
	return r
}

// Middleware serves each request in a server span of tracer, as otelhttp
// does: the span is started with the request's method as its name, before
// routing, and gets its http.route attribute once next (a mux) has matched
// the request to a pattern and served it: a span whose route is known only
// after Start. With observe, each request is measured (Request), its
// goroutine locked to its thread while the span runs, and observe is
// called once its span has ended; without, nothing is measured.
func Middleware(tracer trace.Tracer, next http.Handler, observe func(Request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := tracer.Start(r.Context(), r.Method,
			trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(semconv.HTTPRequestMethodKey.String(r.Method)))
		var req *Request
		if observe != nil {
			sc := span.SpanContext()
			req = &Request{TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String()}
			ctx = context.WithValue(ctx, requestKey{}, req)
			runtime.LockOSThread()
			req.Start = time.Now()
			req.CPU = -threadCPU()
		}
		// The mux sets Pattern on the request it is given: this one.
		r = r.WithContext(ctx)
		next.ServeHTTP(w, r)
		span.SetAttributes(attribute.String(string(semconv.HTTPRouteKey), r.Pattern))
		if req != nil {
			req.CPU += threadCPU()
			req.End = time.Now()
			req.Route = r.Pattern
			runtime.UnlockOSThread()
		}
		span.End()
		if req != nil {
			observe(*req)
		}
	})
}
