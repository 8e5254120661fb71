package integration

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"

	profiler "github.com/pprofotel/profiler"
)

// routeSpin and routeWait are the routes of TestPyroscopeRoutes'
// requests: one spends its time on CPU, the other waiting.
const (
	routeSpin = "/spin/{id}"
	routeWait = "/wait"
)

// spinRequest and waitRequest are the work of the two routes.
//
//go:noinline
func spinRequest(d time.Duration) uint64 { return burnInSpan(d) }

//go:noinline
func waitRequest(d time.Duration) { <-time.After(d) }

// requestLoop runs requests of route until stop is closed, as HTTP
// middleware would: the span starts under the method alone and learns its
// route from SetAttributes. It counts the requests it ran in n.
func requestLoop(stop <-chan struct{}, tracer trace.Tracer, route string, work func(), n *atomic.Int64) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		_, span := tracer.Start(context.Background(), "GET")
		span.SetAttributes(attribute.String("http.route", route))
		work()
		span.End()
		n.Add(1)
	}
}

// TestPyroscopeRoutes runs requests of two routes under the profiler,
// sending to a real Grafana Pyroscope, and checks that the route is a
// label there: Pyroscope lists both routes, a query with
// {service_name=..., route=...} returns for the CPU, off-CPU and
// request-count profiles exactly what was sent for that route, and the
// request counts are the requests run.
func TestPyroscopeRoutes(t *testing.T) {
	py := startPyroscope(t)
	proxy := startRecordingProxy(t, strings.TrimPrefix(py.URL, "http://"), py.URL)
	run := &pyroscopeRun{service: "pprofotel-routes", logs: new(syncBuffer)}
	tracer, _ := startTracedRun(t, run.logs)

	run.started = time.Now()
	p, err := profiler.Start(
		profiler.WithServiceName(run.service),
		profiler.WithExporter(newOTLPExporter(t, protocolHTTPProtobuf, proxy.HTTPAddr)),
		profiler.WithWindow(time.Second),
		profiler.WithCPUDutyCycle(100),
		profiler.WithProfileTypes(profiler.CPUProfile, profiler.OffCPUProfile),
		profiler.WithOffCPUDutyCycle(50),
	)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var spun, waited atomic.Int64
	done := make(chan struct{}, 2)
	go func() {
		requestLoop(stop, tracer, routeSpin, func() { spinRequest(5 * time.Millisecond) }, &spun)
		done <- struct{}{}
	}()
	go func() {
		requestLoop(stop, tracer, routeWait, func() { waitRequest(5 * time.Millisecond) }, &waited)
		done <- struct{}{}
	}()
	time.Sleep(3 * time.Second)
	close(stop)
	<-done
	<-done
	run.stopped = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound: Stop returns once delivered
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	run.stats = p.Stats()
	for _, x := range proxy.recorded() {
		if requestService(x.req) == run.service {
			run.exchanges = append(run.exchanges, x)
		}
	}
	checkAccepted(t, run)
	if s := run.stats; s.RoutesOverflowed != 0 || s.RoutesUnknown != 0 {
		t.Errorf("stats: %d requests overflowed, %d unknown; want none", s.RoutesOverflowed, s.RoutesUnknown)
	}

	start, end := run.queryRange()
	var values struct {
		Names []string `json:"names"`
	}
	py.query(t, "LabelValues", map[string]any{
		"name": "route", "matchers": []string{run.selector()}, "start": start, "end": end,
	}, &values)
	if want := []string{routeSpin, routeWait}; !slices.Equal(values.Names, want) {
		t.Errorf("Pyroscope lists the routes %q, want %q", values.Names, want)
	}

	sent := sentByRoute(t, run)
	for _, tt := range []struct {
		id, route string
		// worked is what must have been sent for the comparison to
		// mean anything.
		worked bool
	}{
		{"process_cpu:cpu:nanoseconds:cpu:nanoseconds", routeSpin, true},
		{"process_cpu:cpu:nanoseconds:cpu:nanoseconds", routeWait, false},
		{offCPUType, routeWait, true},
		{offCPUType, routeSpin, false},
		{requestsType, routeSpin, true},
		{requestsType, routeWait, true},
	} {
		want := sent[tt.id][tt.route]
		if tt.worked && want == 0 {
			t.Errorf("%s: nothing sent for route %s; the comparison proves nothing", tt.id, tt.route)
		}
		var fg flamegraphResponse
		selector := `{service_name="` + run.service + `",route="` + tt.route + `"}`
		py.query(t, "SelectMergeStacktraces", map[string]any{
			"profile_typeID": tt.id, "label_selector": selector, "start": start, "end": end,
		}, &fg)
		if got := fg.total(t); got != want {
			t.Errorf("%s %s: Pyroscope's total %d, sent %d", tt.id, selector, got, want)
		}
	}
	if got, want := sent[requestsType][routeSpin], spun.Load(); got != want {
		t.Errorf("%d requests of %s counted, %d run", got, routeSpin, want)
	}
	if got, want := sent[requestsType][routeWait], waited.Load(); got != want {
		t.Errorf("%d requests of %s counted, %d run", got, routeWait, want)
	}
}

// sentByRoute returns, per Pyroscope profile type and route, the
// total the run sent, in Pyroscope's units.
func sentByRoute(t *testing.T, run *pyroscopeRun) map[string]map[string]int64 {
	t.Helper()
	out := make(map[string]map[string]int64)
	for _, x := range run.exchanges {
		d := x.req.GetDictionary()
		str := d.GetStringTable()
		pd := &profilespb.ProfilesData{ResourceProfiles: x.req.GetResourceProfiles(), Dictionary: d}
		for _, rp := range pd.GetResourceProfiles() {
			for _, sp := range rp.GetScopeProfiles() {
				for _, p := range sp.GetProfiles() {
					id, scale, err := pyroscopeProfileType(dict{d}, p)
					if err != nil {
						t.Fatal(err)
					}
					if out[id] == nil {
						out[id] = make(map[string]int64)
					}
					for _, s := range p.GetSamples() {
						route := ""
						for _, ai := range s.GetAttributeIndices() {
							if a := d.GetAttributeTable()[ai]; str[a.GetKeyStrindex()] == "route" {
								route = a.GetValue().GetStringValue()
							}
						}
						for _, v := range s.GetValues() {
							out[id][route] += v * scale
						}
					}
				}
			}
		}
	}
	return out
}
