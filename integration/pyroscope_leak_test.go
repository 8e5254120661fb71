package integration

import (
	"context"
	"log/slog"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	profiler "github.com/pprofotel/profiler"
)

// leakedForPyroscope is how many goroutines TestPyroscopeGoroutineLeak
// leaks.
const leakedForPyroscope = 6

// leakForPyroscope blocks for good on a channel only it holds.
//
//go:noinline
func leakForPyroscope(started *sync.WaitGroup) {
	never := make(chan struct{})
	started.Done()
	<-never
}

// TestPyroscopeGoroutineLeak sends the goroutine and goroutine-leak profiles
// of a process that leaked goroutines to a real Grafana Pyroscope, and
// checks that Pyroscope keeps them apart, as goroutine:goroutine:count:...
// and goroutineleak:goroutineleak:count:..., with every window's totals as
// sent, the leaks counted. On a Go without the profile (1.26 without
// GOEXPERIMENT=goroutineleakprofile) it checks instead that Start refuses
// the profile.
func TestPyroscopeGoroutineLeak(t *testing.T) {
	if pprof.Lookup("goroutineleak") == nil {
		// No receiver: the environment's "none" exporter discards.
		t.Setenv("OTEL_PROFILES_EXPORTER", "none")
		p, err := profiler.Start(profiler.WithProfileTypes(profiler.GoroutineLeakProfile))
		if err == nil {
			p.Stop(context.Background())
			t.Fatalf("Start with the goroutine-leak profile succeeded on %s, which has none", runtime.Version())
		}
		if !strings.Contains(err.Error(), "Go 1.27") {
			t.Errorf("Start's error %q does not name the Go it needs", err)
		}
		return
	}
	py := startPyroscope(t)
	proxy := startRecordingProxy(t, strings.TrimPrefix(py.URL, "http://"), py.URL)
	run := &pyroscopeRun{service: "pprofotel-goroutine-leak", logs: new(syncBuffer)}

	var started sync.WaitGroup
	started.Add(leakedForPyroscope)
	for range leakedForPyroscope {
		go leakForPyroscope(&started)
	}
	started.Wait()

	run.started = time.Now()
	p, err := profiler.Start(
		profiler.WithServiceName(run.service),
		profiler.WithExporter(newOTLPExporter(t, protocolHTTPProtobuf, proxy.HTTPAddr)),
		profiler.WithWindow(time.Second),
		profiler.WithGoroutineLeakInterval(time.Second), // every window
		profiler.WithProfileTypes(profiler.GoroutineProfile, profiler.GoroutineLeakProfile),
		profiler.WithLogger(slog.New(slog.NewTextHandler(run.logs, nil))),
	)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	run.stopped = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound: Stop returns once delivered
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	run.stats = p.Stats()
	for _, x := range proxy.recorded() {
		if requestService(x.req) == run.service {
			run.exchanges = append(run.exchanges, x)
		}
	}
	if len(run.exchanges) < 2 {
		t.Fatalf("the proxy saw %d requests of %s; want at least 2", len(run.exchanges), run.service)
	}
	if run.stats.GoroutinesLeaked < leakedForPyroscope {
		t.Errorf("Stats().GoroutinesLeaked = %d, want at least the %d leaked here", run.stats.GoroutinesLeaked, leakedForPyroscope)
	}

	types := []string{
		"goroutine:goroutine:count:goroutine:count",
		"goroutineleak:goroutineleak:count:goroutineleak:count",
	}
	checkAccepted(t, run)
	checkPyroscopeTotalsOf(t, py, run, types)
	checkProfileTypesOf(t, py, run, types)

	// Every window's leak profile holds the goroutines leaked above.
	sent, windows := sentTotals(t, run)
	for _, w := range windows {
		if n := sent[types[1]][w]; n < leakedForPyroscope {
			t.Errorf("window at %d: %d leaked goroutines sent, want at least %d", w, n, leakedForPyroscope)
		}
	}
}
