package offcpu_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
	"github.com/pprofotel/profiler/internal/testutil/waittest"
)

// TestOffCPUWaitsExactAcrossWindows is issue 35's scenario: a goroutine
// waits 300 ms on a channel, 200 ms on a mutex and 100 ms in time.Sleep
// inside each of ten spans, at PPROFOTEL_OFFCPU_DUTY=100 and 2 s windows.
// Every wait is traced whole, so every span's off-CPU time of each reason
// must be the wait its call measured within 10 %, whatever window the
// wait began or ended in, the first included (the trace starts after the
// window does), and the last, ended by Stop. The reference is each call's
// own duration, not the nominal wait or the windows' wall clock: on a busy
// machine a wait includes the time the goroutine then waits for a CPU.
func TestOffCPUWaitsExactAcrossWindows(t *testing.T) {
	t.Setenv("PPROFOTEL_OFFCPU_DUTY", "100")
	tracer, p, dir := startToFiles(t, profiler.WithWindow(2*time.Second), profiler.WithProfileTypes(profiler.OffCPUProfile))
	type wait struct {
		fn, reason string
		wait       func(time.Duration)
		d          time.Duration
	}
	waits := []wait{
		{"OnChannel", "chan receive", waittest.OnChannel, 300 * time.Millisecond},
		{"OnMutex", "sync", waittest.OnMutex, 200 * time.Millisecond},
		{"InSleep", "sleep", waittest.InSleep, 100 * time.Millisecond},
	}
	const spans = 10
	type key struct{ span, fn string }
	took := make(map[key]time.Duration)
	var ids []string
	for range spans {
		_, span := tracer.Start(context.Background(), "request")
		id := span.SpanContext().SpanID().String()
		ids = append(ids, id)
		for _, w := range waits {
			t0 := time.Now()
			w.wait(w.d)
			took[key{id, w.fn}] = time.Since(t0)
		}
		span.End()
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	got := make(map[key]time.Duration)
	var parts = make(map[key][]string)
	for _, req := range otlptest.ReadDir(t, dir) {
		for _, g := range offCPUWaits(t, req) {
			for _, w := range waits {
				if g.InStack(w.fn) && g.Attrs["wait_reason"] == w.reason {
					k := key{g.SpanID, w.fn}
					got[k] += time.Duration(g.nanos)
					parts[k] = append(parts[k], fmt.Sprintf("%v at %d in [%d, +%v)", time.Duration(g.nanos), g.at, g.Profile.GetTimeUnixNano(), time.Duration(g.Profile.GetDurationNano())))
				}
			}
		}
	}
	exact := 0
	for i, id := range ids {
		ok := true
		for _, w := range waits {
			k := key{id, w.fn}
			if g, want := got[k], took[k]; g < want*90/100 || g > want*110/100 {
				ok = false
				t.Errorf("span %d, %s: %v off CPU in %q, want the call's %v ± 10 %%; its waits: %v", i, w.fn, g, w.reason, want, parts[k])
			}
		}
		if ok {
			exact++
		}
	}
	t.Logf("%d of %d spans have each wait within 10 %%", exact, spans)
}
