package integration

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"

	profiler "github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/exporters/otlpprofilehttp"
	"github.com/pprofotel/profiler/internal/testutil/receivertest"
	"github.com/pprofotel/profiler/labels"
)

// The instrumentations services use (issue 34, item 4): each test serves a
// small service on loopback through the real instrumentation library, its
// tracer provider wrapped by labels.WrapTracerProvider, profiled in 1 s
// windows with the CPU profile recording continuously and exported over
// OTLP/HTTP to an in-process receiver. Each service has three routes:
// "users" and "orders", which spin instrRequestCPU each, and "slow", whose
// one request spins across a window's end (slowRequest), so that its
// samples are sent in two windows. What the profiler sent is checked
// against what the handlers saw:
// every CPU sample linked to a request's span carries the route the
// instrumentation gives that request, and the requests counted per
// route over all windows are the requests served.

// The routes of the instrumented services, as the tests name them; each
// case says what route its instrumentation makes of them.
const (
	routeUsers  = "users"
	routeOrders = "orders"
	routeSlow   = "slow"
)

// instrLoad is how many requests each of the fast routes gets, from
// instrClients clients at once; the slow route gets one.
const (
	instrLoad    = 150
	instrClients = 4
	// instrRequestCPU is the CPU a fast request spins: with 300 of them,
	// about 60 samples a route.
	instrRequestCPU = 2 * time.Millisecond
	instrWindow     = time.Second
)

// instrCase is one instrumentation: how its service is served, and the
// route the profiler should send for each route.
type instrCase struct {
	name   string
	routes map[string]string
	// serve starts the service on loopback, its routes handled by h, and
	// returns how a client calls a route (id distinguishes requests, for
	// routes with a parameter).
	serve func(t *testing.T, tp trace.TracerProvider, h *instrHandlers) (call func(route string, id int) error)
}

var instrCases = []instrCase{
	{
		// otelhttp wraps the whole mux, as its documentation shows: the
		// span starts before the mux has matched, named after the method
		// only, and otelhttp renames it to "GET /users/{id}" once the
		// handler has returned (it never sets http.route on the span).
		name: "otelhttp around ServeMux",
		routes: map[string]string{
			routeUsers: "GET /users/{id}", routeOrders: "POST /orders", routeSlow: "GET /slow/{id}",
		},
		serve: func(t *testing.T, tp trace.TracerProvider, h *instrHandlers) func(string, int) error {
			mux := http.NewServeMux()
			mux.HandleFunc("GET /users/{id}", h.http(routeUsers))
			mux.HandleFunc("POST /orders", h.http(routeOrders))
			mux.HandleFunc("GET /slow/{id}", h.http(routeSlow))
			return serveHTTP(t, otelhttp.NewHandler(mux, "server", otelhttp.WithTracerProvider(tp)))
		},
	},
	{
		// otelhttp inside the mux, one handler per pattern: the mux has
		// set Request.Pattern before the span starts, so http.route is
		// among the start attributes.
		name: "otelhttp inside ServeMux",
		routes: map[string]string{
			routeUsers: "/users/{id}", routeOrders: "/orders", routeSlow: "/slow/{id}",
		},
		serve: func(t *testing.T, tp trace.TracerProvider, h *instrHandlers) func(string, int) error {
			mux := http.NewServeMux()
			for pattern, route := range map[string]string{"GET /users/{id}": routeUsers, "POST /orders": routeOrders, "GET /slow/{id}": routeSlow} {
				mux.Handle(pattern, otelhttp.NewHandler(h.http(route), pattern, otelhttp.WithTracerProvider(tp)))
			}
			return serveHTTP(t, mux)
		},
	},
	{
		// otelgrpc's server stats handler names the span after the full
		// method, without its leading slash, when it starts it.
		name: "otelgrpc",
		routes: map[string]string{
			routeUsers: "pprofotel.it.Work/Users", routeOrders: "pprofotel.it.Work/Orders", routeSlow: "pprofotel.it.Work/Slow",
		},
		serve: serveGRPC,
	},
	{
		// otelgin gives the span gin's route template (FullPath) as
		// http.route when it starts it.
		name: "gin with otelgin",
		routes: map[string]string{
			routeUsers: "/users/:id", routeOrders: "/orders", routeSlow: "/slow/:id",
		},
		serve: func(t *testing.T, tp trace.TracerProvider, h *instrHandlers) func(string, int) error {
			gin.SetMode(gin.ReleaseMode)
			r := gin.New()
			r.Use(otelgin.Middleware("gin", otelgin.WithTracerProvider(tp)))
			r.GET("/users/:id", gin.WrapF(h.http(routeUsers)))
			r.POST("/orders", gin.WrapF(h.http(routeOrders)))
			r.GET("/slow/:id", gin.WrapF(h.http(routeSlow)))
			return serveHTTP(t, r)
		},
	},
	{
		// chi has no OpenTelemetry middleware of its own: otelhttp wraps
		// the router, and chiRoute, run once chi has matched, sets the
		// route template on the span as http.route. (Without chiRoute
		// the span stays "GET": chi sets Request.Pattern on its own copy
		// of the request, which otelhttp never sees.)
		name: "chi with otelhttp and a route middleware",
		routes: map[string]string{
			routeUsers: "/users/{id}", routeOrders: "/orders", routeSlow: "/slow/{id}",
		},
		serve: func(t *testing.T, tp trace.TracerProvider, h *instrHandlers) func(string, int) error {
			r := chi.NewRouter()
			r.Group(func(r chi.Router) {
				r.Use(chiRoute)
				r.Get("/users/{id}", h.http(routeUsers))
				r.Post("/orders", h.http(routeOrders))
				r.Get("/slow/{id}", h.http(routeSlow))
			})
			return serveHTTP(t, otelhttp.NewHandler(r, "server", otelhttp.WithTracerProvider(tp)))
		},
	},
}

