package offcpu

import (
	"bytes"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"runtime/trace"
	"testing"
	"time"
)

// pingPong runs pairs of goroutines that hand a token back and forth as
// fast as they can: the densest stream of waits and trace events an
// application makes. It returns what stops them.
func pingPong(pairs int) (stop func()) {
	done := make(chan struct{})
	for range pairs {
		a, b := make(chan struct{}), make(chan struct{})
		go func() {
			for {
				select {
				case a <- struct{}{}:
				case <-done:
					return
				}
				select {
				case <-b:
				case <-done:
					return
				}
			}
		}()
		go func() {
			for {
				select {
				case <-a:
				case <-done:
					return
				}
				select {
				case b <- struct{}{}:
				case <-done:
					return
				}
			}
		}()
	}
	return func() { close(done) }
}

// TestStretchLength checks the duty cycle and the memory bound: a
// stretch is the duty's share of the cycle, shortened so that the trace
// fits maxBytes at the rate measured, the first one to a second; the rest
// keeps the duty cycle.
func TestStretchLength(t *testing.T) {
	const MiB = 1 << 20
	for _, tt := range []struct {
		name             string
		cycle            time.Duration
		duty             int
		rate             float64
		wantLen, wantRes time.Duration
	}{
		{"default, rate low", 10 * time.Second, 10, 100_000, time.Second, 9 * time.Second},
		{"first stretch", 10 * time.Second, 10, 0, time.Second, 9 * time.Second},
		{"first stretch, always: the cycle, the sink's budget ends it early", 10 * time.Second, 100, 0, 10 * time.Second, 0},
		{"always, rate low", 10 * time.Second, 100, 100_000, 10 * time.Second, 0},
		{"rate over the bound", 10 * time.Second, 10, 32 * MiB, 250 * time.Millisecond, 2250 * time.Millisecond},
		{"always, rate over the bound", 10 * time.Second, 100, 16 * MiB, 500 * time.Millisecond, 0},
		{"rate far over the bound", 10 * time.Second, 50, 8 * 1024 * MiB, 10 * time.Millisecond, 10 * time.Millisecond},
		{"short window", 2 * time.Second, 25, 100_000, 500 * time.Millisecond, 1500 * time.Millisecond},
	} {
		l, r := stretchLength(tt.cycle, tt.duty, 8*MiB, tt.rate)
		if l != tt.wantLen || r != tt.wantRes {
			t.Errorf("%s: stretch %v, rest %v; want %v, %v", tt.name, l, r, tt.wantLen, tt.wantRes)
		}
	}
}

func TestJitter(t *testing.T) {
	for _, tt := range []struct {
		mean time.Duration
		u    float64
		want time.Duration
	}{
		{9 * time.Second, 0, 4500 * time.Millisecond},
		{9 * time.Second, 0.5, 9 * time.Second},
		{9 * time.Second, 0.75, 11250 * time.Millisecond},
		{0, 0.5, 0}, // at 100 %, no rest
	} {
		if got := jitter(tt.mean, tt.u); got != tt.want {
			t.Errorf("jitter(%v, %v) = %v, want %v", tt.mean, tt.u, got, tt.want)
		}
	}
	// The duty cycle holds on average: 10,000 draws put the mean rest
	// within 2 % of the mean asked for (7 standard deviations).
	var sum time.Duration
	const n = 10_000
	for range n {
		sum += jitter(9*time.Second, rand.Float64())
	}
	if avg := sum / n; avg < 8820*time.Millisecond || avg > 9180*time.Millisecond {
		t.Errorf("mean rest %v over %d draws, want 9s within 2 %%", avg, n)
	}
}

