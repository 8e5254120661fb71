package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"

	profiler "github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/integration/testservice"
)

// The proof of issue 29 ("Done when"): the three-route service of package
// testservice under a 30 s load, profiled with PPROFOTEL_PROFILES=cpu,offcpu
// and every other setting at its default, exporting over OTLP/gRPC through
// the recording proxy to a real Pyroscope. What the profiler sent is
// compared with what the service measured of itself and what the load
// generator sent; what Pyroscope answers is compared with what was sent.

// threeRoutesLoad is the load of the run: requests a second per route.
// /cpu takes about 0.4 of a core (about 8 ms of CPU a request), so that
// the CPU profile holds hundreds of its samples; /lock makes a slow
// request a second (one in testservice.LockEvery), 30 in the run. The
// slow-request capture's default trace budget pays for every one (each
// starts a trace: 32 KiB, its short trace, and the trace while it
// waits); at 64 KiB a second, issue 29's, two a second explained 41 of
// 60.
var threeRoutesLoad = map[string]float64{
	testservice.RouteFast: 100,
	testservice.RouteCPU:  50,
	testservice.RouteLock: 20,
}

// threeRoutesFor is how long the load runs: the 30 s. At the
// default 60 s window the profiler sends the first window after 10 s and
// the second at Stop; the CPU profile records the whole first window (its
// recording starts at Start and lasts the duty cycle's share of the
// configured window, 10.2 s, or to the first window's end) and, in the
// second, a 10.2 s stretch at a random offset that may fall after Stop.
const threeRoutesFor = 30 * time.Second

// threeRoutesRun is what one run of the three-route service sent and
// measured.
type threeRoutesRun struct {
	service          string
	started, stopped time.Time
	requests         []testservice.Request // as the middleware measured them
	load             testservice.LoadResult
	spans            map[string]spanTimes // the SDK's recorded spans, by span id
	exchanges        []exchange
	stats            profiler.Stats
}

// spanTimes is a recorded span's name, start and end.
type spanTimes struct {
	route      string
	start, end time.Time
}

func (s spanTimes) duration() time.Duration { return s.end.Sub(s.start) }

// TestRoutesAndSlowRequests runs the proof; see the checks for what
// each asserts.
func TestRoutesAndSlowRequests(t *testing.T) {
	py := startPyroscope(t)
	proxy := startRecordingProxy(t, strings.TrimPrefix(py.URL, "http://"), py.URL)
	run := runThreeRoutes(t, proxy)
	for i, x := range run.exchanges {
		if x.rejection != "" {
			t.Errorf("Pyroscope rejected request %d of %d: %s", i, len(run.exchanges), x.rejection)
		}
	}
	t.Run("cpu per route", func(t *testing.T) { checkRouteCPU(t, run) })
	t.Run("request counts", func(t *testing.T) { checkRequestCounts(t, run) })
	t.Run("slow requests", func(t *testing.T) { checkSlowRequests(t, run) })
	t.Run("pyroscope route", func(t *testing.T) { checkPyroscopeRoute(t, py, run) })
	t.Run("pyroscope slow span", func(t *testing.T) { checkPyroscopeSlowSpans(t, py, run) })
}

// loadEnv, when set, turns the test binary into the load generator of
// the three-route service: it sends the load the variable describes
// (loadSpec, in JSON) and writes what it sent (testservice.LoadResult) to
// stdout in JSON. The load comes from a process of its own, as a service's
// load does: in the service's process, the client's CPU would run on the
// service's threads in short bursts, and the CPU profiler, whose per-thread
// timers fire on the kernel's tick, books a short burst's CPU to whatever
// the thread runs at its next tick, often a request's long burst.
const loadEnv = "PPROFOTEL_INTEGRATION_LOAD"

// loadSpec is the load a child process sends.
type loadSpec struct {
	Base     string
	Rates    map[string]float64
	Duration time.Duration
}

func runLoad(spec string) error {
	var s loadSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(testservice.Load(context.Background(), s.Base, s.Rates, s.Duration))
}

// loadInChild sends the load from a child process (see loadEnv) and
// returns what it sent.
func loadInChild(t *testing.T, base string, rates map[string]float64, d time.Duration) testservice.LoadResult {
	t.Helper()
	spec, err := json.Marshal(loadSpec{base, rates, d})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), loadEnv+"="+string(spec))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("load generator: %v\n%s", err, stderr.Bytes())
	}
	var res testservice.LoadResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("load generator's result %q: %v", out, err)
	}
	return res
}