// chiRoute sets the route chi matched on the request's span as http.route.
// As an inline middleware (chi.Router.Group or With) it runs after chi has
// matched the route, before the handler.
func chiRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if pattern := chi.RouteContext(r.Context()).RoutePattern(); pattern != "" {
			trace.SpanFromContext(r.Context()).SetAttributes(attribute.String("http.route", pattern))
		}
		next.ServeHTTP(w, r)
	})
}

func TestInstrumentations(t *testing.T) {
	for _, c := range instrCases {
		t.Run(c.name, func(t *testing.T) {
			run := runInstrumented(t, c)
			checkInstrumentedCPU(t, c, run)
			checkInstrumentedCounts(t, c, run)
		})
	}
}

// instrHandlers is the work of every route, and what the handlers saw:
// the route each request's span served, by span id in hex.
type instrHandlers struct {
	mu    sync.Mutex
	spans map[string]string

	// firstEnd is when the profiler's first window ended, and collected
	// returns how many windows it has collected: for slowRequest.
	firstEnd  time.Time
	collected func() int64
	// slowEnded is when the slow request's work ended.
	slowEnded time.Time
}

// serve records the span of ctx as a request of route and does the
// route's work.
func (h *instrHandlers) serve(ctx context.Context, route string) {
	sc := trace.SpanContextFromContext(ctx)
	h.mu.Lock()
	h.spans[sc.SpanID().String()] = route
	h.mu.Unlock()
	if route == routeSlow {
		h.slowRequest()
		return
	}
	spinRequest(instrRequestCPU)
}

// slowRequest spins across one window's end: from its start to 300ms
// past the first window end at least 500ms away, then until the
// profiler has collected a window or 600ms past that end, whichever
// comes first. The windows end at fixed times, firstEnd plus whole
// windows; the request ends well within the 1 s for which a window's end
// waits for the requests it saw running that may still be renamed (as
// otelhttp renames its span after the handler returns).
func (h *instrHandlers) slowRequest() {
	start := time.Now()
	end := h.firstEnd
	for end.Before(start.Add(500 * time.Millisecond)) {
		end = end.Add(instrWindow)
	}
	collected := h.collected()
	for time.Now().Before(end.Add(300 * time.Millisecond)) {
		spinRequest(10 * time.Millisecond)
	}
	for h.collected() == collected && time.Now().Before(end.Add(600*time.Millisecond)) {
		spinRequest(10 * time.Millisecond)
	}
	h.mu.Lock()
	h.slowEnded = time.Now()
	h.mu.Unlock()
}

