package integration

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	pprofprofile "github.com/google/pprof/profile"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"

	profiler "github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/exporters/otlpprofilegrpc"
	"github.com/pprofotel/profiler/exporters/otlpprofilehttp"
	"github.com/pprofotel/profiler/labels"
	_ "github.com/pprofotel/profiler/offcpu"
)

// The profiled run: long enough for two full windows and a partial one.
const (
	period   = time.Second
	runFor   = 2*period + period/2
	tracerID = "github.com/pprofotel/profiler/integration"
)

// allProfiles are the names of the profiles in every window of a test run,
// as the scope attribute pprofotel.profile.name spells them: the six
// profile types and the request counts of the workload's spans.
var allProfiles = []string{"cpu", "heap", "goroutine", "mutex", "block", "offcpu", "requests"}

// referenceEnv, when set, turns the test binary into the reference run of
// the pprof round trip: it profiles the workload with runtime/pprof alone,
// writes the CPU profile to the path the variable names, and exits.
const referenceEnv = "PPROFOTEL_INTEGRATION_REFERENCE_CPU_PROFILE"

func TestMain(m *testing.M) {
	if spec := os.Getenv(loadEnv); spec != "" {
		if err := runLoad(spec); err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if path := os.Getenv(referenceEnv); path != "" {
		if err := writeReferenceProfile(path); err != nil {
			fmt.Fprintln(os.Stderr, "reference run:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestProfilesThroughCollector runs the profiler against a real Collector
// over each OTLP transport and checks what the Collector wrote to its file
// exporter: every window, every profile type, the resource, the values, the
// links to spans, and that the CPU profile of a window, turned back into
// pprof, has the same top functions as the runtime's own profile of the
// same workload.
func TestProfilesThroughCollector(t *testing.T) {
	col := startCollector(t)
	refTop := referenceTop(t)

	tests := []struct {
		protocol protocol
		endpoint string
	}{
		{protocolGRPC, col.GRPCAddr},
		{protocolHTTPProtobuf, col.HTTPAddr},
		{protocolHTTPJSON, col.HTTPAddr},
	}
	for _, tt := range tests {
		t.Run(string(tt.protocol), func(t *testing.T) {
			run := profileWorkload(t, tt.protocol, tt.endpoint)
			windows := waitForWindows(t, col, run)
			checkResource(t, windows, run)
			checkWindows(t, windows, run)
			checkValues(t, windows)
			checkLinks(t, windows, run)
			checkPprofRoundTrip(t, col.ProfilesFile, windows, refTop)
		})
	}
}

// protocol is an OTLP protocol, as OTEL_EXPORTER_OTLP_PROTOCOL names it.
type protocol string

const (
	protocolGRPC         protocol = "grpc"
	protocolHTTPProtobuf protocol = "http/protobuf"
	protocolHTTPJSON     protocol = "http/json"
)

// newOTLPExporter returns the exporter package's Exporter that sends to
// endpoint (host:port) over p in plaintext, each attempt bounded by 10 s.
func newOTLPExporter(t *testing.T, p protocol, endpoint string) profiler.Exporter {
	t.Helper()
	var (
		exp profiler.Exporter
		err error
	)
	switch p {
	case protocolGRPC:
		exp, err = otlpprofilegrpc.New(context.Background(),
			otlpprofilegrpc.WithEndpoint(endpoint),
			otlpprofilegrpc.WithInsecure(),
			otlpprofilegrpc.WithTimeout(10*time.Second))
	case protocolHTTPProtobuf, protocolHTTPJSON:
		opts := []otlpprofilehttp.Option{
			otlpprofilehttp.WithEndpoint(endpoint),
			otlpprofilehttp.WithInsecure(),
			otlpprofilehttp.WithTimeout(10 * time.Second),
		}
		if p == protocolHTTPJSON {
			opts = append(opts, otlpprofilehttp.WithJSON())
		}
		exp, err = otlpprofilehttp.New(context.Background(), opts...)
	default:
		t.Fatalf("no exporter for protocol %q", p)
	}
	if err != nil {
		t.Fatalf("%s exporter: %v", p, err)
	}
	return exp
}

// profiledRun is what a test knows about one run of the profiler.
type profiledRun struct {
	protocol protocol
	service  string
	// started is taken just before Start, stopped just before Stop: every
	// window lies within [started, after stopped].
	started, stopped time.Time
	// spans holds the trace and span ids, in hex, of the spans the workload
	// ended, as the in-memory span exporter recorded them.
	spans map[[2]string]bool
	logs  *syncBuffer
}

// profileWorkload profiles the workload for runFor, exporting to endpoint
// with protocol, and returns once the profiler has stopped.
func profileWorkload(t *testing.T, protocol protocol, endpoint string) *profiledRun {
	run := &profiledRun{
		protocol: protocol,
		service:  "pprofotel-integration-" + strings.ReplaceAll(string(protocol), "/", "-"),
		spans:    make(map[[2]string]bool),
		logs:     new(syncBuffer),
	}
	tracer, recorded := startTracedRun(t, run.logs)

	run.started = time.Now()
	p, err := profiler.Start(append(allProfilesOptions(t, run.service, protocol, endpoint, period, run.logs),
		profiler.WithResource(resource.NewSchemaless(attribute.String("pprofotel.test.protocol", string(protocol)))),
	)...)
	if err != nil {
		t.Fatal(err)
	}
	w := startWorkload(tracer)
	time.Sleep(runFor)

	// The profiler stops first, with the workload still running, so that
	// the last window sees the same goroutines as the others; the workload
	// stops next, ending every span before the recorded ones are read.
	run.stopped = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound: Stop returns once delivered
	defer cancel()
	stopErr := p.Stop(ctx)
	w.Stop()
	if stopErr != nil {
		t.Fatalf("Stop: %v", stopErr)
	}
	for _, s := range recorded.GetSpans() {
		if s.Name == "burn" {
			run.spans[[2]string{s.SpanContext.TraceID().String(), s.SpanContext.SpanID().String()}] = true
		}
	}
	if len(run.spans) == 0 {
		t.Fatal("the workload recorded no spans")
	}
	return run
}

// startTracedRun returns a tracer whose spans label goroutines (see
// labels.WrapTracerProvider) and the exporter that records them, and logs
// the profiler's log when the test fails.
func startTracedRun(t *testing.T, logs *syncBuffer) (trace.Tracer, *tracetest.InMemoryExporter) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("profiler log:\n%s", logs)
		}
	})
	recorded := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(recorded))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return labels.WrapTracerProvider(tp).Tracer(tracerID), recorded
}

