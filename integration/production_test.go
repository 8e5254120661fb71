package integration

import (
	"context"
	"encoding/binary"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"

	profiler "github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/exporters/otlpprofilehttp"
	"github.com/pprofotel/profiler/internal/testutil/receivertest"
	"github.com/pprofotel/profiler/labels"
)

// The production rates of issue 34, end to end, in CI: many more local
// root spans in one window than the tracker of main 387098c remembered
// (65,536), at the default 60 s window, and local root spans that never
// end followed by ordinary requests. They count requests, not seconds:
// the run takes what the machine gives it, and under the race detector
// that is far below the rate of the hand-run tool
// (benchmark/cmd/prodrates), whose figures are in benchmark/README.md.

// prodRoutes are the routes of the production-rate requests, each
// given to Start as http.route. A request's route is the last byte of its
// span id (routeIDs), so that each CPU sample's link tells its route.
var prodRoutes = []string{"/users/{id}", "/orders"}

// routeIndexKey is the context key of a request's route index, for routeIDs.
type routeIndexKey struct{}

// routeIDs is an IDGenerator whose span ids end in the route index the
// starting context carries (routeIndexKey): an id per span, unique within the
// run, from a counter.
type routeIDs struct{ n atomic.Uint64 }

func (g *routeIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	n := g.n.Add(1)
	var tid trace.TraceID
	binary.BigEndian.PutUint64(tid[:8], 0x7070726f666f7465) // "pprofote"
	binary.BigEndian.PutUint64(tid[8:], n)
	return tid, g.NewSpanID(ctx, tid)
}

func (g *routeIDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	var sid trace.SpanID
	binary.BigEndian.PutUint64(sid[:], g.n.Add(1)<<8)
	route, _ := ctx.Value(routeIndexKey{}).(int)
	sid[7] = byte(route)
	return sid
}

// prodRenamed are the routes of the requests of a run whose spans
// start as "GET" and are renamed just before they end, as otelhttp names
// its spans around a ServeMux.
var prodRenamed = []string{"GET /users/{id}", "GET /orders"}

// prodRequest is one request of route i: a local root span with the route
// at start, or renamed before it ends, spinning work rounds of the
// generator in it.
//
//go:noinline
func prodRequest(ctx context.Context, tracer trace.Tracer, i, work int, renamed bool) (x uint64) {
	var span trace.Span
	if renamed {
		_, span = tracer.Start(ctx, "GET")
	} else {
		_, span = tracer.Start(ctx, "GET", trace.WithAttributes(attribute.String("http.route", prodRoutes[i])))
	}
	for range work {
		x = x*6364136223846793005 + 1442695040888963407
	}
	if renamed {
		span.SetName(prodRenamed[i])
	}
	span.End()
	return x
}

// prodRun is a profiled run of local root spans.
type prodRun struct {
	// routes are the requests' routes by route: prodRoutes, or
	// prodRenamed when renamed.
	routes   []string
	renamed  bool
	tracer   trace.Tracer
	p        *profiler.Profiler
	recv     *receivertest.HTTPReceiver
	requests []*collectorpb.ExportProfilesServiceRequest
	stats    profiler.Stats
}

// startProdRun starts the profiler with the given options, exporting to
// an in-process receiver, and a tracer labelling with routeIDs' ids.
func startProdRun(t *testing.T, opts ...profiler.Option) *prodRun {
	recv := &receivertest.HTTPReceiver{}
	srv := receivertest.StartHTTP(t, recv)
	exp, err := otlpprofilehttp.New(context.Background(),
		otlpprofilehttp.WithEndpointURL(srv.URL+"/v1development/profiles"),
		otlpprofilehttp.WithTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	sdk := sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(&routeIDs{}))
	t.Cleanup(func() { sdk.Shutdown(context.Background()) })
	logs := &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("profiler log:\n%s", logs)
		}
	})
	opts = append([]profiler.Option{profiler.WithExporter(exp), profiler.WithServiceName("prodrates-it"),
		profiler.WithProcessContext(false),
		profiler.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))}, opts...)
	p, err := profiler.Start(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return &prodRun{tracer: labels.WrapTracerProvider(sdk).Tracer(tracerID), p: p, recv: recv, routes: prodRoutes}
}

