package offcpu_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime/trace"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/exporters/otlpprofilefile"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
	"github.com/pprofotel/profiler/internal/testutil/polltest"
	"github.com/pprofotel/profiler/internal/testutil/waittest"
	"github.com/pprofotel/profiler/labels"
	_ "github.com/pprofotel/profiler/offcpu" // what this package is for
	"github.com/pprofotel/profiler/pprofconv"
)

// offCPUWait is one wait of an exported off-CPU profile.
type offCPUWait struct {
	otlptest.Sample
	nanos int64
	at    uint64
}

// offCPUWaits returns every wait of req's off-CPU profile, one per value
// and timestamp, and checks the profile's types.
func offCPUWaits(t *testing.T, req *collectorpb.ExportProfilesServiceRequest) []offCPUWait {
	t.Helper()
	str := req.GetDictionary().GetStringTable()
	var out []offCPUWait
	for _, s := range otlptest.Samples(req, "offcpu", "off_cpu") {
		st, pt := s.Profile.GetSampleType(), s.Profile.GetPeriodType()
		if got := str[st.GetUnitStrindex()]; got != "nanoseconds" {
			t.Fatalf("off-CPU values in %s, want nanoseconds", got)
		}
		if s.Profile.GetPeriod() != 0 || pt.GetTypeStrindex() != 0 {
			t.Errorf("off-CPU profile has period %d of type %q; it has none", s.Profile.GetPeriod(), str[pt.GetTypeStrindex()])
		}
		if len(s.Values) != len(s.Timestamps) {
			t.Fatalf("off-CPU sample with %d values and %d timestamps", len(s.Values), len(s.Timestamps))
		}
		for i, v := range s.Values {
			out = append(out, offCPUWait{Sample: s, nanos: v, at: s.Timestamps[i]})
		}
	}
	return out
}

// checkExecutableMapped checks that every location of req's off-CPU
// samples has a mapping, and that the mapping of Go code is the main
// executable with its Go build id, as in the runtime's own profiles.
func checkExecutableMapped(t *testing.T, req *collectorpb.ExportProfilesServiceRequest) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	d := req.GetDictionary()
	str := d.GetStringTable()
	for _, rp := range req.GetResourceProfiles() {
		for _, sp := range rp.GetScopeProfiles() {
			if otlptest.ScopeName(sp.GetScope()) != "offcpu" {
				continue
			}
			for _, prof := range sp.GetProfiles() {
				for _, s := range prof.GetSamples() {
					for _, li := range d.GetStackTable()[s.GetStackIndex()].GetLocationIndices() {
						mi := d.GetLocationTable()[li].GetMappingIndex()
						if mi == 0 {
							t.Fatalf("off-CPU location %d has no mapping", li)
						}
						m := d.GetMappingTable()[mi]
						if file := str[m.GetFilenameStrindex()]; file != exe {
							t.Fatalf("off-CPU location %d maps to %q, want the executable %q", li, file, exe)
						}
						var buildID string
						for _, ai := range m.GetAttributeIndices() {
							if a := d.GetAttributeTable()[ai]; str[a.GetKeyStrindex()] == "process.executable.build_id.go" {
								buildID = a.GetValue().GetStringValue()
							}
						}
						if buildID == "" {
							t.Fatalf("the executable's mapping carries no process.executable.build_id.go")
						}
					}
				}
			}
		}
	}
}

// checkConvertedNamesBinary checks that the off-CPU profile converted to
// pprof names the main binary, which go tool pprof needs (its build id:
// TestOffCPUAndSlowRequestsShareTheExecutableMapping).
func checkConvertedNamesBinary(t *testing.T, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.pb"))
	var reqs []pprofconv.Request
	for _, f := range files {
		r, err := pprofconv.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, r...)
	}
	profiles, _, err := pprofconv.Convert(reqs, pprofconv.Filter{Profiles: []string{"offcpu"}})
	if err != nil {
		t.Fatal(err)
	}
	p := profiles["offcpu"]
	exe, _ := os.Executable()
	if p == nil || len(p.Mapping) == 0 {
		t.Fatal("converted off-CPU profile has no mapping")
	}
	if p.Mapping[0].File != exe {
		t.Fatalf("converted off-CPU profile's main mapping is %q, want %q", p.Mapping[0].File, exe)
	}
}