// allProfilesOptions are the options of a test run: all six profile
// types, every contention event recorded, to endpoint over protocol in
// plaintext (newOTLPExporter), windows of period, the profiler's log at
// debug level to logs.
func allProfilesOptions(t *testing.T, service string, protocol protocol, endpoint string, period time.Duration, logs io.Writer) []profiler.Option {
	return []profiler.Option{
		profiler.WithServiceName(service),
		profiler.WithExporter(newOTLPExporter(t, protocol, endpoint)),
		profiler.WithWindow(period),
		profiler.WithCPUDutyCycle(100), // continuous: every window is compared with the runtime's
		profiler.WithProfileTypes(profiler.CPUProfile, profiler.HeapProfile, profiler.GoroutineProfile,
			profiler.MutexProfile, profiler.BlockProfile, profiler.OffCPUProfile),
		profiler.WithMutexProfileFraction(1),
		// Half of every one-second window traced, so that each holds waits.
		profiler.WithOffCPUDutyCycle(50),
		profiler.WithBlockProfileRate(1),
		// No request of these workloads is meant to be slow, and the
		// tests compare the profile types sent with these six and the
		// request counts: on a loaded machine some requests would cross
		// the default threshold and add the slow-request profile, which
		// TestRoutesAndSlowRequests checks.
		profiler.WithSlowRequestThreshold(time.Hour),
		profiler.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
	}
}