// BenchmarkStretch traces a second of a ping-pong workload, with no
// bounds, and reports the rate at which the runtime wrote the trace in
// the stretch, the bytes and waits read per second traced, the most
// read in one stretch, and (ns/op) the wall time until the window was
// read, parse included.
func BenchmarkStretch(b *testing.B) {
	for _, pairs := range []int{1, 4} {
		b.Run(map[int]string{1: "pairs=1", 4: "pairs=4"}[pairs], func(b *testing.B) {
			defer SetDutyCycle(100)()
			stop := pingPong(pairs)
			defer stop()
			var rate, readBytes, waits, secs float64
			var peak int
			for b.Loop() {
				start := time.Now()
				r := Start(start, Config{MaxTraceBytes: 1 << 30, MaxWaits: 1 << 30})
				time.Sleep(time.Second)
				p, err := r.Collect(time.Now(), true)
				if err != nil {
					b.Fatal(err)
				}
				secs += r.windows[0].traced.Seconds() + r.windows[1].traced.Seconds()
				// The runtime's rate, from all it wrote in the stretch;
				// what was read is less when a generation was dropped.
				rate += r.rate
				readBytes += float64(r.readTotal)
				for _, s := range p.Samples {
					waits += float64(len(s.Events))
				}
				peak = max(peak, r.maxRead)
			}
			runtime.KeepAlive(peak)
			b.ReportMetric(rate/float64(b.N), "trace-B/s")
			b.ReportMetric(readBytes/secs, "read-B/s")
			b.ReportMetric(waits/secs, "waits/s")
			b.ReportMetric(float64(peak), "read-B-peak")
		})
	}
}

// BenchmarkParse reads, again and again, a trace recorded once in memory
// from a ping-pong pair (300 ms, in a flight recorder): the
// parser's speed alone, in trace bytes per second, and the bytes it
// allocates per trace byte. Nothing else runs while it reads, unlike in
// BenchmarkStretch, where the pair holds the processors.
func BenchmarkParse(b *testing.B) {
	data, start := recordPingPong(b, 300*time.Millisecond)
	w := newWindow(math.MaxInt, SampleType)
	var waits int
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		w.reset()
		rd := w.newReading(start)
		if err := rd.read(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
		rd.finish()
		waits = len(w.events)
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(len(data)), "alloc-B/trace-B")
	b.ReportMetric(float64(waits), "waits/op")
}

// recordPingPong returns what the flight recorder holds after d of one
// ping-pong pair, and when it started.
func recordPingPong(b *testing.B, d time.Duration) ([]byte, time.Time) {
	b.Helper()
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: time.Minute, MaxBytes: 1 << 30})
	start := time.Now()
	if err := fr.Start(); err != nil {
		b.Fatal(err)
	}
	stop := pingPong(1)
	time.Sleep(d)
	var buf bytes.Buffer
	_, err := fr.WriteTo(&buf)
	stop()
	fr.Stop()
	if err != nil {
		b.Fatal(err)
	}
	return buf.Bytes(), start
}

// BenchmarkBurst starts the densest wait stream there is (pingPong) on a
// recorder that has just measured an idle process, at a 100 % duty cycle
// and the default bounds, and reports the most heap the process held
// above its idle level while the burst ran (sampled every millisecond),
// and the most the collector found live, the bytes read in the largest
// stretch against the budget, and the stretches cut.
func BenchmarkBurst(b *testing.B) {
	defer SetDutyCycle(100)()
	for b.Loop() {
		runtime.GC()
		base, _ := heapBytes()
		var stats Stats
		r := Start(time.Now(), Config{Stats: &stats})
		time.Sleep(300 * time.Millisecond) // an idle first stretch
		stop := pingPong(2)
		var peak, live uint64
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
			h, l := heapBytes()
			peak, live = max(peak, h), max(live, l)
			time.Sleep(time.Millisecond)
		}
		stop()
		if _, err := r.Collect(time.Now(), true); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(peak-min(peak, base))/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(live-min(live, base))/(1<<20), "peak-live-MiB")
		b.ReportMetric(float64(r.maxRead)/(1<<20), "max-stretch-read-MiB")
		b.ReportMetric(float64(stats.Truncated.Load()), "cut-stretches")
	}
}

// heapBytes returns the heap's objects, garbage not yet swept included,
// and the live heap as the last collection marked it.
func heapBytes() (objects, live uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}
