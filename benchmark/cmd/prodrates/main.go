// Command prodrates measures routes and request counts at production
// rates, end to end (issue 34): local root spans started through
// labels.WrapTracerProvider at a set rate from one goroutine per P, each
// spinning a little work, the profiler running with the CPU profile
// continuous (-duty sets another duty cycle) and the default window, its
// windows kept in memory as the OTLP exporter would send them. It
// reports the rate reached, the share
// of the labelled CPU samples that carry their request's route, the
// requests counted against those sent, the profiler's Stats, and the
// memory the request tracker held at the end of the load (the heap
// profile's in-use bytes allocated under package
// internal/collect/requests, sampled every 512 KiB on average).
//
// The load starts once the first window (10 s) has been collected, so
// that a 60 s load fills one whole default window; the profiler stops
// when the load ends. With -leak n, n local root spans that never end are
// started first, then the load. With -rename the spans start without a
// route, named "GET", and are renamed to method and route as they end, as
// otelhttp names its spans around a ServeMux. With -offcpu the off-CPU
// profile records beside the CPU profile, at its default duty cycle, and
// the share of its labelled samples that carry their route is reported
// too; -wait makes each request sleep that long after its work, so that
// the off-CPU profile has waits of the requests to sample, and
// -goroutines runs the load from that many goroutines rather than one per
// P, so that the rate holds while requests wait. With -outlive n every
// n-th request starts a goroutine that outlives it, parked until the
// profiler stops, and the goroutine profile records too: the share of its
// labelled samples that carry their request's route is reported.
//
//	go run ./cmd/prodrates -rate 50000 -for 60s
//	go run ./cmd/prodrates -rate 50000 -for 60s -rename
//	go run ./cmd/prodrates -rate 50000 -for 60s -rename -offcpu -wait 1ms -goroutines 256
//	go run ./cmd/prodrates -leak 100000 -requests 10000
//	go run ./cmd/prodrates -rate 10000 -for 60s -rename -outlive 1000
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	pprofprofile "github.com/google/pprof/profile"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/protobuf/proto"

	profiler "github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/labels"
	_ "github.com/pprofotel/profiler/offcpu"
)

// httpRoutes are the requests' routes, given to Start as http.route. A
// request's route index is the last byte of its span id (routeIDs).
var httpRoutes = []string{"/users/{id}", "/orders"}

// routes are the httpRoutes as routes: with -rename, the span names
// otelhttp gives them.
var routes = httpRoutes

// renamed is -rename: requests named as otelhttp names them over a mux.
var renamed bool

// duty is -duty: the CPU duty cycle, 0 for the profiler's default.
var duty int

// withOffCPU is -offcpu: the off-CPU profile records too.
var withOffCPU bool

// wait is -wait: how long each request sleeps after its work.
var wait time.Duration

// goroutines is -goroutines: the goroutines the load runs from, 0 for
// one per P.
var goroutines int

// outlive is -outlive: every outlive-th request starts a goroutine that
// outlives it, parked until released is closed; 0 for none.
var (
	outlive  int64
	released = make(chan struct{})
)

func main() {
	rate := flag.Int("rate", 50000, "local root spans a second, all goroutines together; 0: as fast as they go")
	dur := flag.Duration("for", 60*time.Second, "how long the load runs")
	requests := flag.Int("requests", 0, "send this many requests instead of running -for")
	work := flag.Int("work", 2000, "rounds of arithmetic each request spins (about 0.7 ns each)")
	leak := flag.Int("leak", 0, "local root spans started first that never end")
	flag.BoolVar(&renamed, "rename", false, "start each span named GET without a route, and rename it to the method and route before it ends, as otelhttp around a ServeMux does")
	window := flag.Duration("window", 0, "the profiler's window; 0: its default (60s)")
	flag.BoolVar(&withOffCPU, "offcpu", false, "record the off-CPU profile too, at its default duty cycle")
	flag.DurationVar(&wait, "wait", 0, "how long each request sleeps after its work, a wait for the off-CPU profile")
	flag.IntVar(&goroutines, "goroutines", 0, "goroutines the load runs from; 0: one per P")
	flag.Int64Var(&outlive, "outlive", 0, "every n-th request starts a goroutine that outlives it, parked until the profiler stops; the goroutine profile records too")
	flag.IntVar(&duty, "duty", 100, "the CPU profile's duty cycle in percent (WithCPUDutyCycle); 0: the profiler's default")
	flag.Parse()
	if err := run(*rate, *dur, *requests, *work, *leak, *window); err != nil {
		log.Fatal(err)
	}
}