// runThreeRoutes serves the three-route service, profiled at the defaults
// but for the profile types (cpu,offcpu, set through PPROFOTEL_PROFILES as
// a user would), under threeRoutesLoad for threeRoutesFor, and returns
// what was sent once the profiler has stopped.
func runThreeRoutes(t *testing.T, proxy *recordingProxy) *threeRoutesRun {
	t.Helper()
	t.Setenv("PPROFOTEL_PROFILES", "cpu,offcpu")
	run := &threeRoutesRun{service: "pprofotel-three-routes", spans: make(map[string]spanTimes)}
	logs := new(syncBuffer)
	tracer, recorded := startTracedRun(t, logs)

	svc := testservice.New()
	defer svc.Close()
	var mu sync.Mutex
	observe := func(r testservice.Request) {
		mu.Lock()
		run.requests = append(run.requests, r)
		mu.Unlock()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: testservice.Middleware(tracer, svc.Handler(), observe)}
	go srv.Serve(ln)
	defer srv.Close()

	run.started = time.Now()
	p, err := profiler.Start(
		profiler.WithServiceName(run.service),
		profiler.WithExporter(newOTLPExporter(t, protocolGRPC, proxy.GRPCAddr)),
		profiler.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
	)
	if err != nil {
		t.Fatal(err)
	}
	run.load = loadInChild(t, "http://"+ln.Addr().String(), threeRoutesLoad, threeRoutesFor)
	// Every request has been answered, so every span has ended: the
	// last window counts them all.
	run.stopped = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound: Stop returns once delivered
	defer cancel()
	stopErr := p.Stop(ctx)
	run.stats = p.Stats()
	// A window Pyroscope refused fails Stop; the refusal is reported with
	// the exchanges, and what was sent is still checked.
	if stopErr != nil && run.stats.WindowsFailed == 0 {
		t.Fatalf("Stop: %v", stopErr)
	}
	for route, n := range run.load.Failed {
		t.Errorf("%d requests to %s failed, among the errors: %q", n, route, run.load.Errors)
	}
	for _, s := range recorded.GetSpans() {
		route := ""
		for _, a := range s.Attributes {
			if a.Key == "http.route" {
				route = a.Value.AsString()
			}
		}
		run.spans[s.SpanContext.SpanID().String()] = spanTimes{route: route, start: s.StartTime, end: s.EndTime}
	}
	for _, x := range proxy.recorded() {
		if requestService(x.req) == run.service {
			run.exchanges = append(run.exchanges, x)
		}
	}
	if len(run.exchanges) < 2 {
		t.Fatalf("the proxy saw %d requests of %s; want the first window's and Stop's", len(run.exchanges), run.service)
	}
	t.Logf("sent %v in %v; %d requests measured, %d spans recorded, %d windows", run.load.Sent, threeRoutesFor, len(run.requests), len(run.spans), len(run.exchanges))
	return run
}

// windows returns what each request of the run carried.
func (run *threeRoutesRun) windows() []*profilespb.ProfilesData {
	var pds []*profilespb.ProfilesData
	for _, x := range run.exchanges {
		pds = append(pds, &profilespb.ProfilesData{ResourceProfiles: x.req.GetResourceProfiles(), Dictionary: x.req.GetDictionary()})
	}
	return pds
}

// sampleAttr returns the value of the sample attribute key of s, and
// whether s has it.
func sampleAttr(d dict, s *profilespb.Sample, key string) (string, bool) {
	attrs := d.d.GetAttributeTable()
	for _, i := range s.GetAttributeIndices() {
		if i < 0 || int(i) >= len(attrs) {
			continue
		}
		if k, _ := d.str(attrs[i].GetKeyStrindex()); k == key {
			return d.text(attrs[i].GetValue()), true
		}
	}
	return "", false
}

// sampleSpan returns the span id, in hex, that s links to, or "".
func sampleSpan(t *testing.T, d dict, s *profilespb.Sample) string {
	t.Helper()
	if s.GetLinkIndex() == 0 {
		return ""
	}
	l, err := d.link(s.GetLinkIndex())
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", l.GetSpanId())
}

