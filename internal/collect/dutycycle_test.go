package collect

import (
	"io"
	"testing"
	"time"
)

// recordingCPU is a CPU profiler that writes a profile when stopped,
// data every time or each of parts in turn, and counts its starts and
// stops.
type recordingCPU struct {
	data          []byte
	parts         [][]byte
	w             io.Writer
	starts, stops int
}

func (f *recordingCPU) start(w io.Writer) error { f.starts++; f.w = w; return nil }
func (f *recordingCPU) stop() {
	data := f.data
	if f.parts != nil {
		data = f.parts[f.stops]
	}
	f.stops++
	f.w.Write(data)
	f.w = nil
}

// TestCPUDutyCycle drives the duty cycle with made-up times: the CPU
// profile records from the drawn offset for exactly the duration, its
// Profile says so to the nanosecond, and the other profile types cover the
// whole window.
func TestCPUDutyCycle(t *testing.T) {
	const period = 10 * time.Second
	t0 := time.Unix(1_700_000_000, 123)
	tests := []struct {
		name     string
		duration time.Duration
		offset   time.Duration
		// continuous: no change within the window, the profile covers it.
		continuous bool
	}{
		{"middle", 3 * time.Second, 2 * time.Second, false},
		{"at the start", 3 * time.Second, 0, false},
		{"at the end", 3 * time.Second, 7 * time.Second, false},
		{"an offset past the end is clamped", 3 * time.Second, time.Hour, false},
		{"equal to the period is continuous", period, 0, true},
		{"zero is continuous", 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cpu := &recordingCPU{data: snapshot(t, Goroutine)} // any valid profile will do as CPU data
			var offsetMax []time.Duration
			c, err := New(Config{
				Profiles: []string{CPU, Goroutine},
				CPU:      CPUProfiler{Start: cpu.start, Stop: cpu.stop},
				Window:   period, CPUDuration: tt.duration,
				CPUOffset: func(max time.Duration) time.Duration {
					offsetMax = append(offsetMax, max)
					return tt.offset
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			c.Start(t0)
			for win := range 3 {
				start := t0.Add(time.Duration(win) * period)
				end := start.Add(period)
				wantFrom := start.Add(min(tt.offset, period-tt.duration))
				wantTo := wantFrom.Add(tt.duration)
				if !tt.continuous {
					// Called early, Change does nothing.
					c.Change(start)
					if wantFrom.After(start) && cpu.w != nil {
						t.Fatalf("window %d: the CPU profile records before its offset", win)
					}
					for range 2 { // start, stop
						at, ok := c.NextChange()
						if !ok {
							break
						}
						c.Change(at)
					}
					if cpu.w != nil {
						t.Fatalf("window %d: the CPU profile still records after its duration", win)
					}
				} else if _, ok := c.NextChange(); ok {
					t.Fatalf("window %d: a continuous CPU profile plans a change", win)
				}
				w := c.Collect(end)
				for _, p := range w.Profiles {
					from, to := p.Span(w)
					if p.Name == CPU && !tt.continuous {
						if !from.Equal(wantFrom) || !to.Equal(wantTo) || to.Sub(from) != tt.duration {
							t.Errorf("window %d: CPU profile covers %v–%v, want %v–%v (%v)", win, from, to, wantFrom, wantTo, tt.duration)
						}
						continue
					}
					if !from.Equal(start) || !to.Equal(end) {
						t.Errorf("window %d: %s profile covers %v–%v, want the window %v–%v", win, p.Name, from, to, start, end)
					}
				}
				if len(w.Profiles) != 2 {
					t.Errorf("window %d: %d profiles, want cpu and goroutine", win, len(w.Profiles))
				}
			}
			c.Stop(t0.Add(3*period + time.Second))
			if want := 4; cpu.starts != want || cpu.stops != want {
				// Three windows and the start of the last, partial one
				// (the continuous cases, or offset 0, start it at once).
				if tt.continuous || tt.offset == 0 {
					t.Errorf("%d starts, %d stops, want %d each", cpu.starts, cpu.stops, want)
				} else if cpu.starts != 3 || cpu.stops != 3 {
					t.Errorf("%d starts, %d stops, want 3 each: the last window ends before its offset", cpu.starts, cpu.stops)
				}
			}
			if !tt.continuous {
				for _, m := range offsetMax {
					if m != period-tt.duration {
						t.Errorf("offset drawn from [0, %v], want [0, %v]", m, period-tt.duration)
					}
				}
			}
		})
	}
}

// TestCPUDutyCycleWindowEndsFirst ends windows before the CPU profile was
// due to start or to stop: a window that ends before the offset has no
// CPU profile (nothing was recorded, and nothing was skipped), and one
// that ends while it records is stopped at the window's end.
func TestCPUDutyCycleWindowEndsFirst(t *testing.T) {
	cpu := &recordingCPU{data: snapshot(t, Goroutine)}
	stats := new(Omissions)
	c, err := New(Config{
		Profiles: []string{CPU}, CPU: CPUProfiler{Start: cpu.start, Stop: cpu.stop},
		Window: 10 * time.Second, CPUDuration: 4 * time.Second,
		CPUOffset: func(time.Duration) time.Duration { return 5 * time.Second },
		Omissions: stats,
	})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	c.Start(t0)
	if w := c.Collect(t0.Add(time.Second)); len(w.Profiles) != 0 || cpu.starts != 0 {
		t.Errorf("a window that ended before the offset: %d profiles, %d starts; want none", len(w.Profiles), cpu.starts)
	}
	start := t0.Add(time.Second)
	at, _ := c.NextChange()
	if want := start.Add(5 * time.Second); !at.Equal(want) {
		t.Fatalf("next change at %v, want %v (offset from the new window's start)", at, want)
	}
	c.Change(at)
	end := at.Add(time.Second) // before the planned stop
	w := c.Collect(end)
	if len(w.Profiles) != 1 {
		t.Fatalf("%d profiles, want the CPU profile", len(w.Profiles))
	}
	if from, to := w.Profiles[0].Span(w); !from.Equal(at) || !to.Equal(end) {
		t.Errorf("CPU profile covers %v–%v, want %v–%v", from, to, at, end)
	}
	if cpu.w != nil || stats.CPUProfilesSkipped.Load() != 0 {
		t.Errorf("recording after the window: %v; skipped %d, want 0", cpu.w != nil, stats.CPUProfilesSkipped.Load())
	}
}