func (h *instrHandlers) http(route string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h.serve(r.Context(), route)
		io.WriteString(w, "ok")
	}
}

func (h *instrHandlers) routes() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.spans)
}

// serveHTTP serves h on loopback until the test ends and returns a client
// of the three routes.
func serveHTTP(t *testing.T, h http.Handler) func(string, int) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: instrClients + 1}}
	t.Cleanup(client.CloseIdleConnections)
	base := "http://" + ln.Addr().String()
	return func(route string, id int) error {
		var resp *http.Response
		var err error
		switch route {
		case routeOrders:
			resp, err = client.Post(base+"/orders", "text/plain", nil)
		default:
			resp, err = client.Get(fmt.Sprintf("%s/%s/%d", base, route, id))
		}
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", route, resp.Status)
		}
		return nil
	}
}

// serveGRPC serves the three routes as unary methods of a gRPC service,
// instrumented with otelgrpc's server stats handler.
func serveGRPC(t *testing.T, tp trace.TracerProvider, h *instrHandlers) func(string, int) error {
	methods := map[string]string{routeUsers: "Users", routeOrders: "Orders", routeSlow: "Slow"}
	desc := grpc.ServiceDesc{ServiceName: "pprofotel.it.Work", HandlerType: (*any)(nil)}
	for route, method := range methods {
		desc.Methods = append(desc.Methods, grpc.MethodDesc{
			MethodName: method,
			Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				if err := dec(new(emptypb.Empty)); err != nil {
					return nil, err
				}
				h.serve(ctx, route)
				return new(emptypb.Empty), nil
			},
		})
	}
	srv := grpc.NewServer(grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(tp))))
	srv.RegisterService(&desc, struct{}{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///"+ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return func(route string, _ int) error {
		return conn.Invoke(context.Background(), "/pprofotel.it.Work/"+methods[route], new(emptypb.Empty), new(emptypb.Empty))
	}
}

// instrRun is what one instrumented run sent and served.
type instrRun struct {
	sent     map[string]int    // requests served, by route
	spans    map[string]string // the route of each request's span, by span id
	requests []*collectorpb.ExportProfilesServiceRequest
	stats    profiler.Stats
	// slowEnded is when the slow request's work ended.
	slowEnded time.Time
}

// runInstrumented profiles c's service under its load and returns once
// the profiler has stopped.
func runInstrumented(t *testing.T, c instrCase) *instrRun {
	recv := &receivertest.HTTPReceiver{}
	srv := receivertest.StartHTTP(t, recv)
	exp, err := otlpprofilehttp.New(context.Background(),
		otlpprofilehttp.WithEndpointURL(srv.URL+"/v1development/profiles"),
		otlpprofilehttp.WithTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	recorded := tracetest.NewInMemoryExporter()
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSyncer(recorded))
	t.Cleanup(func() { sdk.Shutdown(context.Background()) })
	h := &instrHandlers{spans: make(map[string]string)}
	call := c.serve(t, labels.WrapTracerProvider(sdk), h)

	logs := &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("profiler log:\n%s", logs)
		}
	})
	p, err := profiler.Start(profiler.WithExporter(exp), profiler.WithServiceName("instrumentations-it"),
		profiler.WithWindow(instrWindow), profiler.WithCPUDutyCycle(100),
		profiler.WithProfileTypes(profiler.CPUProfile), profiler.WithProcessContext(false),
		profiler.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first window", func() bool { return len(recv.Calls()) > 0 })
	h.firstEnd = windowEnd(recv.Requests(t)[0])
	h.collected = func() int64 { return p.Stats().WindowsCollected }
	run := &instrRun{sent: sendInstrLoad(t, call)}
	total := 0
	for _, n := range run.sent {
		total += n
	}
	// A client can see its response before the server's span has ended:
	// every span ends before the profiler stops, so that every request
	// is counted.
	waitFor(t, "every request's span to end", func() bool { return len(recorded.GetSpans()) >= total })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound: Stop returns once delivered
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
	run.stats = p.Stats()
	run.spans = h.routes()
	run.slowEnded = h.slowEnded
	run.requests = recv.Requests(t)
	t.Logf("served %v; %d spans; %d export requests; stats %+v", run.sent, len(recorded.GetSpans()), len(run.requests), run.stats)
	return run
}