// sum adds up a sample's values: a sample with timestamps holds one value
// per event.
func sum(s *profilespb.Sample) int64 {
	var v int64
	for _, x := range s.GetValues() {
		v += x
	}
	return v
}

// cpuNanos returns the CPU time a sample of p stands for, in nanoseconds,
// per unit of its values: the period for samples/count, 1 for a profile
// whose values are cpu/nanoseconds.
func cpuNanos(t *testing.T, d dict, p *profilespb.Profile) int64 {
	t.Helper()
	st, err := d.valueType(p.GetSampleType())
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case st.Type == "samples" && st.Unit == "count":
		return p.GetPeriod()
	case st.Type == "cpu" && st.Unit == "nanoseconds":
		return 1
	}
	t.Fatalf("a CPU profile of sample type %s/%s", st.Type, st.Unit)
	return 0
}

// How the CPU profile's values relate to CPU time.
//
// The runtime's CPU profiler gives each thread a timer on its own CPU
// clock (timer_create with CLOCK_THREAD_CPUTIME_ID, Go 1.18 and later on
// Linux) that fires every 10 ms of that thread's CPU time; each firing
// records one sample of whatever goroutine runs on the thread, with its
// labels. So a sample stands for 10 ms of CPU (the profile's period, in
// cpu/nanoseconds), and the samples of a goroutine add up, within the
// sampling error, to the CPU time its thread spent on it while the
// profiler recorded. The profiler records at the default 17 % duty cycle:
// each CPU Profile it sends covers the recorded stretch
// (time_unix_nano, duration_nano), not the window, and its values are not
// scaled to the window. So the CPU a route's requests did while the CPU
// profile recorded is what its samples must add up to: for each request,
// the CPU its goroutine spent in the span (the thread's CPU clock,
// testservice.Request.CPU), times the share of the request's wall time
// that fell in a recorded stretch.
//
// How close the two come is the runtime's sampling error, which the
// route attribute does not add to (every sample of a /cpu span carries
// /cpu: the check compares the attribute with the span's route too). With
// nothing else running, 8 ms bursts of Spin on locked threads sample at
// 0.99 to 1.00 of their thread CPU time; in this test /cpu has sampled
// at 1.00 to 1.07, and an unrelated 8 ms Spin loop beside it (a
// goroutine with a pprof label of its own, not a request) at 1.05: the
// sampling of the process, not the route. With the load generator in
// the service's process it was 1.06 to 1.11 (see loadEnv).

