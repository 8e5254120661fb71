package profiler

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/pprofotel/profiler/internal/testutil/otlptest"
	"github.com/pprofotel/profiler/labels"
	"github.com/pprofotel/profiler/pprofconv"
)

// The goroutines of TestGoroutineLeakProfile: leakedInTest leak, each
// blocked on a channel only it holds; blockedInTest wait on a channel that a
// package variable keeps reachable, so they are blocked but not leaked.
const (
	leakedInTest  = 7
	blockedInTest = 5
)

// blockedRelease ends the blockedButReachable goroutines; as a package
// variable it keeps their channel reachable.
var blockedRelease chan struct{}

//go:noinline
func leakedInSpan(started *sync.WaitGroup) {
	never := make(chan struct{})
	started.Done()
	<-never
}

//go:noinline
func blockedButReachable(release <-chan struct{}, started *sync.WaitGroup) {
	started.Done()
	<-release
}

// TestGoroutineLeakProfile checks the goroutine-leak profile on the Go it
// runs on. Where runtime/pprof has the profile (Go 1.27), it leaks
// leakedInTest goroutines inside a span and blocks blockedInTest others on
// a reachable channel, and checks what the profiler exported: the leaked
// goroutines counted exactly, linked to their span and with their label,
// none of the blocked ones, the profile taken in the windows its interval
// says, and the converted pprof file a snapshot that go tool pprof reads.
// Where it has not (Go 1.26 without GOEXPERIMENT=goroutineleakprofile),
// asking for the profile must make Start fail with an error that names the
// Go it needs. .ci/run runs it under both.
func TestGoroutineLeakProfile(t *testing.T) {
	hasProfile := pprof.Lookup("goroutineleak") != nil
	if err := GoroutineLeakProfile.Available(); (err == nil) != hasProfile {
		t.Fatalf("GoroutineLeakProfile.Available() = %v, but pprof.Lookup(\"goroutineleak\") != nil is %v", err, hasProfile)
	}
	if !hasProfile {
		checkLeakProfileRefused(t)
		return
	}

	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	tracer := labels.WrapTracerProvider(tp).Tracer("leak-test")

	var started sync.WaitGroup
	blockedRelease = make(chan struct{})
	started.Add(blockedInTest)
	for range blockedInTest {
		go blockedButReachable(blockedRelease, &started)
	}
	defer close(blockedRelease)

	// A period of 50 ms and an interval of 150 ms: the profile is taken in
	// windows 0, 3, 6, ... and in the last.
	const every = 3
	dir := t.TempDir()
	p, err := Start(shortWindows(), WithWindow(50*time.Millisecond), WithGoroutineLeakInterval(150*time.Millisecond),
		WithProfileTypes(GoroutineProfile, GoroutineLeakProfile), WithExporter(fileExporter(t, dir)))
	if err != nil {
		t.Fatal(err)
	}
	var span trace.SpanContext
	pprof.Do(context.Background(), pprof.Labels("leak", "test"), func(ctx context.Context) {
		_, s := tracer.Start(ctx, "leaky")
		span = s.SpanContext()
		started.Add(leakedInTest)
		for range leakedInTest {
			go leakedInSpan(&started) // inherits the span's labels
		}
		s.End()
	})
	started.Wait()
	poll(t, "eight windows written", func() bool { return p.Stats().WindowsExported >= 2*every+2 })
	if err := p.Stop(stopContext(t)); err != nil {
		t.Fatal(err)
	}

	files, _ := filepath.Glob(filepath.Join(dir, "*.pb"))
	var reqs []pprofconv.Request
	for _, f := range files {
		r, err := pprofconv.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, r...)
	}
	sort.Slice(reqs, func(i, j int) bool {
		a, _ := window(reqs[i].Request)
		b, _ := window(reqs[j].Request)
		return a < b
	})
	if int64(len(reqs)) != p.Stats().WindowsCollected {
		t.Fatalf("%d requests written for %d windows", len(reqs), p.Stats().WindowsCollected)
	}
	for i, r := range reqs {
		has := slices.Contains(scopeNames(r.Request), "goroutineleak")
		if want := i%every == 0 || i == len(reqs)-1; has != want {
			t.Errorf("window %d of %d: goroutine-leak profile sent %v, want %v (first, every %dth, last)", i, len(reqs), has, want, every)
		}
	}

	// The last window, taken at Stop, sees every goroutine above blocked.
	last := reqs[len(reqs)-1].Request
	leaks := otlptest.Samples(last, "goroutineleak", "goroutineleak")
	var leaked, blocked, all int64
	for _, s := range leaks {
		all += s.Values[0]
		if s.InStack("blockedButReachable") {
			blocked += s.Values[0]
		}
		// Earlier runs of the test (-count) leaked into other spans.
		if !s.InStack("leakedInSpan") || s.SpanID != span.SpanID().String() {
			continue
		}
		leaked += s.Values[0]
		if s.TraceID != span.TraceID().String() || s.Attrs["leak"] != "test" {
			t.Errorf("leaked goroutine: link %s/%s and attributes %v, want trace %s and leak=test",
				s.TraceID, s.SpanID, s.Attrs, span.TraceID())
		}
	}
	if leaked != leakedInTest || blocked != 0 {
		t.Errorf("goroutine-leak profile: %d goroutines leaked in the span's stack, %d blocked but reachable; want %d and 0",
			leaked, blocked, leakedInTest)
	}
	var waiting int64
	for _, s := range otlptest.Samples(last, "goroutine", "goroutine") {
		if s.InStack("blockedButReachable") {
			waiting += s.Values[0]
		}
	}
	if waiting != blockedInTest {
		t.Errorf("goroutine profile: %d goroutines in blockedButReachable, want %d", waiting, blockedInTest)
	}
	if got := p.Stats().GoroutinesLeaked; got != all || got < leakedInTest {
		t.Errorf("Stats().GoroutinesLeaked = %d, the last profile counts %d", got, all)
	}

	// Converted back to pprof, the windows merge into the latest snapshot,
	// as runtime/pprof writes the profile.
	profiles, _, err := pprofconv.Convert(reqs, pprofconv.Filter{Profiles: []string{"goroutineleak"}})
	if err != nil {
		t.Fatal(err)
	}
	gp := profiles["goroutineleak"]
	if gp == nil {
		t.Fatal("no goroutineleak profile converted")
	}
	if len(gp.SampleType) != 1 || gp.SampleType[0].Type != "goroutineleak" || gp.SampleType[0].Unit != "count" ||
		gp.PeriodType == nil || gp.PeriodType.Type != "goroutineleak" {
		t.Errorf("converted sample types %v, period %v; want goroutineleak/count", gp.SampleType, gp.PeriodType)
	}
	var converted int64
	for _, s := range gp.Sample {
		if slices.Equal(s.Label[labels.SpanIDKey], []string{span.SpanID().String()}) {
			converted += s.Value[0]
		}
	}
	if converted != leakedInTest {
		t.Errorf("converted profile: %d goroutines linked to the span, want %d (the latest window's, not a sum)", converted, leakedInTest)
	}
	goToolPprofTop(t, gp, "goroutineleak")
}