// waitForWindows reads the Collector's profiles file until it holds the
// last window of run, the one Stop exported, and returns the windows of
// run's service in the order they were written. The file exporter flushes
// every 100ms; the limit only bounds a test that would otherwise hang.
func waitForWindows(t *testing.T, col *collector, run *profiledRun) []*profilespb.ProfilesData {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a bound against a hang
	for {
		all, err := readJSONLines(col.ProfilesFile, func() *profilespb.ProfilesData { return new(profilespb.ProfilesData) })
		if err != nil {
			t.Fatal(err)
		}
		var mine []*profilespb.ProfilesData
		others := make(map[string]int)
		for _, pd := range all {
			if name := serviceName(pd); name == run.service {
				mine = append(mine, pd)
			} else {
				others[name]++
			}
		}
		if len(mine) > 0 {
			if _, end := windowBounds(mine[len(mine)-1]); end >= uint64(run.stopped.UnixNano()) {
				return mine
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute the Collector has written %d windows for %s, none ending after Stop was called (and windows of other services: %v)", len(mine), run.service, others)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func serviceName(pd *profilespb.ProfilesData) string {
	for _, rp := range pd.GetResourceProfiles() {
		d := dict{pd.GetDictionary()}
		if v := d.attr(rp.GetResource().GetAttributes(), "service.name"); v != nil {
			return d.text(v)
		}
	}
	return ""
}

// windowBounds returns the window of the first profile of pd, in Unix
// nanoseconds; checkWindows checks that every profile agrees.
func windowBounds(pd *profilespb.ProfilesData) (start, end uint64) {
	for _, rp := range pd.GetResourceProfiles() {
		for _, sp := range rp.GetScopeProfiles() {
			for _, p := range sp.GetProfiles() {
				return p.GetTimeUnixNano(), p.GetTimeUnixNano() + p.GetDurationNano()
			}
		}
	}
	return 0, 0
}

// checkResource checks that every window carries the resource the
// profiler built: the service name and attribute set in code and the SDK
// naming the profiler.
func checkResource(t *testing.T, windows []*profilespb.ProfilesData, run *profiledRun) {
	t.Helper()
	want := map[string]string{
		"service.name":            run.service,
		"pprofotel.test.protocol": string(run.protocol),
		"telemetry.sdk.name":      "pprofotel",
		"telemetry.sdk.language":  "go",
		"telemetry.sdk.version":   profiler.Version,
	}
	for i, pd := range windows {
		if n := len(pd.GetResourceProfiles()); n != 1 {
			t.Errorf("window %d: %d resource_profiles, want 1", i, n)
			continue
		}
		d := dict{pd.GetDictionary()}
		attrs := pd.ResourceProfiles[0].GetResource().GetAttributes()
		for _, k := range slices.Sorted(maps.Keys(want)) {
			if got := d.text(d.attr(attrs, k)); got != want[k] {
				t.Errorf("window %d: resource %s = %q, want %q", i, k, got, want[k])
			}
		}
	}
}

// checkWindows checks that the windows arrived complete: each with exactly
// one scope per profile type, named by the profiler's instrumentation
// scope, every profile of a window covering the same interval, and the
// windows following one another without gap or overlap from Start to Stop.
func checkWindows(t *testing.T, windows []*profilespb.ProfilesData, run *profiledRun) {
	t.Helper()
	// A busy machine can delay the profiler's ticker past a tick, which
	// makes a longer window rather than a lost one, so the count of windows
	// is only bounded below; the contiguity checked next is what proves
	// that nothing was lost.
	if len(windows) < 2 {
		t.Errorf("%d windows arrived for a run of %v with period %v; want at least a full one and Stop's", len(windows), runFor, period)
	}
	var prevEnd uint64
	for i, pd := range windows {
		d := dict{pd.GetDictionary()}
		start, end := windowBounds(pd)
		var names []string
		for _, rp := range pd.GetResourceProfiles() {
			for _, sp := range rp.GetScopeProfiles() {
				if sp.GetScope().GetName() != profiler.ScopeName || sp.GetScope().GetVersion() != profiler.Version {
					t.Errorf("window %d: scope %q %q, want %q %q", i, sp.GetScope().GetName(), sp.GetScope().GetVersion(), profiler.ScopeName, profiler.Version)
				}
				names = append(names, d.text(d.scopeAttr(sp, attrProfileName)))
				for _, p := range sp.GetProfiles() {
					if p.GetTimeUnixNano() != start || p.GetTimeUnixNano()+p.GetDurationNano() != end {
						t.Errorf("window %d: a %s profile covers [%d, +%d), the window's first profile [%d, %d)", i, names[len(names)-1], p.GetTimeUnixNano(), p.GetDurationNano(), start, end)
					}
					if len(p.GetProfileId()) != 16 || bytes.Equal(p.GetProfileId(), make([]byte, 16)) {
						t.Errorf("window %d: a %s profile has id %x, want 16 bytes not all zero", i, names[len(names)-1], p.GetProfileId())
					}
				}
			}
		}
		slices.Sort(names)
		if want := slices.Sorted(slices.Values(allProfiles)); !slices.Equal(names, want) {
			t.Errorf("window %d: profile scopes %q, want %q", i, names, want)
		}
		switch {
		case end <= start:
			t.Errorf("window %d: [%d, %d) is empty", i, start, end)
		case i == 0 && start < uint64(run.started.UnixNano()):
			t.Errorf("window 0 starts at %d, before Start was called at %d", start, run.started.UnixNano())
		case i > 0 && start != prevEnd:
			t.Errorf("window %d starts at %d, window %d ended at %d: a window is missing or duplicated", i, start, i-1, prevEnd)
		}
		prevEnd = end
	}
}

// sampleTotals returns, over all windows, the total of sample type
// sampleType in the profile named name, and the total per function of the
// samples whose stack holds that function (each sample counted once per
// function, however deep its recursion), and that total per function for
// each window.
func sampleTotals(t *testing.T, windows []*profilespb.ProfilesData, name, sampleType string) (total int64, byFunc map[string]int64, byWindow []map[string]int64) {
	t.Helper()
	byFunc = make(map[string]int64)
	for i, pd := range windows {
		d := dict{pd.GetDictionary()}
		win := make(map[string]int64)
		byWindow = append(byWindow, win)
		for _, p := range profilesOf(pd, name) {
			vt, err := d.valueType(p.GetSampleType())
			if err != nil {
				t.Fatalf("window %d: %s: %v", i, name, err)
			}
			if vt.Type != sampleType {
				continue
			}
			for _, s := range p.GetSamples() {
				fns, err := d.functions(s)
				if err != nil {
					t.Fatalf("window %d: %s: %v", i, name, err)
				}
				// An off-CPU sample holds one value per wait.
				var v int64
				for _, x := range s.GetValues() {
					v += x
				}
				total += v
				for _, fn := range uniq(fns) {
					byFunc[fn] += v
					win[fn] += v
				}
			}
		}
	}
	return total, byFunc, byWindow
}

// profilesOf returns the profiles of the scope named name in pd.
func profilesOf(pd *profilespb.ProfilesData, name string) []*profilespb.Profile {
	d := dict{pd.GetDictionary()}
	for _, rp := range pd.GetResourceProfiles() {
		for _, sp := range rp.GetScopeProfiles() {
			if d.text(d.scopeAttr(sp, attrProfileName)) == name {
				return sp.GetProfiles()
			}
		}
	}
	return nil
}

func uniq(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// checkValues checks that each profile type measured what the workload
// did: the function that exercises it is there with a positive value, for
// every sample type of the profile.
func checkValues(t *testing.T, windows []*profilespb.ProfilesData) {
	t.Helper()
	tests := []struct {
		profile, sampleType string
		fn                  any
	}{
		{"cpu", "samples", burnCPU},
		{"cpu", "samples", burnInSpan},
		{"heap", "alloc_objects", allocateBuffers},
		{"heap", "alloc_space", allocateBuffers},
		{"heap", "inuse_objects", allocateBuffers},
		{"heap", "inuse_space", allocateBuffers},
		{"goroutine", "goroutine", parkGoroutine},
		{"mutex", "mutex_contentions", contendMutex},
		{"mutex", "mutex_delay", contendMutex},
		{"block", "block_contentions", blockOnChannel},
		{"block", "block_delay", blockOnChannel},
		{"offcpu", "off_cpu", blockOnChannel},
	}
	for _, tt := range tests {
		fn := funcName(tt.fn)
		total, byFunc, _ := sampleTotals(t, windows, tt.profile, tt.sampleType)
		if total <= 0 || byFunc[fn] <= 0 {
			t.Errorf("%s %s: total %d, %d in %s; want both positive", tt.profile, tt.sampleType, total, byFunc[fn], fn)
		}
	}

	// The goroutine profile is a snapshot taken at the end of each window,
	// so every window counts the workload's goroutines exactly.
	_, _, byWindow := sampleTotals(t, windows, "goroutine", "goroutine")
	for i, win := range byWindow {
		for fn, want := range map[string]int64{funcName(parkGoroutine): 1, funcName(contendMutex): 2, funcName(burnCPU): 1} {
			if win[fn] != want {
				t.Errorf("window %d: goroutine profile counts %d goroutines in %s, want %d", i, win[fn], fn, want)
			}
		}
	}
}

// checkLinks checks the links from CPU samples to spans: every sample
// taken in burnInSpan, which only runs inside a span, links to one of the
// spans the SDK recorded, and no sample of burnCPU, which runs outside any
// span, has a link.
func checkLinks(t *testing.T, windows []*profilespb.ProfilesData, run *profiledRun) {
	t.Helper()
	inSpan, outside := funcName(burnInSpan), funcName(burnCPU)
	linked := make(map[[2]string]bool)
	var inSpanSamples, unlinked, outsideLinked int
	unknown := make(map[[2]string]bool)
	for i, pd := range windows {
		d := dict{pd.GetDictionary()}
		for _, p := range profilesOf(pd, "cpu") {
			for _, s := range p.GetSamples() {
				fns, err := d.functions(s)
				if err != nil {
					t.Fatalf("window %d: %v", i, err)
				}
				switch {
				case slices.Contains(fns, inSpan):
					inSpanSamples++
					if s.GetLinkIndex() == 0 {
						unlinked++
						continue
					}
					l, err := d.link(s.GetLinkIndex())
					if err != nil {
						t.Fatalf("window %d: %v", i, err)
					}
					ids := [2]string{hex.EncodeToString(l.GetTraceId()), hex.EncodeToString(l.GetSpanId())}
					if run.spans[ids] {
						linked[ids] = true
					} else {
						unknown[ids] = true
					}
				case slices.Contains(fns, outside) && s.GetLinkIndex() != 0:
					outsideLinked++
				}
			}
		}
	}
	if unlinked > 0 {
		t.Errorf("%d of the %d samples in %s have no link", unlinked, inSpanSamples, inSpan)
	}
	if len(unknown) > 0 {
		t.Errorf("samples in %s link to %d spans the SDK never recorded, among them %q", inSpan, len(unknown), slices.Collect(maps.Keys(unknown))[0])
	}
	if outsideLinked > 0 {
		t.Errorf("%d samples in %s, which runs outside any span, have a link", outsideLinked, outside)
	}
	// A single span linked from everywhere would pass the checks above
	// with a constant link; samples spread over many spans rule that out.
	if len(linked) < 2 {
		t.Errorf("%d samples in %s link to %d distinct recorded spans out of %d; want at least 2", inSpanSamples, inSpan, len(linked), len(run.spans))
	}
}

// The pprof round trip.
//
// The runtime allows one CPU profiler per process, and pprofotel is it
// while it runs, so the runtime's own profile of the very same window
// cannot be taken; comparing against what pprofotel produced before
// sending would be circular. Instead the same workload runs in a child
// process (this test binary, under referenceEnv) profiled by runtime/pprof
// alone, and the two profiles must agree on what the workload is built to
// make certain (see workload_test.go): the top function by flat CPU is
// burnCPU. The rows below it hold burnInSpan and runtime and race detector
// functions with a few samples each, whose order is noise, so they are not
// compared; both outputs are logged on a mismatch.
//
// One runtime mechanism would blur the top row: asynchronous preemption.
// The garbage collector, the goroutine profile and the scheduler stop a
// running goroutine with a signal, and the CPU spent delivering it shows as
// a runtime.asyncPreempt frame on top of the interrupted function. On a
// loaded machine the runtime resends the signal every few microseconds
// until the goroutine's thread runs again, and asyncPreempt can outrank
// burnCPU in both profiles. That frame is an artefact of how the sample
// was taken, not a function the program called, so pprof is told to hide
// it, which leaves its samples with the function it interrupted.

// checkPprofRoundTrip converts the CPU profile of a full window, as the
// Collector wrote it to profilesFile, back to pprof with the pprofotel
// command, opens it with go tool pprof, and compares its top functions with
// the reference run's.
func checkPprofRoundTrip(t *testing.T, profilesFile string, windows []*profilespb.ProfilesData, ref pprofTop) {
	t.Helper()
	// The window with the most CPU, the last one (cut short by Stop) aside.
	best, bestCPU := -1, int64(0)
	for i, pd := range windows[:len(windows)-1] {
		var total int64
		for _, p := range profilesOf(pd, "cpu") {
			for _, s := range p.GetSamples() {
				total += s.GetValues()[0]
			}
		}
		if total > bestCPU {
			best, bestCPU = i, total
		}
	}
	if best < 0 {
		t.Fatal("no full window has CPU samples")
	}
	// The window's bounds select it alone: the windows before it end
	// where it starts, the windows after it start where it ends.
	start, end := windowBounds(windows[best])
	out := t.TempDir()
	args := []string{"pprof", "-service", serviceName(windows[best]), "-profile", "cpu",
		"-from", time.Unix(0, int64(start)).UTC().Format(time.RFC3339Nano),
		"-to", time.Unix(0, int64(end)).UTC().Format(time.RFC3339Nano),
		"-o", out, profilesFile}
	if msg, err := exec.Command(pprofotelCommand(t), args...).CombinedOutput(); err != nil {
		t.Fatalf("window %d: pprofotel %s: %v\n%s", best, strings.Join(args, " "), err, msg)
	}
	path := filepath.Join(out, "cpu.pb.gz")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pprofprofile.Parse(f)
	f.Close()
	if err != nil {
		t.Fatalf("window %d: %v", best, err)
	}
	if got := p.SampleType; len(got) != 2 || got[0].Type != "samples" || got[1].Type != "cpu" || got[1].Unit != "nanoseconds" {
		t.Errorf("window %d: pprof sample types %v, want samples/count and cpu/nanoseconds as the runtime writes them", best, got)
	}
	// The profiler sends cpu/nanoseconds only when it is not samples/count
	// times the period (otlpattr.SampleTypes); the converter computes it
	// otherwise. So the pprof profile holds the window's totals of what
	// was sent, and cpu/nanoseconds is samples times the period when it
	// was not sent.
	sentNanos := len(profilesOf(windows[best], "cpu")) == 2
	var total int64
	for _, s := range p.Sample {
		total += s.Value[0]
		if sentNanos {
			total += s.Value[1]
		} else if s.Value[1] != s.Value[0]*p.Period {
			t.Errorf("window %d: a sample holds %d samples and %d ns, want samples × period %d", best, s.Value[0], s.Value[1], p.Period)
		}
	}
	if total != bestCPU {
		t.Errorf("window %d: the pprof profile holds %d of what was sent, the Collector's window %d", best, total, bestCPU)
	}

	got := runPprofTop(t, path)
	for _, top := range []struct {
		what string
		top  pprofTop
	}{{fmt.Sprintf("the Collector's window %d", best), got}, {"the runtime's own profile", ref}} {
		if top.top.rows[0] != funcName(burnCPU) {
			t.Errorf("go tool pprof -top of %s: top function %s, want %s\n"+
				"go tool pprof -top of the Collector's window %d:\n%s\nof the runtime's own profile:\n%s",
				top.what, top.top.rows[0], funcName(burnCPU), best, got.output, ref.output)
		}
	}
}

// pprofotelCommand builds the pprofotel command of the module under test
// (the go build cache makes every build after the first a link) and returns
// its path. It builds in the profiler's module, with its go.sum, as a user
// does: this module's go.sum lacks what the command alone needs (pprof's
// web UI pulls in github.com/ianlancetaylor/demangle), since nothing here
// imports it.
func pprofotelCommand(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pprofotel")
	build := exec.Command("go", "build", "-o", path, "./cmd/pprofotel")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build github.com/pprofotel/profiler/cmd/pprofotel: %v\n%s", err, out)
	}
	return path
}

// pprofTop is the output of go tool pprof -top and the function names of
// its rows, highest flat value first.
type pprofTop struct {
	output string
	rows   []string
}

// runPprofTop runs go tool pprof -top on the profile at path, failing the
// test if pprof cannot open it.
func runPprofTop(t *testing.T, path string) pprofTop {
	t.Helper()
	args := []string{"tool", "pprof", "-top", "-nodecount=5", `-hide=^runtime\.asyncPreempt$`, path}
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	top := pprofTop{output: string(out)}
	// The rows follow a header line that starts with "flat"; each reads
	// "flat flat% sum% cum cum% function [(inline)]".
	inRows := false
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		switch {
		case len(fields) > 0 && fields[0] == "flat":
			inRows = true
		case inRows && len(fields) >= 6:
			top.rows = append(top.rows, fields[5])
		}
	}
	if len(top.rows) == 0 {
		t.Fatalf("go %s printed no rows:\n%s", strings.Join(args, " "), out)
	}
	return top
}

// referenceTop runs the workload in a child process profiled by
// runtime/pprof alone (see TestMain) and returns go tool pprof -top of its
// CPU profile.
func referenceTop(t *testing.T) pprofTop {
	t.Helper()
	path := filepath.Join(t.TempDir(), "reference.pprof")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), referenceEnv+"="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	return runPprofTop(t, path)
}

// writeReferenceProfile profiles two periods of the workload, with the same
// span machinery and the same mutex and block rates as the profiled runs,
// with runtime/pprof, and writes the CPU profile to path.
func writeReferenceProfile(path string) error {
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	tracer := labels.WrapTracerProvider(tp).Tracer(tracerID)

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return err
	}
	w := startWorkload(tracer)
	time.Sleep(2 * period)
	pprof.StopCPUProfile()
	w.Stop()
	return f.Close()
}