// checkRouteCPU checks that the CPU of each route, the samples
// carrying its route attribute times the period, matches what its
// requests spent in their spans while the CPU profile recorded: within
// 20 % for a route with at least 2 s of it (200 samples), within the
// sampling error of a 100 Hz profiler for a route with less, where 20 %
// is below what the sampling can resolve (4 standard deviations of a
// Poisson count, at least 2 samples). /fast's count is about 6 samples,
// whose Poisson tail past 3 standard deviations is about 1 in 300, not
// the normal curve's 1 in 740: a CI run failed so, 14 samples against
// 5.9 expected. Past 4 it is about 1 in 2,200.
func checkRouteCPU(t *testing.T, run *threeRoutesRun) {
	type stretch struct{ start, end int64 }
	var stretches []stretch
	got := make(map[string]int64)
	// byLink is the CPU of the samples linked to each route's spans, by
	// the route the SDK recorded for the span: every span of the service
	// is a local root, so a sample's route is its span's route.
	byLink := make(map[string]int64)
	var unattributed int64
	for _, pd := range run.windows() {
		d := dict{pd.GetDictionary()}
		cpu := profilesOf(pd, "cpu")
		// The profiler sends cpu/nanoseconds beside samples/count
		// only when it is not samples times the period; then it is the
		// one to read.
		if len(cpu) > 1 {
			cpu = slices.DeleteFunc(cpu, func(p *profilespb.Profile) bool { return cpuNanos(t, d, p) != 1 })
		}
		for _, p := range cpu {
			stretches = append(stretches, stretch{int64(p.GetTimeUnixNano()), int64(p.GetTimeUnixNano() + p.GetDurationNano())})
			unit := cpuNanos(t, d, p)
			for _, s := range p.GetSamples() {
				span := sampleSpan(t, d, s)
				if span != "" {
					byLink[run.spans[span].route] += sum(s) * unit
				}
				ep, ok := sampleAttr(d, s, routeKey)
				if !ok {
					if span != "" {
						unattributed += sum(s) * unit
					}
					continue
				}
				if route := run.spans[span].route; span != "" && ep != route {
					t.Errorf("a CPU sample of route %q links to span %s of route %q", ep, span, route)
				}
				got[ep] += sum(s) * unit
			}
		}
	}
	var recorded int64
	for _, s := range stretches {
		recorded += s.end - s.start
	}
	if recorded < int64(5*time.Second) {
		t.Fatalf("the CPU profile recorded %v of the run; want at least the first window's 10 s", time.Duration(recorded))
	}
	want := make(map[string]float64)
	for _, r := range run.requests {
		wall := r.End.Sub(r.Start).Nanoseconds()
		for _, s := range stretches {
			overlap := min(s.end, r.End.UnixNano()) - max(s.start, r.Start.UnixNano())
			switch {
			case wall == 0 && r.Start.UnixNano() >= s.start && r.Start.UnixNano() < s.end:
				want[r.Route] += float64(r.CPU)
			case overlap > 0:
				want[r.Route] += float64(r.CPU) * float64(overlap) / float64(wall)
			}
		}
	}
	if unattributed > 0 {
		t.Errorf("%v of CPU linked to a span carries no %s attribute", time.Duration(unattributed), routeKey)
	}
	const period = float64(10 * time.Millisecond)
	for _, route := range testservice.Routes {
		w, g := want[route], float64(got[route])
		// Under the race detector on a loaded two-core machine the
		// ratio was seen at 1.13: thread CPU clocks and SIGPROF disagree
		// that much there, so 20 % is the bound CI can hold.
		tol, how := 0.20*w, "20 %"
		if w < 200*period {
			if sd := 4 * math.Sqrt(max(w/period, 2)) * period; sd > tol {
				tol, how = sd, "4 standard deviations of the sampling"
			}
		}
		t.Logf("%s: %v of CPU in the profile (%v linked to its spans), %v measured in its spans while the CPU profile recorded (ratio %.3f; %v recorded)",
			route, time.Duration(g), time.Duration(byLink[route]), time.Duration(w), g/w, time.Duration(recorded))
		if math.Abs(g-w) > tol {
			t.Errorf("%s: the profile holds %v of CPU under route %s, its requests spent %v in their spans while it recorded; want within %v (%s)",
				route, time.Duration(g), route, time.Duration(w), time.Duration(tol), how)
		}
	}
	for ep := range got {
		if !slices.Contains(testservice.Routes, ep) {
			t.Errorf("CPU samples carry route %q, which is none of the service's routes", ep)
		}
	}
}

// checkRequestCounts checks that the requests counted per route, over
// all windows, are what the load generator sent to each route, and that
// no request went uncounted or under another route.
func checkRequestCounts(t *testing.T, run *threeRoutesRun) {
	got := make(map[string]int64)
	for _, pd := range run.windows() {
		d := dict{pd.GetDictionary()}
		for _, p := range profilesOf(pd, requestsProfile) {
			for _, s := range p.GetSamples() {
				ep, ok := sampleAttr(d, s, routeKey)
				if !ok {
					t.Errorf("a %s sample without the %s attribute: %d requests", requestsProfile, routeKey, sum(s))
				}
				got[ep] += sum(s)
			}
		}
	}
	t.Logf("requests counted per route: %v; sent: %v", got, run.load.Sent)
	for _, route := range testservice.Routes {
		if got[route] != int64(run.load.Sent[route]) || got[route] == 0 {
			t.Errorf("%s: %d requests counted, the load generator sent %d", route, got[route], run.load.Sent[route])
		}
	}
	for ep, n := range got {
		if !slices.Contains(testservice.Routes, ep) {
			t.Errorf("%d requests counted under %q, which is none of the service's routes", n, ep)
		}
	}
}

// slowExplanation is what the slow-request profile says of one span: the
// time attributed to it in all, and to the mutex wait under the handler,
// and each sample, described for a failure's message.
type slowExplanation struct {
	total, mutexWait int64
	parts            []string
}