// checkLeakProfileRefused checks what asking for the goroutine-leak
// profile does on a Go without it: an option makes Start fail with an
// error that names the profile and the Go it needs; the environment, the
// operator's, gets the same words as a warning, and the other profiles run.
func checkLeakProfileRefused(t *testing.T) {
	t.Run("option", func(t *testing.T) {
		p, err := Start(WithProfileTypes(CPUProfile, GoroutineLeakProfile), WithExporter(noneExporter{}))
		if err == nil {
			p.Stop(stopContext(t))
			t.Fatalf("Start asking for goroutineleak on %s succeeded", runtime.Version())
		}
		for _, want := range []string{"goroutineleak", "Go 1.27", runtime.Version()} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Start's error %q does not say %q", err, want)
			}
		}
		if running.Load() {
			t.Error("a failed Start left the process marked as profiling")
		}
	})
	t.Run("environment", func(t *testing.T) {
		t.Setenv(envProfiles, "cpu,goroutineleak")
		var logs bytes.Buffer
		p, err := Start(WithExporter(noneExporter{}), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		if err != nil {
			t.Fatalf("Start with %s=cpu,goroutineleak on %s: %v", envProfiles, runtime.Version(), err)
		}
		defer p.Stop(stopContext(t))
		if got := p.cfg.profileTypes; !slices.Equal(got, []ProfileType{CPUProfile}) {
			t.Errorf("profile types %v, want [cpu]", got)
		}
		for _, want := range []string{"goroutineleak left out", "Go 1.27", runtime.Version()} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("the warning %q does not say %q", logs.String(), want)
			}
		}
	})
}

// TestLeakOnlyRunSendsOneRequestPerRead checks that with the goroutine-leak
// profile alone, the windows between two of its reads send nothing: one
// request per read (the first window, every third, the last), and no
// request holding only the resource. Where this Go lacks the profile,
// TestGoroutineLeakProfile checks the refusal and TestEmptyWindowSendsNothing
// the pipeline's rule.
func TestLeakOnlyRunSendsOneRequestPerRead(t *testing.T) {
	if GoroutineLeakProfile.Available() != nil {
		return
	}
	dir := t.TempDir()
	p, err := Start(shortWindows(), WithWindow(50*time.Millisecond), WithGoroutineLeakInterval(150*time.Millisecond),
		WithProfileTypes(GoroutineLeakProfile), WithExporter(fileExporter(t, dir)))
	if err != nil {
		t.Fatal(err)
	}
	poll(t, "three leak reads", func() bool { return p.Stats().WindowsExported >= 3 })
	if err := p.Stop(stopContext(t)); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.pb"))
	var reqs []pprofconv.Request
	for _, f := range files {
		r, err := pprofconv.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, r...)
	}
	if int64(len(reqs)) != p.Stats().WindowsExported || len(reqs) < 4 {
		t.Fatalf("%d requests written, %d windows exported; want equal and at least 4 (3 reads and Stop's)", len(reqs), p.Stats().WindowsExported)
	}
	for i, r := range reqs {
		if got := scopeNames(r.Request); !slices.Equal(got, []string{"goroutineleak"}) {
			t.Errorf("request %d holds scopes %q, want [goroutineleak]", i, got)
		}
	}
}
