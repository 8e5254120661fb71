package collect

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/collect/requests"
	"github.com/pprofotel/profiler/internal/testutil/polltest"
)

// outlivesRequest parks until release is closed: a goroutine a request
// started, still there after the request ended.
//
//go:noinline
func outlivesRequest(release chan struct{}) { <-release }

// TestGoroutineOutlivingItsRequest runs requests renamed as they end, as
// otelhttp over a ServeMux names them, each starting a goroutine that
// outlives it, the last after a thousand other renamed requests: in the
// goroutine profile of the window the request ended in, and of the
// windows after it, each such goroutine carries its request's final
// route, although its labels carry the name the request started with.
func TestGoroutineOutlivingItsRequest(t *testing.T) {
	c, tr := goroutineCollector(t)

	release := make(chan struct{})
	defer close(release)
	serve := renamedRequests(tr, release)
	serve("GET /lookup", true)
	for i := range 1000 {
		serve(fmt.Sprint("GET /other/", i%5), false)
	}
	serve("GET /search", true)
	polltest.Until(t, "both goroutines parked in outlivesRequest", func() bool {
		return parked("collect.outlivesRequest(") == 2
	})
	for window := range 3 {
		got := outlivingRoutes(t, c.Collect(time.Now()))
		if want := []string{"GET /lookup", "GET /search"}; !slices.Equal(got, want) {
			t.Errorf("window %d: the goroutines that outlived their requests carry the routes %q, want %q", window, got, want)
		}
	}
	c.Stop(time.Now())
}

// TestGoroutineOutlivingItsRequestEarlyInTheWindow runs, with room for
// the window's last four renamed roots, a request renamed as it ends
// whose goroutine outlives it, then more renamed requests than the room
// holds. The window before found a goroutine that outlived its request,
// so the collector reads a goroutine profile within the window when the
// tracker asks for one (Change), and the goroutine still carries its
// request's final route at the window's end.
func TestGoroutineOutlivingItsRequestEarlyInTheWindow(t *testing.T) {
	c, tr := goroutineCollectorWith(t, Config{Profiles: []string{Goroutine}, MaxRoutes: 10, MaxRoots: 16})
	release := make(chan struct{})
	defer close(release)
	serve := renamedRequests(tr, release)
	serve("GET /a", true)
	polltest.Until(t, "a goroutine parked in outlivesRequest", func() bool {
		return parked("collect.outlivesRequest(") == 1
	})
	if got, want := outlivingRoutes(t, c.Collect(time.Now())), []string{"GET /a"}; !slices.Equal(got, want) {
		t.Fatalf("the first window: routes %q, want %q", got, want)
	}
	if _, ok := c.NextChange(); !ok {
		t.Fatal("a goroutine outlived its request, and the collector plans no goroutine profile within the window")
	}

	serve("GET /b", true)
	serve("GET /c", false)
	polltest.Until(t, "two goroutines parked in outlivesRequest", func() bool {
		return parked("collect.outlivesRequest(") == 2
	})
	c.tracker.Sweep(time.Now())
	c.Change(time.Now().Add(time.Minute))
	for i := range 10 {
		serve(fmt.Sprint("GET /other/", i%3), false)
	}
	if got, want := outlivingRoutes(t, c.Collect(time.Now())), []string{"GET /a", "GET /b"}; !slices.Equal(got, want) {
		t.Errorf("the second window: routes %q, want %q", got, want)
	}
	c.Stop(time.Now())
}

// renamedRequests returns a function that serves a request through tr,
// renamed to route as it ends, as otelhttp over a ServeMux names it;
// with outlive set the request starts a goroutine that parks in
// outlivesRequest until release is closed.
func renamedRequests(tr trace.Tracer, release chan struct{}) func(route string, outlive bool) {
	return func(route string, outlive bool) {
		_, span := tr.Start(context.Background(), "GET")
		if outlive {
			go outlivesRequest(release)
		}
		span.SetName(route)
		span.End()
	}
}

// outlivingRoutes returns, sorted, the route of each goroutine parked in
// outlivesRequest that w's goroutine profile holds.
func outlivingRoutes(t *testing.T, w Window) []string {
	t.Helper()
	g := findProfile(t, w, Goroutine)
	var got []string
	for _, s := range g.Samples {
		if sampleIn(g, s, "github.com/pprofotel/profiler/internal/collect.outlivesRequest") {
			for range s.Values[0] {
				got = append(got, labelMap(s)[requests.RouteKey])
			}
		}
	}
	slices.Sort(got)
	return got
}

// sampleIn reports whether fn is on the stack of s, a sample of p.
func sampleIn(p *pprofdecode.Profile, s pprofdecode.Sample, fn string) bool {
	return slices.ContainsFunc(s.Locations, func(l int32) bool {
		return slices.ContainsFunc(p.Locations[l].Lines, func(ln pprofdecode.Line) bool {
			return p.Functions[ln.Function].Name == fn
		})
	})
}