// sendInstrLoad sends the slow request and, meanwhile, instrLoad requests
// to each fast route from instrClients clients, and returns the requests
// served by route. Every request must succeed.
func sendInstrLoad(t *testing.T, call func(string, int) error) map[string]int {
	var wg sync.WaitGroup
	errs := make(chan error, 2*instrLoad+1)
	wg.Go(func() {
		if err := call(routeSlow, 1); err != nil {
			errs <- err
		}
	})
	jobs := make(chan int)
	for range instrClients {
		wg.Go(func() {
			for i := range jobs {
				route := routeUsers
				if i%2 == 1 {
					route = routeOrders
				}
				if err := call(route, i); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range 2 * instrLoad {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("request: %v", err)
	}
	return map[string]int{routeUsers: instrLoad, routeOrders: instrLoad, routeSlow: 1}
}

// checkInstrumentedCPU checks that every CPU sample linked to a request's
// span carries that request's route, that every route has samples, and
// that some of the slow request's samples came in a window that ended
// while it ran.
func checkInstrumentedCPU(t *testing.T, c instrCase, run *instrRun) {
	samples := map[string]int64{} // by route
	wrong := map[string]map[string]int64{}
	var slowRunning int64 // the slow request's samples in windows that ended while it ran
	for _, req := range run.requests {
		pd := &profilespb.ProfilesData{ResourceProfiles: req.GetResourceProfiles(), Dictionary: req.GetDictionary()}
		d := dict{pd.GetDictionary()}
		running := windowEnd(req).Before(run.slowEnded)
		for _, p := range profilesOf(pd, "cpu") {
			for _, s := range p.GetSamples() {
				span := sampleSpan(t, d, s)
				if span == "" {
					continue
				}
				route, ok := run.spans[span]
				if !ok {
					t.Errorf("a CPU sample linked to span %s, which served no request", span)
					continue
				}
				n := sum(s)
				samples[route] += n
				if route == routeSlow && running {
					slowRunning += n
				}
				if ep, _ := sampleAttr(d, s, routeKey); ep != c.routes[route] {
					if wrong[route] == nil {
						wrong[route] = map[string]int64{}
					}
					wrong[route][ep] += n
				}
			}
		}
	}
	t.Logf("labelled CPU samples by route: %v; %d of the slow request's in windows that ended while it ran", samples, slowRunning)
	for _, route := range []string{routeUsers, routeOrders, routeSlow} {
		if samples[route] == 0 {
			t.Errorf("%s: no labelled CPU sample", route)
		}
		if len(wrong[route]) > 0 {
			t.Errorf("%s: of %d labelled CPU samples, these carry another route than %q: %v", route, samples[route], c.routes[route], wrong[route])
		}
	}
	if slowRunning == 0 {
		t.Errorf("none of the slow request's samples came in a window that ended while it ran")
	}
}

// checkInstrumentedCounts checks that the requests counted per route,
// over all windows, are the requests served, and that nothing else was
// counted.
func checkInstrumentedCounts(t *testing.T, c instrCase, run *instrRun) {
	got := countedByRoute(run.requests)
	t.Logf("requests counted by route: %v", got)
	want := map[string]int64{}
	for route, n := range run.sent {
		want[c.routes[route]] = int64(n)
	}
	for ep, n := range want {
		if got[ep] != n {
			t.Errorf("%q: %d requests counted, %d served", ep, got[ep], n)
		}
	}
	for ep, n := range got {
		if _, ok := want[ep]; !ok {
			t.Errorf("%d requests counted under %q, none of the routes %v", n, ep, slices.Sorted(maps.Keys(want)))
		}
	}
}

// windowEnd returns the end of the window req carries: the latest end of
// its profiles' time ranges.
func windowEnd(req *collectorpb.ExportProfilesServiceRequest) time.Time {
	var end uint64
	for _, rp := range req.GetResourceProfiles() {
		for _, sp := range rp.GetScopeProfiles() {
			for _, p := range sp.GetProfiles() {
				end = max(end, p.GetTimeUnixNano()+p.GetDurationNano())
			}
		}
	}
	return time.Unix(0, int64(end))
}
