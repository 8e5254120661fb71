package profiler

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/pprofotel/profiler/internal/control"
	"github.com/pprofotel/profiler/internal/otlpattr"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
	"github.com/pprofotel/profiler/labels"
)

// sentWindow is what a request says of its window: the profiles it holds,
// by name, and the time range of the heap profile, which covers the window.
type sentWindow struct {
	profiles   []string
	start, end int64
}

func sentWindows(reqs []*collectorpb.ExportProfilesServiceRequest) []sentWindow {
	var ws []sentWindow
	for _, req := range reqs {
		var w sentWindow
		for _, rp := range req.ResourceProfiles {
			for _, sp := range rp.ScopeProfiles {
				var name string
				for _, kv := range sp.Scope.GetAttributes() {
					if kv.Key == otlpattr.ProfileName {
						name = kv.Value.GetStringValue()
					}
				}
				w.profiles = append(w.profiles, name)
				if name == "heap" && len(sp.Profiles) > 0 {
					w.start = int64(sp.Profiles[0].TimeUnixNano)
					w.end = w.start + int64(sp.Profiles[0].DurationNano)
				}
			}
		}
		ws = append(ws, w)
	}
	return ws
}

// TestRemoteSettings drives a running profiler through internal/control as
// the opamp package does: an invalid change is refused with the option's
// error and changes nothing; a valid one takes effect at a window boundary,
// where the window that ends is sent whole with the old profile types and
// the next begins at the same instant with the new ones and their runtime
// rate; pausing stops the windows without stopping the profiler, and
// resuming starts them again.
func TestRemoteSettings(t *testing.T) {
	exp := &memoryExporter{}
	prev := runtime.SetMutexProfileFraction(-1)
	p, err := Start(WithExporter(exp), shortWindows(), WithWindow(20*time.Millisecond),
		WithProfileTypes(HeapProfile, GoroutineProfile), WithProcessContext(false))
	if err != nil {
		t.Fatal(err)
	}
	target, ok := control.Lookup(p)
	if !ok {
		t.Fatal("no control target for a running profiler")
	}
	local := target.Local()
	if got := strings.Join(local.ProfileTypes, ","); got != "heap,goroutine" || local.Window != 20*time.Millisecond || !local.Enabled {
		t.Fatalf("local settings %+v", local)
	}

	for _, tt := range []struct {
		name   string
		change func(*control.Settings)
		want   string
	}{
		{"window below the floor", func(s *control.Settings) { s.Window = time.Nanosecond }, "WithWindow(1ns): window must be at least 1ms"},
		{"unknown profile type", func(s *control.Settings) { s.ProfileTypes = []string{"heap", "wall"} }, `unknown profile type "wall"`},
		{"no profile type", func(s *control.Settings) { s.ProfileTypes = nil }, "no profile type named"},
		{"CPU duty above 100", func(s *control.Settings) { s.CPUDuty = 101 }, "WithCPUDutyCycle(101)"},
		{"off-CPU duty 0", func(s *control.Settings) { s.OffCPUDuty = 0 }, "WithOffCPUDutyCycle(0)"},
		{"mutex fraction 0", func(s *control.Settings) { s.MutexFraction = 0 }, "WithMutexProfileFraction(0)"},
		{"negative goroutine guard", func(s *control.Settings) { s.MaxGoroutines = -1 }, "WithMaxGoroutines(-1)"},
		{"off-CPU not linked", func(s *control.Settings) { s.ProfileTypes = []string{"heap", "offcpu"} }, "off-CPU profile is not linked"},
	} {
		s := target.Local()
		tt.change(&s)
		if _, _, err := target.Apply(s); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Apply error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
	if got := target.Effective(); !slices.Equal(got.ProfileTypes, local.ProfileTypes) || got.Window != local.Window {
		t.Fatalf("refused changes changed the settings: %+v", got)
	}

	poll(t, "two windows", func() bool { return p.Stats().WindowsExported >= 2 })
	change := target.Local()
	change.ProfileTypes = []string{"mutex", "heap", "goroutine"}
	change.MutexFraction = 3
	change.Window = 30 * time.Millisecond
	_, applied, err := target.Apply(change)
	if err != nil {
		t.Fatal(err)
	}
	<-applied
	eff := target.Effective()
	if got := strings.Join(eff.ProfileTypes, ","); got != "heap,goroutine,mutex" || eff.MutexFraction != 3 || eff.Window != 30*time.Millisecond {
		t.Fatalf("effective settings after the change: %+v", eff)
	}
	if rate := runtime.SetMutexProfileFraction(-1); rate != 3 {
		t.Errorf("mutex profile fraction %d after the change, want 3", rate)
	}
	collected := p.Stats().WindowsCollected
	poll(t, "two windows after the change", func() bool { return p.Stats().WindowsExported >= collected+2 })

	pause := target.Effective()
	pause.Enabled = false
	_, applied, err = target.Apply(pause)
	if err != nil {
		t.Fatal(err)
	}
	<-applied
	if rate := runtime.SetMutexProfileFraction(-1); rate != prev {
		t.Errorf("mutex profile fraction %d while paused, want the previous %d restored", rate, prev)
	}
	paused := p.Stats().WindowsCollected
	resume := target.Effective()
	resume.Enabled = true
	_, applied, err = target.Apply(resume)
	if err != nil {
		t.Fatal(err)
	}
	<-applied
	if got := p.Stats().WindowsCollected; got != paused {
		t.Errorf("%d windows collected while paused", got-paused)
	}
	poll(t, "a window after resuming", func() bool { return p.Stats().WindowsExported > paused })

	if err := stopWithin(t, p, context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := target.Apply(target.Local()); err == nil {
		t.Error("Apply after Stop succeeded")
	}
	checkAccounting(t, p)

	exp.mu.Lock()
	ws := sentWindows(exp.requests)
	exp.mu.Unlock()
	// Every window starts where the previous one ended, none lost, none
	// split at a change, but for the first after the pause; the profile
	// types switch at one boundary.
	if len(ws) <= int(paused) {
		t.Fatalf("%d windows sent, %d before the pause", len(ws), paused)
	}
	switched := slices.IndexFunc(ws, func(w sentWindow) bool { return slices.Contains(w.profiles, "mutex") })
	if switched < 2 {
		t.Fatalf("the change took effect at window %d, want after at least two windows: %+v", switched, ws)
	}
	for i, w := range ws {
		if got := slices.Contains(w.profiles, "mutex"); got != (i >= switched) {
			t.Errorf("window %d has profiles %v; the change took effect at window %d", i, w.profiles, switched)
		}
		switch {
		case i == 0:
		case i == int(paused):
			if w.start <= ws[i-1].end {
				t.Errorf("the first window after the pause starts at %d, the last before it ended at %d", w.start, ws[i-1].end)
			}
		case w.start != ws[i-1].end:
			t.Errorf("window %d starts at %d, window %d ended at %d", i, w.start, i-1, ws[i-1].end)
		}
	}
	runtime.SetMutexProfileFraction(prev)
}

// TestRemoteControlDisabled: a profiler switched off by the environment
// has nothing to control.
func TestRemoteControlDisabled(t *testing.T) {
	t.Setenv("PPROFOTEL_ENABLED", "false")
	p, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := control.Lookup(p); ok {
		t.Error("a disabled profiler has a control target")
	}
	if _, ok := control.Lookup((*Profiler)(nil)); ok {
		t.Error("a nil profiler has a control target")
	}
}

// TestRemoteChangeKeepsRequests begins requests, changes the settings
// remotely while they run, and ends them: each is counted once, in a
// window after the change (issue 35: the change dropped them).
func TestRemoteChangeKeepsRequests(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	tracer := labels.WrapTracerProvider(tp).Tracer("control-test")
	exp := &memoryExporter{}
	p, err := Start(WithExporter(exp), shortWindows(), WithWindow(20*time.Millisecond),
		WithProfileTypes(HeapProfile), WithProcessContext(false))
	if err != nil {
		t.Fatal(err)
	}
	target, ok := control.Lookup(p)
	if !ok {
		t.Fatal("no control target for a running profiler")
	}
	const held = 5
	var spans []trace.Span
	for range held {
		_, s := tracer.Start(context.Background(), "GET /held")
		spans = append(spans, s)
	}
	for _, change := range []func(*control.Settings){
		func(s *control.Settings) { s.Window = 30 * time.Millisecond },
		func(s *control.Settings) { s.Enabled = false },
		func(s *control.Settings) { s.Enabled = true },
	} {
		s := target.Effective()
		change(&s)
		_, applied, err := target.Apply(s)
		if err != nil {
			t.Fatal(err)
		}
		<-applied
	}
	for _, s := range spans {
		s.End()
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	exp.mu.Lock()
	defer exp.mu.Unlock()
	var counted int64
	for _, req := range exp.requests {
		for _, s := range otlptest.Samples(req, "requests", "requests") {
			if s.Attrs["route"] == "GET /held" {
				counted += s.Values[0]
			}
		}
	}
	if counted != held {
		t.Errorf("%d of the %d requests running across the changes counted", counted, held)
	}
}