// stop stops the profiler and keeps what it sent.
func (r *prodRun) stop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound: Stop returns once delivered
	defer cancel()
	if err := r.p.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
	r.stats = r.p.Stats()
	r.requests = r.recv.Requests(t)
}

// send runs n requests, alternating the routes, from two goroutines, and
// returns how many each route got.
func (r *prodRun) send(n, work int) []int64 {
	counts := make([]int64, len(prodRoutes))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			ctxs := make([]context.Context, len(prodRoutes))
			for i := range ctxs {
				ctxs[i] = context.WithValue(context.Background(), routeIndexKey{}, i)
			}
			mine := make([]int64, len(prodRoutes))
			for j := g; j < n; j += 2 {
				i := (j / 2) % len(prodRoutes)
				prodRequest(ctxs[i], r.tracer, i, work, r.renamed)
				mine[i]++
			}
			mu.Lock()
			for i, c := range mine {
				counts[i] += c
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return counts
}

// routeShare is what the CPU profiles of a run say of its requests'
// samples: how many are linked to a request, and how many of those carry
// the request's route.
type routeShare struct {
	labelled, right int64
	wrong           map[string]int64 // by the route they carry instead
}

func (s routeShare) share() float64 {
	if s.labelled == 0 {
		return 0
	}
	return float64(s.right) / float64(s.labelled)
}

// cpuRoutes reads the CPU samples of what the run sent.
func (r *prodRun) cpuRoutes(t *testing.T) routeShare {
	s := routeShare{wrong: map[string]int64{}}
	for _, req := range r.requests {
		pd := &profilespb.ProfilesData{ResourceProfiles: req.GetResourceProfiles(), Dictionary: req.GetDictionary()}
		d := dict{pd.GetDictionary()}
		for _, p := range profilesOf(pd, "cpu") {
			for _, smp := range p.GetSamples() {
				if smp.GetLinkIndex() == 0 {
					continue
				}
				l, err := d.link(smp.GetLinkIndex())
				if err != nil {
					t.Fatal(err)
				}
				sid := l.GetSpanId()
				if len(sid) != 8 || int(sid[7]) >= len(prodRoutes) {
					t.Fatalf("a CPU sample linked to span %x, which no request had", sid)
				}
				n := sum(smp)
				s.labelled += n
				ep, _ := sampleAttr(d, smp, routeKey)
				if ep == r.routes[sid[7]] {
					s.right += n
				} else {
					s.wrong[ep] += n
				}
			}
		}
	}
	return s
}

// counted returns the requests counted per route over all windows.
func (r *prodRun) counted() map[string]int64 { return countedByRoute(r.requests) }

// countedByRoute returns the requests counted per route in the windows
// of reqs.
func countedByRoute(reqs []*collectorpb.ExportProfilesServiceRequest) map[string]int64 {
	got := map[string]int64{}
	for _, req := range reqs {
		pd := &profilespb.ProfilesData{ResourceProfiles: req.GetResourceProfiles(), Dictionary: req.GetDictionary()}
		d := dict{pd.GetDictionary()}
		for _, p := range profilesOf(pd, requestsProfile) {
			for _, s := range p.GetSamples() {
				ep, _ := sampleAttr(d, s, routeKey)
				got[ep] += sum(s)
			}
		}
	}
	return got
}

// checkCounted checks that the requests counted are exactly sent, by
// route, and nothing else.
func checkCounted(t *testing.T, got map[string]int64, routes []string, sent []int64) {
	t.Helper()
	for i, route := range routes {
		if got[route] != sent[i] {
			t.Errorf("%s: %d requests counted, %d sent", route, got[route], sent[i])
		}
	}
	if len(got) > len(prodRoutes) {
		t.Errorf("requests counted under routes the run did not use: %v", got)
	}
}

// TestProductionRateRoutes sends 100,000 requests (local root spans,
// each spinning a few microseconds) in one window of the default 60 s, the
// CPU profile recording all of it: at least 99 % of the CPU samples
// linked to a request carry its route, and every request is counted
// under it; both with the route given at start and with spans renamed
// just before they end, as otelhttp names its spans around a ServeMux.
// The load starts once the first window, 10 s, has been sent, so
// that it falls in a whole 60 s window unless the machine sends fewer
// than 1,700 a second (the race detector's cost included); on main
// 387098c, whose tracker remembered the routes of 65,536 requests a
// window, about half of the samples carried theirs.
func TestProductionRateRoutes(t *testing.T) {
	for _, renamed := range []bool{false, true} {
		name := "route at start"
		if renamed {
			name = "renamed at end"
		}
		t.Run(name, func(t *testing.T) {
			const n = 100_000
			run := startProdRun(t, profiler.WithCPUDutyCycle(100), profiler.WithProfileTypes(profiler.CPUProfile))
			if renamed {
				run.renamed, run.routes = true, prodRenamed
			}
			waitFor(t, "the first window", func() bool { return run.p.Stats().WindowsCollected >= 1 })
			start := time.Now()
			sent := run.send(n, 10_000)
			elapsed := time.Since(start)
			run.stop(t)
			s := run.cpuRoutes(t)
			got := run.counted()
			t.Logf("%d requests in %v (%.0f a second), %d windows; labelled CPU samples %d, %d with their route (%.2f %%), others %v; counted %v; stats %+v",
				n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), run.stats.WindowsCollected,
				s.labelled, s.right, 100*s.share(), s.wrong, got, run.stats)
			if s.labelled < 50 {
				t.Errorf("%d labelled CPU samples; the requests spun for seconds", s.labelled)
			}
			if s.share() < 0.99 {
				t.Errorf("%.2f %% of the labelled CPU samples carry their request's route, want at least 99 %%", 100*s.share())
			}
			checkCounted(t, got, run.routes, sent)
		})
	}
}

