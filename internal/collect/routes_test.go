package collect

import (
	"context"
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/collect/requests"
	"github.com/pprofotel/profiler/internal/testutil/polltest"
	"github.com/pprofotel/profiler/labels"
)

// waitInRequest parks until release is closed; the goroutine profile
// finds it by name.
//
//go:noinline
func waitInRequest(release chan struct{}) { <-release }

// parkedIn reports whether a goroutine waits on a channel with fn on its
// stack.
func parkedIn(fn string) bool { return parked(fn) > 0 }

// parked returns the number of goroutines that wait on a channel with fn
// on their stack.
func parked(fn string) int {
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	n := 0
	for g := range strings.SplitSeq(stacks, "\n\n") {
		if strings.Contains(g, "[chan receive") && strings.Contains(g, fn) {
			n++
		}
	}
	return n
}

// labelMap flattens a sample's string labels.
func labelMap(s pprofdecode.Sample) map[string]string {
	m := map[string]string{}
	for _, l := range s.Labels {
		m[l.Key] = l.Str
	}
	return m
}

// TestRoutesInWindow runs requests through the label wrapper while a
// collector runs: a goroutine parked in a request carries the request's
// route and no root span id in the goroutine profile, and the window
// counts the requests that ended, by route, in its requests profile.
func TestRoutesInWindow(t *testing.T) {
	c, tr := goroutineCollector(t)

	for range 3 {
		_, s := tr.Start(context.Background(), "GET /fast")
		s.End()
	}
	release := make(chan struct{})
	parked := make(chan trace.SpanContext)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, root := tr.Start(context.Background(), "GET")
		defer root.End()
		root.SetAttributes(attribute.String("http.route", "/lock"))
		_, child := tr.Start(ctx, "acquire")
		defer child.End()
		parked <- child.SpanContext()
		waitInRequest(release)
	}()
	sc := <-parked
	// Past the send, the goroutine may not have reached its wait yet.
	polltest.Until(t, "the request's goroutine waiting in waitInRequest", func() bool {
		return parkedIn("collect.waitInRequest(")
	})

	w := c.Collect(time.Now())
	g := findProfile(t, w, Goroutine)
	var found []map[string]string
	for _, s := range g.Samples {
		if slices.ContainsFunc(s.Locations, func(l int32) bool {
			return slices.ContainsFunc(g.Locations[l].Lines, func(ln pprofdecode.Line) bool {
				return g.Functions[ln.Function].Name == "github.com/pprofotel/profiler/internal/collect.waitInRequest"
			})
		}) {
			found = append(found, labelMap(s))
		}
	}
	want := map[string]string{
		requests.RouteKey: "/lock",
		labels.TraceIDKey: sc.TraceID().String(),
		labels.SpanIDKey:  sc.SpanID().String(),
	}
	if len(found) != 1 || !maps.Equal(found[0], want) {
		t.Errorf("goroutine in the request has labels %v, want [%v]", found, want)
	}
	checkRequests(t, w, map[string]int64{"GET /fast": 3})

	close(release)
	<-done
	w = c.Stop(time.Now())
	checkRequests(t, w, map[string]int64{"/lock": 1})
	other := requests.New(requests.Config{})
	if err := other.Install(); err != nil {
		t.Errorf("the collector's tracker is still installed after Stop: %v", err)
	}
	other.Stop()
}

// goroutineCollector starts a collector of the goroutine profile that
// follows requests, and returns it with a tracer through the label
// wrapper.
func goroutineCollector(t *testing.T) (*Collector, trace.Tracer) {
	t.Helper()
	return goroutineCollectorWith(t, Config{Profiles: []string{Goroutine}, MaxRoutes: 10})
}

// goroutineCollectorWith is goroutineCollector with cfg.
func goroutineCollectorWith(t *testing.T, cfg Config) (*Collector, trace.Tracer) {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Start(time.Now())
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { sdk.Shutdown(context.Background()) })
	return c, labels.WrapTracerProvider(sdk).Tracer("test")
}

// checkRequests checks the requests profile of w: one sample per route,
// labelled with it, on a frame named after it.
func checkRequests(t *testing.T, w Window, want map[string]int64) {
	t.Helper()
	p := findProfile(t, w, Requests)
	if p == nil {
		return
	}
	got := map[string]int64{}
	for _, s := range p.Samples {
		e := labelMap(s)[requests.RouteKey]
		fn := p.Functions[p.Locations[s.Locations[0]].Lines[0].Function].Name
		if fn != e || len(s.Locations) != 1 {
			t.Errorf("sample of %q on the stack %v", e, s.Locations)
		}
		got[e] += s.Values[0]
	}
	if !maps.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
	if p.SampleTypes[0] != RequestsType {
		t.Errorf("sample type %v", p.SampleTypes)
	}
}

