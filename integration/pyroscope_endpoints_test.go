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

// endpointSpin and endpointWait are the routes of TestPyroscopeEndpoints'
// requests: one spends its time on CPU, the other waiting.
const (
	endpointSpin = "/spin/{id}"
	endpointWait = "/wait"
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

// TestPyroscopeEndpoints runs requests of two routes under the profiler,
// sending to a real Grafana Pyroscope, and checks that the endpoint is a
// label there: Pyroscope lists both endpoints, a query with
// {service_name=..., endpoint=...} returns for the CPU, off-CPU and
// request-count profiles exactly what was sent for that endpoint, and the
// request counts are the requests run.
func TestPyroscopeEndpoints(t *testing.T) {
	py := startPyroscope(t)
	proxy := startRecordingProxy(t, strings.TrimPrefix(py.URL, "http://"), py.URL)
	run := &pyroscopeRun{service: "pprofotel-endpoints", logs: new(syncBuffer)}
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
		requestLoop(stop, tracer, endpointSpin, func() { spinRequest(5 * time.Millisecond) }, &spun)
		done <- struct{}{}
	}()
	go func() {
		requestLoop(stop, tracer, endpointWait, func() { waitRequest(5 * time.Millisecond) }, &waited)
		done <- struct{}{}
	}()
	time.Sleep(3 * time.Second)
	close(stop)
	<-done
	<-done
	run.stopped = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
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
	if s := run.stats; s.EndpointsOverflowed != 0 || s.EndpointsUnknown != 0 {
		t.Errorf("stats: %d requests overflowed, %d unknown; want none", s.EndpointsOverflowed, s.EndpointsUnknown)
	}

	start, end := run.queryRange()
	var values struct {
		Names []string `json:"names"`
	}
	py.query(t, "LabelValues", map[string]any{
		"name": "endpoint", "matchers": []string{run.selector()}, "start": start, "end": end,
	}, &values)
	if want := []string{endpointSpin, endpointWait}; !slices.Equal(values.Names, want) {
		t.Errorf("Pyroscope lists the endpoints %q, want %q", values.Names, want)
	}

	sent := sentByEndpoint(t, run)
	for _, tt := range []struct {
		id, endpoint string
		// worked is what must have been sent for the comparison to
		// mean anything.
		worked bool
	}{
		{"process_cpu:cpu:nanoseconds:cpu:nanoseconds", endpointSpin, true},
		{"process_cpu:cpu:nanoseconds:cpu:nanoseconds", endpointWait, false},
		{offCPUType, endpointWait, true},
		{offCPUType, endpointSpin, false},
		{requestsType, endpointSpin, true},
		{requestsType, endpointWait, true},
	} {
		want := sent[tt.id][tt.endpoint]
		if tt.worked && want == 0 {
			t.Errorf("%s: nothing sent for endpoint %s; the comparison proves nothing", tt.id, tt.endpoint)
		}
		var fg flamegraphResponse
		selector := `{service_name="` + run.service + `",endpoint="` + tt.endpoint + `"}`
		py.query(t, "SelectMergeStacktraces", map[string]any{
			"profile_typeID": tt.id, "label_selector": selector, "start": start, "end": end,
		}, &fg)
		if got := fg.total(t); got != want {
			t.Errorf("%s %s: Pyroscope's total %d, sent %d", tt.id, selector, got, want)
		}
	}
	if got, want := sent[requestsType][endpointSpin], spun.Load(); got != want {
		t.Errorf("%d requests of %s counted, %d run", got, endpointSpin, want)
	}
	if got, want := sent[requestsType][endpointWait], waited.Load(); got != want {
		t.Errorf("%d requests of %s counted, %d run", got, endpointWait, want)
	}
}

// sentByEndpoint returns, per Pyroscope profile type and endpoint, the
// total the run sent, in Pyroscope's units.
func sentByEndpoint(t *testing.T, run *pyroscopeRun) map[string]map[string]int64 {
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
						endpoint := ""
						for _, ai := range s.GetAttributeIndices() {
							if a := d.GetAttributeTable()[ai]; str[a.GetKeyStrindex()] == "endpoint" {
								endpoint = a.GetValue().GetStringValue()
							}
						}
						for _, v := range s.GetValues() {
							out[id][endpoint] += v * scale
						}
					}
				}
			}
		}
	}
	return out
}