// profileTypes returns the profiles the run records: CPU, off-CPU with
// -offcpu, and the goroutine profile with -outlive.
func profileTypes() []profiler.ProfileType {
	types := []profiler.ProfileType{profiler.CPUProfile}
	if withOffCPU {
		types = append(types, profiler.OffCPUProfile)
	}
	if outlive > 0 {
		types = append(types, profiler.GoroutineProfile)
	}
	return types
}

func run(rate int, dur time.Duration, requests, work, leak int, window time.Duration) error {
	exp := &memExporter{}
	opts := []profiler.Option{profiler.WithExporter(exp), profiler.WithServiceName("prodrates"),
		profiler.WithProfileTypes(profileTypes()...),
		profiler.WithProcessContext(false), profiler.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil)))}
	if duty > 0 {
		opts = append(opts, profiler.WithCPUDutyCycle(duty))
	}
	if window > 0 {
		opts = append(opts, profiler.WithWindow(window))
	}
	if renamed {
		routes = []string{"GET /users/{id}", "GET /orders"}
	}
	p, err := profiler.Start(opts...)
	if err != nil {
		return err
	}
	sdk := sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(&routeIDs{}))
	tracer := labels.WrapTracerProvider(sdk).Tracer("prodrates")
	for p.Stats().WindowsCollected == 0 {
		time.Sleep(100 * time.Millisecond)
	}
	leaked := startLeaked(tracer, leak)
	heapBefore := trackerHeap()
	cpu0, start := cpuTime(), time.Now()
	sent := load(tracer, rate, dur, requests, work)
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	heapAfter := trackerHeap()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		return err
	}
	for _, s := range leaked {
		s.End()
	}
	close(released)
	var total int64
	for _, n := range sent {
		total += n
	}
	fmt.Printf("GOMAXPROCS %d, window %v, CPU duty %d %%, load %v: %d requests (%v), %.0f a second, %.2f µs of CPU each\n",
		runtime.GOMAXPROCS(0), window, duty, elapsed.Round(time.Millisecond), total, sent,
		float64(total)/elapsed.Seconds(), float64(cpu.Microseconds())/float64(total))
	if leak > 0 {
		fmt.Printf("%d spans left running before the load\n", leak)
	}
	return report(exp.requests(), sent, p.Stats(), heapBefore, heapAfter)
}

// startLeaked starts n local root spans on a goroutine of its own and
// returns them unended.
func startLeaked(tracer trace.Tracer, n int) []trace.Span {
	spans := make([]trace.Span, 0, n)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range n {
			_, s := tracer.Start(context.Background(), "stream", trace.WithAttributes(attribute.String("http.route", "/stream")))
			spans = append(spans, s)
		}
	}()
	<-done
	return spans
}