// TestNeverEndingSpans starts 100,000 local root spans that never end (a
// leak in the application, long-lived streams), then sends 10,000
// requests: every one of them is counted, and the spans the tracker
// stopped following are counted in Stats. On main 387098c, whose tracker
// followed at most 65,536 running requests and never let one go, none
// was.
func TestNeverEndingSpans(t *testing.T) {
	run := startProdRun(t, profiler.WithProfileTypes(profiler.CPUProfile))
	leaked := make([]trace.Span, 0, 100_000)
	ctx := context.WithValue(context.Background(), routeIndexKey{}, 0)
	// The spans are started on a goroutine of their own, whose labels
	// they are left holding.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range cap(leaked) {
			_, span := run.tracer.Start(ctx, "stream", trace.WithAttributes(attribute.String("http.route", "/stream")))
			leaked = append(leaked, span)
		}
	}()
	<-done
	sent := run.send(10_000, 0)
	run.stop(t)
	got := run.counted()
	t.Logf("%d spans left running; requests counted %v; stats %+v", len(leaked), got, run.stats)
	for i, route := range prodRoutes {
		if got[route] != sent[i] {
			t.Errorf("%s: %d requests counted, %d sent", route, got[route], sent[i])
		}
	}
	if got["/stream"] != 0 {
		t.Errorf("%d of the spans that never ended counted as requests", got["/stream"])
	}
	// The tracker follows a bounded number of running requests and ages
	// out the oldest beyond it: some of the 100,000, never the 10,000.
	if a := run.stats.RequestsAgedOut; a <= 0 || a > int64(len(leaked)) {
		t.Errorf("Stats().RequestsAgedOut = %d, want between 1 and the %d spans left running", a, len(leaked))
	}
	for _, span := range leaked {
		span.End()
	}
}
