package profiler

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pprofotel/profiler/exporters/otlpprofilehttp"
	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/collect/requests"
)

func TestStopTwiceAndFromManyGoroutines(t *testing.T) {
	p, err := Start(WithExporter(noneExporter{}), WithWindow(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.Stop(stopContext(t))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Stop #%d: %v", i, err)
		}
	}
	if err := p.Stop(stopContext(t)); err != nil {
		t.Errorf("Stop after Stop: %v", err)
	}
	// Everything process-wide is free again: a new profiler starts, and so
	// does the application's own CPU profile.
	if err := pprof.StartCPUProfile(io.Discard); err != nil {
		t.Fatalf("CPU profiler still held after Stop: %v", err)
	}
	pprof.StopCPUProfile()
	p2, err := Start(WithExporter(noneExporter{}), WithWindow(time.Hour))
	if err != nil {
		t.Fatalf("Start after Stop: %v", err)
	}
	p2.Stop(context.Background())
}

func TestSecondProfilerIsRefused(t *testing.T) {
	p, err := Start(WithExporter(noneExporter{}), WithWindow(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(stopContext(t))
	if _, err := Start(WithExporter(noneExporter{})); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second Start: err = %v, want an error saying a profiler is already running", err)
	}
}

func TestDisabledProfilerDoesNothing(t *testing.T) {
	for _, env := range []struct{ key, value string }{
		{"PPROFOTEL_ENABLED", "false"},
		{"OTEL_SDK_DISABLED", "true"},
	} {
		t.Run(env.key, func(t *testing.T) {
			t.Setenv(env.key, env.value)
			prev := runtime.SetMutexProfileFraction(-1)
			p, err := Start(WithProfileTypes(MutexProfile), WithMutexProfileFraction(3))
			if err != nil {
				t.Fatal(err)
			}
			if got := runtime.SetMutexProfileFraction(-1); got != prev {
				t.Errorf("a disabled profiler changed the mutex fraction to %d", got)
			}
			if err := pprof.StartCPUProfile(io.Discard); err != nil {
				t.Errorf("a disabled profiler holds the CPU profiler: %v", err)
			} else {
				pprof.StopCPUProfile()
			}
			// Another profiler may run: the disabled one holds nothing.
			if err := p.Stop(stopContext(t)); err != nil {
				t.Errorf("Stop: %v", err)
			}
		})
	}
}

// TestStartIgnoresBadEnvironment checks that an invalid variable is
// logged, naming it and its value, and does not stop the profiler.
func TestStartIgnoresBadEnvironment(t *testing.T) {
	t.Setenv("PPROFOTEL_WINDOW", "soon")
	var logs bytes.Buffer
	p, err := Start(WithLogger(slog.New(slog.NewTextHandler(&logs, nil))), WithExporter(noneExporter{}))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer p.Stop(stopContext(t))
	if !strings.Contains(logs.String(), `PPROFOTEL_WINDOW=\"soon\"`) {
		t.Errorf("logs = %q, want a warning naming PPROFOTEL_WINDOW and its value", logs.String())
	}
	if p.cfg.window != defaultWindow {
		t.Errorf("window = %v, want the default", p.cfg.window)
	}
}

func TestStopIsBoundedByItsContext(t *testing.T) {
	// A receiver that accepts connections and never answers.
	endpoint := hangingEndpoint(t)
	p, err := Start(WithExporter(httpExporter(t, endpoint, otlpprofilehttp.WithTimeout(time.Hour))),
		WithWindow(time.Hour), WithProfileTypes(GoroutineProfile))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = p.Stop(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop: err = %v, want the context's deadline", err)
	}
	if !strings.Contains(err.Error(), "not delivered") && !strings.Contains(err.Error(), "stop") {
		t.Errorf("Stop's error should say what was not delivered: %v", err)
	}
	<-p.done // the export gave up with the context; the next test may start
}

// TestPanicWhileStartingIsAnError has the baseline read panic, as a bug in
// the decoder would, on the application's goroutine: Start returns an error
// instead, and leaves the process as it found it.
func TestPanicWhileStartingIsAnError(t *testing.T) {
	for _, typ := range []ProfileType{HeapProfile, MutexProfile, BlockProfile} {
		t.Run(typ.String(), func(t *testing.T) {
			panicking := func(name string, w io.Writer) error {
				if name == typ.String() {
					panic("decoder bug")
				}
				return collect.RuntimeSource(name, w)
			}
			prevFraction := runtime.SetMutexProfileFraction(-1)

			p, err := Start(withRuntime(panicking, collect.CPUProfiler{}), WithExporter(noneExporter{}), WithWindow(time.Hour),
				WithProfileTypes(CPUProfile, typ), WithMutexProfileFraction(7))
			if err == nil || !strings.Contains(err.Error(), "decoder bug") {
				p.Stop(stopContext(t))
				t.Fatalf("Start: %v; want an error carrying the panic", err)
			}
			if got := runtime.SetMutexProfileFraction(-1); got != prevFraction {
				t.Errorf("mutex fraction after the failed Start = %d, want %d", got, prevFraction)
			}
			if tracker := requests.New(requests.Config{}); tracker.Install() != nil {
				t.Error("the failed Start left its request tracker installed")
			} else {
				tracker.Stop()
			}
			p, err = Start(WithExporter(noneExporter{}), WithWindow(time.Hour))
			if err != nil {
				t.Fatalf("Start after the failed Start: %v", err)
			}
			if err := p.Stop(stopContext(t)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCPUProfilerHeldByTheApplication holds the CPU profiler the way an
// application serving /debug/pprof/profile would: the profiler goes on
// with its other profiles and counts the windows without CPU data.
func TestCPUProfilerHeldByTheApplication(t *testing.T) {
	if err := pprof.StartCPUProfile(io.Discard); err != nil {
		t.Fatal(err)
	}
	held := true
	defer func() {
		if held {
			pprof.StopCPUProfile()
		}
	}()
	p, err := Start(shortWindows(), WithExporter(noneExporter{}), WithWindow(20*time.Millisecond),
		WithProfileTypes(CPUProfile, GoroutineProfile))
	if err != nil {
		t.Fatal(err)
	}
	poll(t, "windows counted as without CPU data", func() bool {
		s := p.Stats()
		return s.CPUProfilesSkipped >= 2 && s.WindowsExported >= 2
	})
	pprof.StopCPUProfile()
	held = false
	if err := p.Stop(stopContext(t)); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.ProfilesLeftOut != 0 {
		t.Errorf("ProfilesLeftOut = %d: a busy CPU profiler is a skip, not a failure", s.ProfilesLeftOut)
	}
}