func TestLabelRoutes(t *testing.T) {
	tr := requests.New(requests.Config{MaxRoutes: 1})
	start := time.Now()
	if err := tr.Install(); err != nil {
		t.Fatal(err)
	}
	// Renamed before they end, so the window remembers their roots.
	for _, root := range []struct{ id, route string }{{"00000000000000a1", "a"}, {"00000000000000b2", "b"}} {
		r := requests.Begin("0af7651916cd43dd8448eb211c80319c"+root.id, "GET", "", start)
		r.SetName(root.route)
		r.End(start)
	}
	q := tr.Window(start)
	tr.Stop()

	root := func(id string) pprofdecode.Label { return pprofdecode.Label{Key: labels.LocalRootSpanIDKey, Str: id} }
	str := func(k, v string) pprofdecode.Label { return pprofdecode.Label{Key: k, Str: v} }
	tests := []struct {
		name   string
		labels []pprofdecode.Label
		want   []pprofdecode.Label
	}{
		{"known", []pprofdecode.Label{root("00000000000000a1"), str("span_id", "x")}, []pprofdecode.Label{str("route", "a"), str("span_id", "x")}},
		{"overflowed", []pprofdecode.Label{str("k", "v"), root("00000000000000b2")}, []pprofdecode.Label{str("k", "v"), str("route", "_other")}},
		{"unknown root", []pprofdecode.Label{str("k", "v"), root("00000000000000c3")}, []pprofdecode.Label{str("k", "v")}},
		{"bad root", []pprofdecode.Label{root("zz")}, []pprofdecode.Label{}},
		{"application's route gives way", []pprofdecode.Label{str("route", "mine"), root("00000000000000a1")}, []pprofdecode.Label{str("route", "a")}},
		// A root the window does not remember: the route its labels
		// carry (the one it started with), bounded by the window.
		{"labelled route of a root not remembered", []pprofdecode.Label{str("route", "a"), root("00000000000000c3")}, []pprofdecode.Label{str("route", "a")}},
		{"labelled route bounded", []pprofdecode.Label{str("route", "mine"), root("00000000000000c3")}, []pprofdecode.Label{str("route", "_other")}},
		{"no root", []pprofdecode.Label{str("route", "mine")}, []pprofdecode.Label{str("route", "mine")}},
		{"numeric root label is the application's", []pprofdecode.Label{{Key: labels.LocalRootSpanIDKey, Num: 3, IsNum: true}}, []pprofdecode.Label{{Key: labels.LocalRootSpanIDKey, Num: 3, IsNum: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pprofdecode.Profile{Samples: []pprofdecode.Sample{{Labels: slices.Clone(tt.labels)}}}
			labelRoutes(p, &q, false)
			if got := p.Samples[0].Labels; !slices.Equal(got, tt.want) {
				t.Errorf("labels %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSettle ends a window whose sample names a request still running
// under the name it started with, as otelhttp's are until the handler
// returns: the window waits, up to its settle time, for the request to be
// renamed and end, and gives the sample the request's last route.
func TestSettle(t *testing.T) {
	tests := []struct {
		name string
		next bool
		// endAfter is when the request is renamed and ends, 0 for never.
		endAfter time.Duration
		want     string
		waited   time.Duration
	}{
		{"renamed within the settle time", true, 300 * time.Millisecond, "GET /users/{id}", 300 * time.Millisecond},
		{"still running after it", true, 0, "GET", requests.DefaultSettle},
		{"renamed too late", true, 2 * requests.DefaultSettle, "GET", requests.DefaultSettle},
		{"the last window does not wait", false, 300 * time.Millisecond, "GET", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, err := New(Config{MaxRoutes: 10})
				if err != nil {
					t.Fatal(err)
				}
				c.startTracker()
				defer c.Abandon()
				const root = "00000000000000a1"
				r := requests.Begin("0af7651916cd43dd8448eb211c80319c"+root, "GET", "", time.Now())
				labelled := r.Labelled()
				done := make(chan struct{})
				if tt.endAfter == 0 {
					close(done)
				} else {
					go func() {
						defer close(done)
						time.Sleep(tt.endAfter)
						r.SetName("GET /users/{id}")
						r.End(time.Now())
					}()
				}
				w := Window{Profiles: []Profile{{Name: CPU, Data: &pprofdecode.Profile{Samples: []pprofdecode.Sample{{Labels: []pprofdecode.Label{
					{Key: requests.RouteKey, Str: labelled},
					{Key: labels.LocalRootSpanIDKey, Str: root},
				}}}}}}}
				start := time.Now()
				c.endRequests(&w, start, tt.next)
				// Settle polls: it sees the end at most a poll later.
				if waited := time.Since(start); waited < tt.waited || waited > tt.waited+10*time.Millisecond {
					t.Errorf("waited %v, want %v", waited, tt.waited)
				}
				want := []pprofdecode.Label{{Key: requests.RouteKey, Str: tt.want}}
				if got := w.Profiles[0].Data.Samples[0].Labels; !slices.Equal(got, want) {
					t.Errorf("labels %v, want %v", got, want)
				}
				<-done
				r.End(time.Now())
			})
		})
	}
}
