package collect

import (
	"context"
	"runtime/pprof"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/collect/requests"
	"github.com/pprofotel/profiler/labels"
)

// TestSampleBeforeTheRoute gives a window a sample taken in a request
// before a route middleware set its http.route (chi's, in the
// integration tests): the sample's labels carry the name the span
// started with, and the request ends within the window. The window gives
// the sample the request's route.
func TestSampleBeforeTheRoute(t *testing.T) {
	c, err := New(Config{MaxRoutes: 10})
	if err != nil {
		t.Fatal(err)
	}
	c.startTracker()
	defer c.Abandon()
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer sdk.Shutdown(context.Background())
	tr := labels.WrapTracerProvider(sdk).Tracer("test")

	ctx, span := tr.Start(context.Background(), "GET")
	// The sample's labels, as the CPU profile would record them now.
	var before []pprofdecode.Label
	pprof.ForLabels(ctx, func(k, v string) bool {
		before = append(before, pprofdecode.Label{Key: k, Str: v})
		return true
	})
	span.SetAttributes(attribute.String("http.route", "/users/{id}"))
	span.End()
	if i := slices.IndexFunc(before, func(l pprofdecode.Label) bool { return l.Key == requests.RouteKey }); i < 0 || before[i].Str != "GET" {
		t.Fatalf("labels before the route %v, want route GET", before)
	}

	w := Window{Profiles: []Profile{{Name: CPU, Data: &pprofdecode.Profile{Samples: []pprofdecode.Sample{{Labels: before}}}}}}
	// As the CPU profile's reading tells the tracker.
	c.cpuStretches.Named(sampledRoots(w.Profiles[0].Data), time.Now())
	c.endRequests(&w, time.Now(), true)
	got := labelMap(w.Profiles[0].Data.Samples[0])
	if got[requests.RouteKey] != "/users/{id}" {
		t.Errorf("the sample taken before the route carries route %q, want %q (labels %v)", got[requests.RouteKey], "/users/{id}", got)
	}
	checkRequests(t, w, map[string]int64{"/users/{id}": 1})
}