// slowRequests returns, by span id, what the slow-request profile sent
// about each span it links to, and fails the test on a sample linked to
// no span.
func slowRequests(t *testing.T, run *threeRoutesRun) map[string]*slowExplanation {
	t.Helper()
	handler := lockWaitFunc()
	bySpan := make(map[string]*slowExplanation)
	for i, pd := range run.windows() {
		d := dict{pd.GetDictionary()}
		for _, p := range profilesOf(pd, slowProfile) {
			for _, s := range p.GetSamples() {
				span := sampleSpan(t, d, s)
				if span == "" {
					t.Errorf("a %s sample links to no span: %d ns", slowProfile, sum(s))
					continue
				}
				e := bySpan[span]
				if e == nil {
					e = new(slowExplanation)
					bySpan[span] = e
				}
				// Every interval is timed, within its span.
				if st, ok := run.spans[span]; ok {
					ts := s.GetTimestampsUnixNano()
					if len(ts) != len(s.GetValues()) {
						t.Errorf("span %s: a %s sample with %d values and %d timestamps", span, slowProfile, len(s.GetValues()), len(ts))
					}
					for _, x := range ts {
						if at := time.Unix(0, int64(x)); at.Before(st.start) || at.After(st.end) {
							t.Errorf("span %s: an interval at %v, outside the span [%v, %v] (from the run's start)", span, at.Sub(run.started), st.start.Sub(run.started), st.end.Sub(run.started))
						}
					}
				}
				v := sum(s)
				e.total += v
				fns, err := d.functions(s)
				if err != nil {
					t.Fatal(err)
				}
				// The mutex wait is the time in the handler's
				// waitForMutex off CPU, and runnable in it: in
				// sync.(*Mutex).Lock, and before it, handing the hold
				// to the holder goroutine, which on a loaded machine
				// may still hold the mutex for the last slow request.
				// Once the holder unlocks, the waiter must still be
				// given a CPU to take the mutex, and on this machine
				// (the request's goroutine locked to its thread) that
				// can take a while.
				state, _ := sampleAttr(d, s, slowStateKey)
				if (state == slowStateOffCPU || state == slowStateRunnable) && slices.Contains(fns, handler) {
					e.mutexWait += v
				}
				reason, _ := sampleAttr(d, s, "wait_reason")
				before, _ := sampleAttr(d, s, "before_trace")
				e.parts = append(e.parts, fmt.Sprintf("window %d: %s %s before_trace=%s %v at %v in %s",
					i, state, reason, before, time.Duration(v), sampleTimes(s, run.started), fns[:min(len(fns), 4)]))
			}
		}
	}
	return bySpan
}

// sampleTimes returns the times of a sample's events, from since.
func sampleTimes(s *profilespb.Sample, since time.Time) []time.Duration {
	var ts []time.Duration
	for _, x := range s.GetTimestampsUnixNano() {
		ts = append(ts, time.Unix(0, int64(x)).Sub(since))
	}
	return ts
}