// load runs requests from -goroutines goroutines, each paced to its share
// of rate, for dur or until requests are sent; it returns the requests
// sent by route.
func load(tracer trace.Tracer, rate int, dur time.Duration, requests, work int) []int64 {
	procs := cmp.Or(goroutines, runtime.GOMAXPROCS(0))
	counts := make([]int64, len(httpRoutes))
	var mu sync.Mutex
	var wg sync.WaitGroup
	var next atomic.Int64
	start := time.Now()
	for range procs {
		wg.Go(func() {
			ctxs := make([]context.Context, len(httpRoutes))
			for i := range ctxs {
				ctxs[i] = context.WithValue(context.Background(), routeKey{}, i)
			}
			mine := make([]int64, len(httpRoutes))
			for n := int64(0); ; n++ {
				j := next.Add(1)
				if requests > 0 && j > int64(requests) {
					break
				}
				if n%64 == 0 {
					elapsed := time.Since(start)
					if requests == 0 && elapsed >= dur {
						break
					}
					if rate > 0 {
						due := time.Duration(float64(n) * float64(procs) / float64(rate) * float64(time.Second))
						if due > elapsed {
							time.Sleep(due - elapsed)
						}
					}
				}
				i := int(j) % len(httpRoutes)
				request(ctxs[i], tracer, i, work, outlive > 0 && j%outlive == 0)
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

// request is one request of route i; with outlives set it starts a
// goroutine that outlives it.
//
//go:noinline
func request(ctx context.Context, tracer trace.Tracer, i, work int, outlives bool) (x uint64) {
	var span trace.Span
	if renamed {
		_, span = tracer.Start(ctx, "GET")
	} else {
		_, span = tracer.Start(ctx, "GET", trace.WithAttributes(attribute.String("http.route", httpRoutes[i])))
	}
	if outlives {
		go outlivesItsRequest()
	}
	for range work {
		x = x*6364136223846793005 + 1442695040888963407
	}
	if wait > 0 {
		time.Sleep(wait)
	}
	if renamed {
		span.SetName(routes[i])
	}
	span.End()
	return x
}

// outlivesItsRequest parks until the profiler stopped, with the labels of
// the request that started it.
//
//go:noinline
func outlivesItsRequest() { <-released }

// routeKey is the context key of a request's route index, for routeIDs.
type routeKey struct{}

// routeIDs is an IDGenerator whose span ids end in the route index the
// starting context carries, from a counter otherwise; 0xff for none.
type routeIDs struct{ n atomic.Uint64 }

func (g *routeIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	var tid trace.TraceID
	binary.BigEndian.PutUint64(tid[:8], 0x7070726f66726174)
	binary.BigEndian.PutUint64(tid[8:], g.n.Add(1))
	return tid, g.NewSpanID(ctx, tid)
}

func (g *routeIDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	var sid trace.SpanID
	binary.BigEndian.PutUint64(sid[:], g.n.Add(1)<<8)
	sid[7] = 0xff
	if route, ok := ctx.Value(routeKey{}).(int); ok {
		sid[7] = byte(route)
	}
	return sid
}

// memExporter keeps each window's request as the wire would carry it.
type memExporter struct {
	mu   sync.Mutex
	wire [][]byte
}

func (e *memExporter) Export(_ context.Context, req *collectorpb.ExportProfilesServiceRequest) error {
	b, err := proto.Marshal(req)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.wire = append(e.wire, b)
	return nil
}

func (e *memExporter) Shutdown(context.Context) error { return nil }

func (e *memExporter) requests() []*collectorpb.ExportProfilesServiceRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*collectorpb.ExportProfilesServiceRequest
	for _, b := range e.wire {
		req := new(collectorpb.ExportProfilesServiceRequest)
		if err := proto.Unmarshal(b, req); err != nil {
			panic(err)
		}
		out = append(out, req)
	}
	return out
}

// report prints what the windows say of the requests.
func report(reqs []*collectorpb.ExportProfilesServiceRequest, sent []int64, st profiler.Stats, heapBefore, heapAfter int64) error {
	// The off-CPU samples are counted by waits as well as by their
	// value: under a duty cycle the values are scaled by the window's
	// length over the time traced, and a window whose stretches were
	// read in part scales its few waits up a thousandfold.
	cpu, offCPU, offCPUWaits, goroutine := new(share), new(share), new(share), new(share)
	shares := map[string]*share{profiler.CPUProfile.String(): cpu, profiler.OffCPUProfile.String(): offCPU,
		profiler.GoroutineProfile.String(): goroutine}
	counted := map[string]int64{}
	var byWindow []string // the goroutine profile's share, window by window
	for _, req := range reqs {
		d := req.GetDictionary()
		inWindow := new(share)
		for _, rp := range req.GetResourceProfiles() {
			for _, sp := range rp.GetScopeProfiles() {
				name := scopeName(sp)
				for _, p := range sp.GetProfiles() {
					for _, s := range p.GetSamples() {
						n := sampleCount(s)
						ep := route(d, s)
						if name == "requests" {
							counted[ep] += n
						} else if sh := shares[name]; sh != nil && s.GetLinkIndex() != 0 {
							sid := d.GetLinkTable()[s.GetLinkIndex()].GetSpanId()
							sh.add(sid, ep, n)
							if sh == goroutine {
								inWindow.add(sid, ep, n)
							}
							if sh == offCPU {
								offCPUWaits.add(sid, ep, int64(max(len(s.GetTimestampsUnixNano()), 1)))
							}
						}
					}
				}
			}
		}
		if inWindow.labelled > 0 {
			byWindow = append(byWindow, fmt.Sprintf("%d/%d", inWindow.right, inWindow.labelled))
		}
	}
	fmt.Printf("windows %d; labelled CPU samples %s\n", st.WindowsCollected, cpu)
	if withOffCPU {
		fmt.Printf("labelled off-CPU waits %s\n", offCPUWaits)
		fmt.Printf("their time (ns, scaled) %s\n", offCPU)
	}
	if outlive > 0 {
		fmt.Printf("labelled goroutines, summed over the windows %s\n", goroutine)
		fmt.Printf("labelled goroutines with their route, window by window: %s\n", strings.Join(byWindow, " "))
	}
	exact := true
	for i, r := range routes {
		exact = exact && counted[r] == sent[i]
	}
	fmt.Printf("requests counted %v, sent %v: exact %v\n", counted, sent, exact)
	fmt.Printf("tracker heap (in-use, sampled) before the load %.1f MiB, at its end %.1f MiB\n",
		float64(heapBefore)/(1<<20), float64(heapAfter)/(1<<20))
	fmt.Printf("stats %+v\n", st)
	return nil
}

// share counts a profile's labelled samples, and those that carry the
// route of their request.
type share struct {
	labelled, right int64
	wrong           map[string]int64
}

// add counts a sample of value n linked to span id sid, with route ep.
func (sh *share) add(sid []byte, ep string, n int64) {
	sh.labelled += n
	if len(sid) == 8 && ep == routeOf(sid[7]) {
		sh.right += n
		return
	}
	if sh.wrong == nil {
		sh.wrong = map[string]int64{}
	}
	sh.wrong[ep] += n
}

func (sh *share) String() string {
	pct := 0.0
	if sh.labelled > 0 {
		pct = 100 * float64(sh.right) / float64(sh.labelled)
	}
	return fmt.Sprintf("%d, with their route %d (%.2f %%), others by route %v", sh.labelled, sh.right, pct, sh.wrong)
}

// routeOf returns the route of the requests whose span ids end in b:
// the leaked spans' for 0xff.
func routeOf(b byte) string {
	if int(b) < len(routes) {
		return routes[b]
	}
	return "/stream"
}

func scopeName(sp *profilespb.ScopeProfiles) string {
	for _, kv := range sp.GetScope().GetAttributes() {
		if kv.GetKey() == "pprofotel.profile.name" {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

func sampleCount(s *profilespb.Sample) int64 {
	var n int64
	for _, v := range s.GetValues() {
		n += v
	}
	return n
}

// route returns the sample's route attribute, "" if none.
func route(d *profilespb.ProfilesDictionary, s *profilespb.Sample) string {
	for _, i := range s.GetAttributeIndices() {
		kv := d.GetAttributeTable()[i]
		if d.GetStringTable()[kv.GetKeyStrindex()] != "route" {
			continue
		}
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			return v.StringValue
		case *commonpb.AnyValue_StringValueStrindex:
			return d.GetStringTable()[v.StringValueStrindex]
		}
	}
	return ""
}

// trackerHeap returns the in-use heap bytes, as the heap profile samples
// them, allocated under package internal/collect/requests, after a
// collection.
func trackerHeap() int64 {
	runtime.GC()
	var buf bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&buf, 0); err != nil {
		panic(err)
	}
	prof, err := pprofprofile.Parse(&buf)
	if err != nil {
		panic(err)
	}
	idx := -1
	for i, st := range prof.SampleType {
		if st.Type == "inuse_space" {
			idx = i
		}
	}
	var total int64
	for _, s := range prof.Sample {
		if underTracker(s) {
			total += s.Value[idx]
		}
	}
	return total
}

func underTracker(s *pprofprofile.Sample) bool {
	for _, loc := range s.Location {
		for _, ln := range loc.Line {
			if strings.Contains(ln.Function.Name, "internal/collect/requests.") {
				return true
			}
		}
	}
	return false
}

// cpuTime returns the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
