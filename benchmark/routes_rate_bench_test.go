package benchmark

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	profiler "github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/exporters/otlpprofilefile"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
	"github.com/pprofotel/profiler/labels"
)

// rateRun is how long BenchmarkRoutesAtRate runs: one default window
// (60 s) and a little, so that a whole window ends before Stop.
const rateRun = 65 * time.Second

// rateRoutes are the routes of BenchmarkRoutesAtRate's requests.
var rateRoutes = [...]string{"/a/{id}", "/b/{id}", "/c/{id}", "/d/{id}"}

// BenchmarkRoutesAtRate starts local root spans as fast as two
// goroutines can, each spinning a few microseconds, for one default
// window (60 s) and a little, with the profiler on (CPU only, recorded
// continuously so that the window has many samples), and reads what it
// sent: requests a second, the share of the CPU samples linked to a span
// whose route is their request's route, and the requests counted
// against those ended. Its op is the whole run; b.N is ignored.
//
// How the span learns its route is the sub-benchmark: "start" gives it to
// Start (otelgin, and otelgrpc's method as the name), "middleware" sets it
// with SetAttributes as the handler begins, "end" renames the span as it
// ends (otelhttp over a ServeMux).
func BenchmarkRoutesAtRate(b *testing.B) {
	for _, how := range []string{"start", "middleware", "end"} {
		b.Run(how, func(b *testing.B) {
			for b.Loop() {
				routesAtRate(b, how)
			}
		})
	}
}

func routesAtRate(b *testing.B, how string) {
	dir := b.TempDir()
	exp, err := otlpprofilefile.New(context.Background(), otlpprofilefile.WithDir(dir))
	if err != nil {
		b.Fatal(err)
	}
	p, err := profiler.Start(profiler.WithExporter(exp), profiler.WithProfileTypes(profiler.CPUProfile),
		profiler.WithCPUDutyCycle(100), profiler.WithProcessContext(false))
	if err != nil {
		b.Fatal(err)
	}
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer sdk.Shutdown(context.Background())
	tr := labels.WrapTracerProvider(sdk).Tracer("rate")

	var ended atomic.Int64
	deadline := time.Now().Add(rateRun)
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			for i := g; time.Now().Before(deadline); i += 2 {
				rateRequest(tr, how, i%len(rateRoutes))
				ended.Add(1)
			}
		})
	}
	wg.Wait()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if err := p.Stop(context.Background()); err != nil {
		b.Fatal(err)
	}
	st := p.Stats()

	var linked, routed, counted int64
	for _, req := range otlptest.ReadDir(b, dir) {
		for _, s := range otlptest.Samples(req, "cpu", "samples") {
			want := wantRoute(s, how)
			if s.SpanID == "" || want == "" {
				continue
			}
			linked += s.Values[0]
			if s.Attrs["route"] == want {
				routed += s.Values[0]
			}
		}
		for _, s := range otlptest.Samples(req, "requests", "requests") {
			counted += s.Values[0]
		}
	}
	b.ReportMetric(float64(ended.Load())/rateRun.Seconds(), "requests/s")
	b.ReportMetric(100*float64(routed)/float64(max(linked, 1)), "%routed")
	b.ReportMetric(float64(linked), "linked-samples")
	b.ReportMetric(float64(counted-ended.Load()), "counted-ended")
	b.ReportMetric(float64(st.RoutesUnknown), "unknown")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	if counted != ended.Load() {
		b.Errorf("%d requests counted, %d ended", counted, ended.Load())
	}
}

// rateRequest is one request of the route numbered r, named as how says.
func rateRequest(tr trace.Tracer, how string, r int) {
	route := rateRoutes[r]
	var span trace.Span
	if how == "start" {
		_, span = tr.Start(context.Background(), "GET "+route, trace.WithAttributes(attribute.String("http.route", route)))
	} else {
		_, span = tr.Start(context.Background(), "GET")
	}
	if how == "middleware" {
		span.SetAttributes(attribute.String("http.route", route))
	}
	rateWork[r]()
	if how == "end" {
		span.SetName("GET " + route)
	}
	span.End()
}

// rateWork is the work of each route, a function of its own so that a
// sample's stack tells its route.
var rateWork = [len(rateRoutes)]func(){spinA, spinB, spinC, spinD}

const rateSpin = time.Microsecond

//go:noinline
func spinA() { spinFor(rateSpin) }

//go:noinline
func spinB() { spinFor(rateSpin) }

//go:noinline
func spinC() { spinFor(rateSpin) }

//go:noinline
func spinD() { spinFor(rateSpin) }

// spinFor keeps the CPU busy for d.
func spinFor(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// wantRoute returns the route a sample of a request should carry,
// told by the route's function on its stack; "" for a sample outside a
// request's work.
func wantRoute(s otlptest.Sample, how string) string {
	for i, fn := range []string{"spinA", "spinB", "spinC", "spinD"} {
		if s.InStack(fn) {
			if how == "end" {
				return "GET " + rateRoutes[i]
			}
			return rateRoutes[i]
		}
	}
	return ""
}