// checkSlowRequests checks the slow-request profile against the /lock
// requests that waited on the mutex (LockHold, far above the threshold):
// at least 80 % of them explained, each linked to its span, its values
// adding up to the span's duration within 10 %, at least 80 % of that
// duration under the handler's mutex wait; and no request faster than
// the threshold explained at all.
func checkSlowRequests(t *testing.T, run *threeRoutesRun) {
	bySpan := slowRequests(t, run)
	var contended, explained, poor int
	var shares []float64
	for _, r := range run.requests {
		if !r.Contended {
			continue
		}
		contended++
		e := bySpan[r.SpanID]
		if e == nil {
			continue
		}
		explained++
		span, ok := run.spans[r.SpanID]
		if !ok {
			t.Errorf("span %s of a slow /lock request was not recorded by the SDK", r.SpanID)
			continue
		}
		d := span.duration().Nanoseconds()
		share := float64(e.mutexWait) / float64(d)
		shares = append(shares, share)
		if math.Abs(float64(e.total-d)) > 0.10*float64(d) || share < 0.80 {
			poor++
			t.Logf("slow request %s, from %v to %v of the run: its explanation adds up to %v of the span's %v (want within 10 %%), %v of it in the mutex wait under the handler (%.0f %%; want at least 80 %%); its samples:\n%s",
				r.SpanID, span.start.Sub(run.started), span.end.Sub(run.started), time.Duration(e.total), span.duration(), time.Duration(e.mutexWait), 100*share, strings.Join(e.parts, "\n"))
		}
	}
	// Issue 34 asks at least half explained with 80 % under the real
	// wait. On a loaded machine one in ten may miss it here: a trace the
	// budget stopped leaves the end of a request untraced, or one begun
	// late leaves the state before it a guess. That no explanation lays
	// a wait where it was not is checked exactly by the recorder's own
	// tests (internal/collect/offcpu, late_test.go).
	if poor*10 > explained {
		t.Errorf("%d of %d explained slow requests miss the bounds above", poor, explained)
	}
	slices.Sort(shares)
	if len(shares) > 0 {
		t.Logf("%d of %d slow /lock requests explained; share of the duration in the mutex wait: min %.3f, median %.3f, max %.3f",
			explained, contended, shares[0], shares[len(shares)/2], shares[len(shares)-1])
	}
	t.Logf("Stats: %d slow requests explained, %d dropped", run.stats.SlowRequestsExplained, run.stats.SlowRequestsDropped)
	if contended < 20 {
		t.Fatalf("%d /lock requests waited on the mutex; the load should make about %v", contended, threeRoutesLoad[testservice.RouteLock]*threeRoutesFor.Seconds()/testservice.LockEvery)
	}
	if float64(explained) < 0.80*float64(contended) {
		t.Errorf("%d of %d slow /lock requests explained; want at least 80 %%", explained, contended)
	}
	var fast int
	byRoute := make(map[string]int)
	for span := range bySpan {
		s, ok := run.spans[span]
		byRoute[s.route]++
		switch {
		case !ok:
			t.Errorf("the slow-request profile links to span %s, which the SDK never recorded", span)
		case s.duration() < slowThreshold:
			fast++
			if fast <= 5 {
				t.Errorf("the slow-request profile explains span %s of %s, which lasted %v, under the threshold %v", span, s.route, s.duration(), slowThreshold)
			}
		}
	}
	if fast > 5 {
		t.Errorf("... and %d more fast requests explained", fast-5)
	}
	t.Logf("requests explained by route: %v (a /fast or /cpu request over the threshold waited for a CPU)", byRoute)
}

// flamegraphNames is a flame graph's total and the names of its frames.
type flamegraphNames struct {
	Flamegraph struct {
		Names []string `json:"names"`
		Total string   `json:"total"`
	} `json:"flamegraph"`
}

// checkPyroscopeRoute checks that Pyroscope selects the off-CPU profile
// of each route by its label: the total of what was sent with that
// route, and for /lock the mutex wait under its handler among the
// frames.
func checkPyroscopeRoute(t *testing.T, py *pyroscope, run *threeRoutesRun) {
	sent := make(map[string]int64)
	for _, pd := range run.windows() {
		d := dict{pd.GetDictionary()}
		for _, p := range profilesOf(pd, "offcpu") {
			id, scale, err := pyroscopeProfileType(d, p)
			if err != nil {
				t.Fatal(err)
			}
			if id != offCPUType {
				t.Fatalf("the off-CPU profile is %s in Pyroscope, want %s", id, offCPUType)
			}
			for _, s := range p.GetSamples() {
				if ep, ok := sampleAttr(d, s, routeKey); ok {
					sent[ep] += sum(s) * scale
				}
			}
		}
	}
	if sent[testservice.RouteLock] == 0 {
		t.Fatalf("no off-CPU time was sent under route %s (sent per route: %v)", testservice.RouteLock, sent)
	}
	// The duty cycle's estimate of the mutex waits against the waits,
	// for the record: two or three stretches of a second see the load,
	// and on a loaded machine each starts counting only once its tracer
	// runs, so the estimate varies too much to bound.
	// The load's slow requests come a second apart: stretches a fixed
	// rest apart would find each at the same point of that period, and
	// miss all of them when that point is just after a wait began.
	var waited time.Duration
	for _, r := range run.requests {
		if r.Contended {
			waited += testservice.LockHold
		}
	}
	t.Logf("%s: %v of off-CPU time sent for %v of mutex waits (ratio %.2f)", testservice.RouteLock, time.Duration(sent[testservice.RouteLock]), waited, float64(sent[testservice.RouteLock])/float64(waited))
	start, end := threeRoutesQueryRange(run)
	for _, route := range testservice.Routes {
		var fg flamegraphNames
		py.query(t, "SelectMergeStacktraces", map[string]any{
			"profile_typeID": offCPUType,
			"label_selector": fmt.Sprintf("{service_name=%q,%s=%q}", run.service, routeKey, route),
			"start":          start, "end": end,
		}, &fg)
		var got int64
		fmt.Sscan(fg.Flamegraph.Total, &got)
		t.Logf("%s: Pyroscope's off-CPU total by label %s=%q: %v; sent %v", route, routeKey, route, time.Duration(got), time.Duration(sent[route]))
		if got != sent[route] {
			t.Errorf("%s: Pyroscope's off-CPU total by label %s=%q is %d ns, %d were sent", route, routeKey, route, got, sent[route])
		}
		if route == testservice.RouteLock && !slices.Contains(fg.Flamegraph.Names, lockWaitFunc()) {
			t.Errorf("%s: Pyroscope's off-CPU flame graph by label lacks %s: %q", route, lockWaitFunc(), fg.Flamegraph.Names)
		}
	}
}

