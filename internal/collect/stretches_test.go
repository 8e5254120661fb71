package collect

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/collect/requests"
)

// TestRootsOfCPUStretch drives the CPU duty cycle with made-up times, and
// requests renamed as they end around its stretch: the window remembers
// the roots whose life overlapped the stretch and that its samples name,
// and not the others. The tracker is swept between the events, as
// its sweeper would, so that it tells their order.
func TestRootsOfCPUStretch(t *testing.T) {
	tests := []struct {
		name string
		busy bool // the CPU profiler is someone else's: no stretch
		// want maps each request to the route the window gives it.
		want      map[string]string
		unsampled int64
	}{
		// "out of" ended after the stretch's samples were read: it is
		// carried into the next window, not yet forgotten.
		{"recorded", false, map[string]string{"before": "", "into": "GET /into", "across": "GET /across", "out of": "", "after": ""}, 2},
		{"CPU profiler busy", true, map[string]string{"before": "", "into": "", "across": "", "out of": "", "after": ""}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Unix(1_700_000_000, 0)
			// Its samples name "into" and "across", begun second and third.
			data := cpuPart(t, t0, map[string]int64{fmt.Sprintf("%016x", 2): 1, fmt.Sprintf("%016x", 3): 1})
			cpu := &fakeCPU{busy: map[int]bool{1: tt.busy}, data: data}
			c, err := New(Config{
				Profiles: []string{CPU}, CPU: CPUProfiler{Start: cpu.start, Stop: cpu.stop},
				Window: time.Minute, CPUDuration: 10 * time.Second,
				CPUOffset: func(time.Duration) time.Duration { return 30 * time.Second },
				MaxRoutes: 10,
			})
			if err != nil {
				t.Fatal(err)
			}
			c.Start(t0)
			defer c.Abandon()
			if c.tracker == nil {
				t.Fatal("no tracker installed")
			}
			roots := map[string]string{}
			reqs := map[string]*requests.Request{}
			begin := func(name string) {
				roots[name] = fmt.Sprintf("%016x", len(roots)+1)
				reqs[name] = requests.Begin("0af7651916cd43dd8448eb211c80319c"+roots[name], "GET", "", time.Now())
				reqs[name].Labelled()
			}
			end := func(name string) {
				reqs[name].SetName("GET /" + name)
				reqs[name].End(time.Now())
			}
			sweep := func() { c.tracker.Sweep(time.Now()) }

			sweep()
			begin("before")
			begin("into")
			begin("across")
			sweep()
			end("before")
			sweep()
			c.Change(t0.Add(30 * time.Second)) // starts the CPU profile
			sweep()
			end("into")
			begin("out of")
			sweep()
			c.Change(t0.Add(40 * time.Second)) // stops it
			sweep()
			end("across")
			end("out of")
			begin("after")
			sweep()
			end("after")
			// As the window's end does: the stretch's roots told, then
			// the window ended.
			if _, _, _, err := c.cycleCPU(time.Now(), false); err != nil {
				t.Fatal(err)
			}
			q := c.tracker.Window(time.Now())

			got := map[string]string{}
			for name, id := range roots {
				got[name], _ = q.Route(id)
			}
			if !maps.Equal(got, tt.want) || q.Unsampled != tt.unsampled {
				t.Errorf("routes %v, unsampled %d; want %v, %d", got, q.Unsampled, tt.want, tt.unsampled)
			}
		})
	}
}