// startToFiles starts a profiler with opts, one window of an hour and the
// file exporter writing to the returned directory, and returns a tracer
// whose spans carry labels.
func startToFiles(t *testing.T, opts ...profiler.Option) (oteltrace.Tracer, *profiler.Profiler, string) {
	t.Helper()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	dir := t.TempDir()
	exp, err := otlpprofilefile.New(context.Background(), otlpprofilefile.WithDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	p, err := profiler.Start(append([]profiler.Option{profiler.WithWindow(time.Hour), profiler.WithExporter(exp)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return labels.WrapTracerProvider(tp).Tracer("offcpu-test"), p, dir
}

// TestOffCPUWaitsByStackReasonAndSpan is the off-CPU profile end to end: a
// goroutine inside a span waits on a channel, a mutex and a sleep, and the
// exported profile holds each wait on its stack, with its reason, linked
// to the span and carrying its route (the span is a local root, whose
// name is its route), timed inside the window.
func TestOffCPUWaitsByStackReasonAndSpan(t *testing.T) {
	tracer, p, dir := startToFiles(t, profiler.WithProfileTypes(profiler.OffCPUProfile), profiler.WithOffCPUDutyCycle(100))
	waits := []struct {
		fn, reason string
		wait       func(time.Duration)
		d          time.Duration
		took       time.Duration
	}{
		{"OnChannel", "chan receive", waittest.OnChannel, 300 * time.Millisecond, 0},
		{"OnMutex", "sync", waittest.OnMutex, 200 * time.Millisecond, 0},
		{"InSleep", "sleep", waittest.InSleep, 100 * time.Millisecond, 0},
	}
	_, span := tracer.Start(context.Background(), "request")
	for i := range waits {
		t0 := time.Now()
		waits[i].wait(waits[i].d)
		waits[i].took = time.Since(t0)
	}
	span.End()
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	var got []offCPUWait
	for _, req := range otlptest.ReadDir(t, dir) {
		got = append(got, offCPUWaits(t, req)...)
		checkExecutableMapped(t, req)
	}
	checkConvertedNamesBinary(t, dir)
	sc := span.SpanContext()
	for _, w := range waits {
		var total time.Duration
		for _, g := range got {
			if !g.InStack(w.fn) {
				continue
			}
			if g.Attrs["wait_reason"] != w.reason {
				t.Errorf("%s: a wait of %v with reason %q, want %q", w.fn, time.Duration(g.nanos), g.Attrs["wait_reason"], w.reason)
				continue
			}
			if g.TraceID != sc.TraceID().String() || g.SpanID != sc.SpanID().String() {
				t.Errorf("%s: wait linked to %s/%s, want span %s/%s", w.fn, g.TraceID, g.SpanID, sc.TraceID(), sc.SpanID())
			}
			if e, ok := g.Attrs["route"]; e != "request" || g.Attrs[labels.LocalRootSpanIDKey] != "" {
				t.Errorf("%s: wait with route %q (%v), attributes %v; want route request, no root span id", w.fn, e, ok, g.Attrs)
			}
			if start, end := g.Profile.GetTimeUnixNano(), g.Profile.GetTimeUnixNano()+g.Profile.GetDurationNano(); g.at < start || g.at >= end {
				t.Errorf("%s: wait at %d, outside the window [%d, %d)", w.fn, g.at, start, end)
			}
			total += time.Duration(g.nanos)
		}
		// A wait lasts until the goroutine runs again: on a busy machine
		// that includes waiting for a CPU after the wake-up, so the
		// reference is how long the call took (at least its nominal time).
		if w.took < w.d {
			t.Fatalf("%s took %v, less than the %v it waits", w.fn, w.took, w.d)
		}
		if total < w.took*95/100 || total > w.took*105/100 {
			t.Errorf("%s: %v waited in %q, want %v ± 5%% (the call took %v)", w.fn, total, w.reason, w.d, w.took)
		}
	}
}

// lockHandler is a request handler that waits d on a contended mutex.
//
//go:noinline
func lockHandler(d time.Duration) { waittest.OnMutex(d) }

// tracedLockHandler is a request handler that waits on a contended mutex
// at least d, and until the execution tracer has run 100 ms: a slow
// request that lasts until the trace its watch starts has seen it.
//
//go:noinline
func tracedLockHandler(d time.Duration) { waittest.OnMutexTraced(d, 100*time.Millisecond) }

// TestSlowRequestsEndToEnd runs the profiler with PPROFOTEL_PROFILES=cpu,offcpu
// and everything else at its default, past the off-CPU profile's first traced
// stretch, and serves a slow request (a root span whose handler waits
// on a contended mutex 300 ms and until its watch trace has run 100 ms)
// and a fast one: the window's slow-request
// profile explains the slow one, linked to its span, under its route,
// its values adding up to its duration, most of them the mutex wait under
// the handler; the fast one is absent.
func TestSlowRequestsEndToEnd(t *testing.T) {
	t.Setenv("PPROFOTEL_PROFILES", "cpu,offcpu")
	tracer, p, dir := startToFiles(t)
	// The first stretch traces at most a second; after it the recorder
	// rests, and the slow request's watch starts the tracer.
	polltest.Until(t, "the first stretch's end", func() bool { return !trace.IsEnabled() })
	serve := func(name string, handler func(time.Duration), d time.Duration) (ids string, took time.Duration) {
		start := time.Now()
		_, span := tracer.Start(context.Background(), name)
		handler(d)
		span.End()
		sc := span.SpanContext()
		return sc.TraceID().String() + "/" + sc.SpanID().String(), time.Since(start)
	}
	// On a machine whose CPUs are oversubscribed, starting the tracer can
	// take hundreds of milliseconds: the slow request waits for it, so
	// that it is explained however long that takes.
	slow, slowTook := serve("GET /lock", tracedLockHandler, 300*time.Millisecond)
	fast, _ := serve("GET /fast", lockHandler, time.Millisecond)
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.SlowRequestsExplained != 1 || s.SlowRequestsDropped != 0 {
		t.Errorf("explained %d, dropped %d; want 1, 0", s.SlowRequestsExplained, s.SlowRequestsDropped)
	}
	var all, mutex, elsewhere time.Duration
	for _, req := range otlptest.ReadDir(t, dir) {
		for _, s := range otlptest.Samples(req, "slowrequests", "wall") {
			ids := s.TraceID + "/" + s.SpanID
			if ids == fast {
				t.Errorf("the fast request carries a slow-request sample: %v", s.Attrs)
			}
			if ids != slow {
				continue
			}
			if e := s.Attrs["route"]; e != "GET /lock" {
				t.Errorf("route %q, want GET /lock", e)
			}
			for _, v := range s.Values {
				all += time.Duration(v)
				switch {
				case s.Attrs["goroutine_state"] != "off_cpu":
				case s.Attrs["wait_reason"] == "sync" && s.InStack("tracedLockHandler"):
					mutex += time.Duration(v)
				case s.Attrs["before_trace"] == "true" && s.Attrs["wait_reason"] == "":
					// Found waiting, place unknown.
				default:
					elsewhere += time.Duration(v)
				}
			}
		}
	}
	if all < slowTook*90/100 || all > slowTook*110/100 {
		t.Errorf("the slow request's samples add up to %v, want its duration %v ± 10%%", all, slowTook)
	}
	// Until its watch trace starts (the request runs half the threshold,
	// the tracker's sweep reports it, the tracer stops the world to start:
	// tens of milliseconds on a loaded machine) the request is untraced,
	// and it may wait for a CPU before it reaches the mutex.
	if mutex < slowTook/3 || elsewhere > slowTook*20/100 {
		t.Errorf("%v of the slow request's %v waiting on the mutex under tracedLockHandler, %v off CPU elsewhere; want at least a third, at most 20%%", mutex, slowTook, elsewhere)
	}
}