// lockWaitFunc is the function in which a slow /lock request waits.
func lockWaitFunc() string {
	return strings.TrimSuffix(funcName((*testservice.Service).Handler), "Handler") + "waitForMutex"
}

// threeRoutesQueryRange is the run's time range in Unix milliseconds,
// with a margin.
func threeRoutesQueryRange(run *threeRoutesRun) (start, end int64) {
	return run.started.Add(-time.Minute).UnixMilli(), run.stopped.Add(time.Minute).UnixMilli()
}

// checkPyroscopeSlowSpans checks that Pyroscope opens the span profile of
// slow requests (SelectMergeSpanProfile by span id) on the slow-request
// profile: for ten explained requests, the total sent linked to each.
func checkPyroscopeSlowSpans(t *testing.T, py *pyroscope, run *threeRoutesRun) {
	typeID := ""
	sent := make(map[string]int64)
	for _, pd := range run.windows() {
		d := dict{pd.GetDictionary()}
		for _, p := range profilesOf(pd, slowProfile) {
			id, scale, err := pyroscopeProfileType(d, p)
			if err != nil {
				t.Fatal(err)
			}
			if typeID != "" && id != typeID {
				t.Fatalf("the slow-request profile is sent as %s and as %s", typeID, id)
			}
			typeID = id
			for _, s := range p.GetSamples() {
				if span := sampleSpan(t, d, s); span != "" {
					sent[span] += sum(s) * scale
				}
			}
		}
	}
	var spans []string
	for _, r := range run.requests {
		if r.Contended && sent[r.SpanID] > 0 {
			spans = append(spans, r.SpanID)
		}
	}
	if len(spans) == 0 {
		t.Fatalf("no slow /lock request was sent in the slow-request profile")
	}
	if typeID != slowType {
		t.Errorf("the slow-request profile is %s in Pyroscope, want %s", typeID, slowType)
	}
	spans = spans[:min(len(spans), 10)]
	start, end := threeRoutesQueryRange(run)
	lacking := 0
	for _, span := range spans {
		var fg flamegraphNames
		py.query(t, "SelectMergeSpanProfile", map[string]any{
			"profile_typeID": typeID, "label_selector": fmt.Sprintf("{service_name=%q}", run.service),
			"start": start, "end": end, "span_selector": []string{span},
		}, &fg)
		var got int64
		fmt.Sscan(fg.Flamegraph.Total, &got)
		if got != sent[span] {
			t.Errorf("span %s: Pyroscope's span profile (%s) totals %d, %d were sent linked to it", span, typeID, got, sent[span])
		}
		if !slices.Contains(fg.Flamegraph.Names, lockWaitFunc()) {
			lacking++
			t.Logf("span %s: Pyroscope's span profile lacks %s: %q", span, lockWaitFunc(), fg.Flamegraph.Names)
		}
	}
	if lacking > 1 {
		t.Errorf("%d of %d slow spans' Pyroscope profiles lack %s (one may, as in the explanation check)", lacking, len(spans), lockWaitFunc())
	}
	if !t.Failed() {
		t.Logf("Pyroscope's %s span profiles of %d slow requests match what was sent", typeID, len(spans))
	}
}
