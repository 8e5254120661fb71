package profiler

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pprofotel/profiler/internal/control"
)

// pendingConfig is the configuration of the change waiting for p's next
// window boundary, which the collector will be built from.
func pendingConfig(t *testing.T, p *Profiler) *config {
	t.Helper()
	st, ok := controls.Load(p)
	if !ok {
		t.Fatal("no control state")
	}
	c := st.(*controlState).pending.Load()
	if c == nil {
		t.Fatal("no change waiting")
	}
	return c.cfg
}

// TestRemoteChangeKeepsLocalSettings: a change of the settings remote
// control reaches touches nothing else. The routes' bound and the
// slow-request threshold, set by an option or by the environment, stay as
// Start resolved them, and the local settings applied again (at an expiry
// or the client's Shutdown) give back exactly the configuration Start
// resolved.
func TestRemoteChangeKeepsLocalSettings(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		opts []Option
	}{
		{"options", nil, []Option{WithMaxRoutes(1000), WithSlowRequestThreshold(2 * time.Second), WithMaxGoroutines(500)}},
		{"environment", map[string]string{
			"PPROFOTEL_MAX_ROUTES": "1000", "PPROFOTEL_SLOW_REQUEST_THRESHOLD": "2s", "PPROFOTEL_MAX_GOROUTINES": "500",
		}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			synctest.Test(t, func(t *testing.T) {
				opts := append([]Option{WithExporter(&memoryExporter{}), WithWindow(time.Minute),
					WithProfileTypes(HeapProfile), WithProcessContext(false)}, tt.opts...)
				p, err := Start(opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer p.Stop(context.Background())
				target, ok := control.Lookup(p)
				if !ok {
					t.Fatal("no control target")
				}
				change := target.Local()
				change.CPUDuty = 20
				if _, _, err := target.Apply(change); err != nil {
					t.Fatal(err)
				}
				c := pendingConfig(t, p)
				if c.maxRoutes != 1000 || c.slowThreshold != 2*time.Second || c.maxGoroutines != 500 || c.cpuDuty != 20 {
					t.Errorf("after a change of the CPU duty cycle: %d routes, slow threshold %v, %d goroutines, duty %d%%; "+
						"want 1000, 2s, 500 and 20%%", c.maxRoutes, c.slowThreshold, c.maxGoroutines, c.cpuDuty)
				}
				if _, _, err := target.Apply(target.Local()); err != nil {
					t.Fatal(err)
				}
				checkSameConfig(t, pendingConfig(t, p), p.cfg)
			})
		})
	}
}

// checkSameConfig compares what a window is collected with.
func checkSameConfig(t *testing.T, got, want *config) {
	t.Helper()
	type collected struct {
		window, cpuDuration, slowThreshold time.Duration
		cpuDuty, maxGoroutines, maxRoute   int
		rates                              [numProfileTypes]int
		intervals                          [numProfileTypes]time.Duration
	}
	of := func(c *config) collected {
		return collected{c.window, c.cpuDuration, c.slowThreshold, c.cpuDuty, c.maxGoroutines, c.maxRoutes, c.rates, c.intervals}
	}
	if of(got) != of(want) || !slices.Equal(got.profileTypes, want.profileTypes) {
		t.Errorf("the local settings applied again give\n%+v %v\nwant what Start resolved\n%+v %v",
			of(got), got.profileTypes, of(want), want.profileTypes)
	}
}

// TestRemoteWindowLongerThanLocal: with a remote window far longer than
// the local one (1,000 h), a change (here the local settings' return, as
// at an expiry or the client's Shutdown) takes effect within one local
// window, and the long window is cut there and sent.
func TestRemoteWindowLongerThanLocal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const local = 10 * time.Second
		exp := &memoryExporter{}
		p, err := Start(WithExporter(exp), WithWindow(local), WithProfileTypes(HeapProfile), WithProcessContext(false))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Stop(context.Background())
		target, _ := control.Lookup(p)
		long := target.Local()
		long.Window = 1000 * time.Hour
		_, applied, err := target.Apply(long)
		if err != nil {
			t.Fatal(err)
		}
		<-applied
		if got := target.Effective().Window; got != 1000*time.Hour {
			t.Fatalf("window %v in effect, want 1000h", got)
		}
		before := p.Stats().WindowsCollected
		time.Sleep(3 * local) // in the bubble: no window is due
		if got := p.Stats().WindowsCollected; got != before {
			t.Errorf("%d windows collected within a 1000h window", got-before)
		}
		asked := time.Now()
		_, applied, err = target.Apply(target.Local())
		if err != nil {
			t.Fatal(err)
		}
		<-applied
		if took := time.Since(asked); took > local {
			t.Errorf("the local settings took %v to return, want at most one local window (%v)", took, local)
		}
		if got := p.Stats().WindowsCollected; got != before+1 {
			t.Errorf("%d windows collected at the change, want the long one, cut short", got-before)
		}
		synctest.Wait()
		if got := target.Effective().Window; got != local {
			t.Errorf("window %v after the change, want the local %v", got, local)
		}
		// The windows go on at the local length.
		time.Sleep(2*local + time.Second)
		if got := p.Stats().WindowsCollected; got != before+3 {
			t.Errorf("%d windows in two local windows after the change, want 2", got-before-1)
		}
	})
}
