// Command offcpustress measures what the off-CPU profile costs an
// application at two extremes, side by side in one process: phases
// without the profile and with it alternate, in rotated order, round after
// round, so that every ratio is taken within a round on a shared machine.
//
// Mode chan runs pairs of goroutines that hand a token back and forth
// over unbuffered channels (about 3 million channel operations a second on
// two cores) and times every operation: the operations a second, the
// 99.9th percentile and the longest, and when in the phase the longest
// fell. Besides "off" and "offcpu" (the off-CPU recorder, Collect at the
// phase's end), "tracer" runs the execution tracer alone on the same duty
// cycle, trace.Start to a writer that keeps nothing, and logs how long
// each trace.Start and trace.Stop took: the part of a stall that is the
// runtime's, not the recorder's parse.
//
// Mode stw starts and stops the execution tracer, and runs a garbage
// collection, rounds times each, alternately, under the ping-pong load,
// and prints the distribution of the stop-the-world pauses of each from
// the runtime's histograms: the pause a trace start makes, against the
// two a collection makes, under the same load.
//
// Mode apptracer is an application that, in one goroutine, starts its
// own flight recorder, snapshots it and stops it, and in another runs
// trace.Start for 10 ms, again and again: the calls that failed, with the
// profile and without.
//
// Mode goroutines parks n goroutines for good, keeps a few more waking
// up, and reports the most heap the process held, the most the collector
// found live, and the most resident memory, sampled every millisecond,
// with and without the profile.
//
//	go run ./cmd/offcpustress -mode chan -rounds 3 -phase 10s -duty 100
//	go run ./cmd/offcpustress -mode stw -rounds 200
//	go run ./cmd/offcpustress -mode apptracer -rounds 3 -phase 10s
//	go run ./cmd/offcpustress -mode goroutines -n 100000,300000 -phase 10s
package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"log"
	"math/bits"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pprofotel/profiler/internal/collect/offcpu"
)

var (
	window        time.Duration
	spin          int
	maxGoroutines int
)

func main() {
	mode := flag.String("mode", "chan", "chan, stw, apptracer or goroutines")
	rounds := flag.Int("rounds", 3, "rounds of phases")
	phase := flag.Duration("phase", 10*time.Second, "length of a phase")
	duty := flag.Int("duty", 10, "off-CPU duty cycle, percent")
	pairs := flag.Int("pairs", 2, "chan: ping-pong pairs")
	configs := flag.String("configs", "off,offcpu,tracer", "chan: phases of a round, in order (rotated each round)")
	ns := flag.String("n", "100000,300000", "goroutines: parked goroutines, one run each")
	flag.DurationVar(&window, "window", time.Second, "offcpu: window length (Collect every window)")
	flag.IntVar(&maxGoroutines, "maxgoroutines", 0, "offcpu: Config.MaxGoroutines (0: the default, -1: no limit)")
	flag.IntVar(&spin, "spin", 0, "chan: iterations of busy work between two channel operations")
	flag.Parse()
	defer offcpu.SetDutyCycle(*duty)()
	fmt.Printf("go %s, GOMAXPROCS %d, duty %d %%, phase %v\n", runtime.Version(), runtime.GOMAXPROCS(0), *duty, *phase)
	switch *mode {
	case "chan":
		runChan(*rounds, *phase, *pairs, *duty, strings.Split(*configs, ","))
	case "stw":
		runSTW(*rounds, *pairs)
	case "apptracer":
		runAppTracer(*rounds, *phase, *duty)
	case "goroutines":
		for _, s := range strings.Split(*ns, ",") {
			n, err := strconv.Atoi(s)
			if err != nil {
				log.Fatal(err)
			}
			runGoroutines(n, *rounds, *phase)
		}
	default:
		log.Fatalf("unknown mode %q", *mode)
	}
}

// profiled runs one phase's configuration around run: nothing, the
// off-CPU recorder, or the tracer alone on the recorder's duty cycle.
func profiled(config string, length time.Duration, duty int, run func()) {
	switch config {
	case "off":
		run()
	case "offcpu":
		var stats offcpu.Stats
		r := offcpu.Start(time.Now(), offcpu.Config{Stats: &stats, MaxTracedGoroutines: maxGoroutines})
		done := make(chan struct{})
		var wg sync.WaitGroup
		waits, windows := 0, 0
		count := func(last bool) {
			p, err := r.Collect(time.Now(), last)
			if err != nil {
				log.Fatal(err)
			}
			for _, s := range p.Samples {
				waits += len(s.Events)
			}
			windows++
		}
		wg.Go(func() {
			t := time.NewTicker(window)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					count(false)
				case <-done:
					count(true)
					return
				}
			}
		})
		run()
		close(done)
		wg.Wait()
		fmt.Printf("    offcpu: %d windows, %d waits, %d stretches skipped, %d cut\n", windows, waits, stats.Skipped.Load(), stats.Truncated.Load())
	case "tracer":
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { traceCycles(length, duty, done) })
		run()
		close(done)
		wg.Wait()
	default:
		log.Fatalf("unknown config %q", config)
	}
}

// traceCycles runs the execution tracer for duty percent of every cycle
// (the window, at most 10 s, as the recorder's), with a writer that keeps
// nothing, until done, and prints how long its starts and stops took.
func traceCycles(length time.Duration, duty int, done <-chan struct{}) {
	cycle := min(window, length, 10*time.Second)
	on := max(cycle*time.Duration(duty)/100, 10*time.Millisecond)
	var starts, stops []time.Duration
	var at []string
	begin := time.Now()
	for {
		t0 := time.Now()
		at = append(at, fmt.Sprintf("start %v", t0.Sub(begin).Round(time.Millisecond)))
		if err := trace.Start(io.Discard); err != nil {
			log.Fatal(err)
		}
		starts = append(starts, time.Since(t0))
		stopped := false
		select {
		case <-time.After(on):
		case <-done:
			stopped = true
		}
		t1 := time.Now()
		at = append(at, fmt.Sprintf("stop %v", t1.Sub(begin).Round(time.Millisecond)))
		trace.Stop()
		stops = append(stops, time.Since(t1))
		if stopped {
			break
		}
		select {
		case <-time.After(cycle - on):
		case <-done:
			stopped = true
		}
		if stopped {
			break
		}
	}
	fmt.Printf("    tracer: trace.Start took %v, trace.Stop %v; %s\n", starts, stops, strings.Join(at, ", "))
}

// histogram counts durations in buckets of 1/16 of a power of two.
type histogram struct {
	counts [64 * 16]uint64
	n      uint64
	max    time.Duration
	maxAt  time.Duration // since the phase began
	// long are the operations of 10 ms or more: when they began and
	// how long they took.
	long [][2]time.Duration
}

func bucket(d time.Duration) int {
	if d < 16 {
		return int(max(d, 0))
	}
	e := bits.Len64(uint64(d)) - 1 // 2^e <= d
	return e*16 + int(uint64(d)>>(e-4)&15)
}

func bucketFloor(b int) time.Duration {
	if b < 16 {
		return time.Duration(b)
	}
	e, m := b/16, b%16
	return time.Duration(uint64(16+m) << (e - 4))
}

func (h *histogram) add(d, at time.Duration) {
	h.counts[bucket(d)]++
	h.n++
	if d >= 10*time.Millisecond {
		h.long = append(h.long, [2]time.Duration{at, d})
	}
	if d > h.max {
		h.max, h.maxAt = d, at
	}
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.long = append(h.long, o.long...)
	if o.max > h.max {
		h.max, h.maxAt = o.max, o.maxAt
	}
}

// quantile returns the lower bound of the bucket holding quantile q.
func (h *histogram) quantile(q float64) time.Duration {
	want := uint64(q * float64(h.n))
	var seen uint64
	for b, c := range h.counts {
		seen += c
		if seen > want {
			return bucketFloor(b)
		}
	}
	return h.max
}

func runChan(rounds int, length time.Duration, pairs, duty int, configs []string) {
	type row struct{ opsPerSec, p999, max []float64 }
	results := map[string]*row{}
	for r := range rounds {
		order := append(configs[r%len(configs):], configs[:r%len(configs)]...)
		for _, config := range order {
			var h histogram
			before := schedMetrics()
			profiled(config, length, duty, func() {
				h = pingPong(pairs, length)
			})
			after := schedMetrics()
			ops := float64(h.n) / length.Seconds()
			fmt.Printf("round %d %-7s %5.2f M ops/s  p99 %8v  p999 %8v  max %10v at %v\n", r+1, config, ops/1e6,
				h.quantile(0.99), h.quantile(0.999), h.max, h.maxAt.Round(time.Millisecond))
			if len(h.long) > 0 {
				slices.SortFunc(h.long, func(a, b [2]time.Duration) int { return int(a[0] - b[0]) })
				var l []string
				for _, o := range h.long {
					l = append(l, fmt.Sprintf("%v at %v", o[1].Round(time.Millisecond), o[0].Round(time.Millisecond)))
				}
				fmt.Printf("    operations of 10 ms or more: %s\n", strings.Join(l, ", "))
			}
			fmt.Printf("    longest, by runtime/metrics: stop-the-world for the tracer and others %v (stopping %v; %d pauses), for GC %v (%d pauses); runnable before running %v\n",
				longest(before[0], after[0]), longest(before[1], after[1]), diff(before[0], after[0]).n,
				longest(before[2], after[2]), diff(before[2], after[2]).n, longest(before[3], after[3]))
			if results[config] == nil {
				results[config] = new(row)
			}
			res := results[config]
			res.opsPerSec = append(res.opsPerSec, ops)
			res.p999 = append(res.p999, float64(h.quantile(0.999)))
			res.max = append(res.max, float64(h.max))
		}
	}
	fmt.Println("median over rounds (ratio to off, per round):")
	off := results["off"]
	for _, config := range configs {
		res := results[config]
		ratio := func(v, ref []float64) string {
			if ref == nil {
				return ""
			}
			var s []string
			for i := range v {
				s = append(s, fmt.Sprintf("%.2f", v[i]/ref[i]))
			}
			return "(× off: " + strings.Join(s, ", ") + ")"
		}
		fmt.Printf("  %-7s ops/s %.2f M %s; p999 %v %s; max %v %s\n", config,
			median(res.opsPerSec)/1e6, ratio(res.opsPerSec, off.opsPerSec),
			time.Duration(median(res.p999)), ratio(res.p999, off.p999),
			time.Duration(median(res.max)), ratio(res.max, off.max))
	}
}

// schedMetricNames are the runtime's histograms of pauses and of
// scheduling latency, read before and after each phase.
var schedMetricNames = []string{
	"/sched/pauses/total/other:seconds",
	"/sched/pauses/stopping/other:seconds",
	"/sched/pauses/total/gc:seconds",
	"/sched/latencies:seconds",
}

func schedMetrics() []*metrics.Float64Histogram {
	s := make([]metrics.Sample, len(schedMetricNames))
	for i, n := range schedMetricNames {
		s[i].Name = n
	}
	metrics.Read(s)
	out := make([]*metrics.Float64Histogram, len(s))
	for i := range s {
		out[i] = s[i].Value.Float64Histogram()
	}
	return out
}

// longest returns the upper bound of the highest bucket that gained a
// count between two readings of a histogram.
func longest(before, after *metrics.Float64Histogram) time.Duration {
	for i := len(after.Counts) - 1; i >= 0; i-- {
		if after.Counts[i] > before.Counts[i] {
			hi := after.Buckets[i+1]
			if hi > 1e9 {
				hi = after.Buckets[i]
			}
			return time.Duration(hi * 1e9).Round(time.Microsecond)
		}
	}
	return 0
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// pingPong runs pairs of goroutines handing a token back and forth for d,
// timing every channel operation, and returns the merged histogram.
func pingPong(pairs int, d time.Duration) histogram {
	var stop atomic.Bool
	hs := make([]histogram, 2*pairs)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range pairs {
		a, b := make(chan int), make(chan int)
		// op times one channel operation.
		op := func(h *histogram, f func()) {
			for range spin {
				work.Add(1)
			}
			t0 := time.Since(start)
			f()
			h.add(time.Since(start)-t0, t0)
		}
		wg.Go(func() {
			h := &hs[2*i]
			for !stop.Load() {
				op(h, func() { a <- 1 })
				op(h, func() { <-b })
			}
			close(a)
		})
		wg.Go(func() {
			h := &hs[2*i+1]
			for {
				ok := true
				op(h, func() { _, ok = <-a })
				if !ok {
					return
				}
				op(h, func() { b <- 1 })
			}
		})
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	var h histogram
	for i := range hs {
		h.merge(&hs[i])
	}
	return h
}

func runSTW(rounds, pairs int) {
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			pingPong(pairs, 100*time.Millisecond)
		}
	})
	time.Sleep(100 * time.Millisecond)
	before := schedMetrics()
	var startWall, stopWall []float64
	for range rounds {
		t0 := time.Now()
		if err := trace.Start(io.Discard); err != nil {
			log.Fatal(err)
		}
		t1 := time.Now()
		time.Sleep(5 * time.Millisecond)
		t2 := time.Now()
		trace.Stop()
		startWall = append(startWall, float64(t1.Sub(t0)))
		stopWall = append(stopWall, float64(time.Since(t2)))
		time.Sleep(5 * time.Millisecond)
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	after := schedMetrics()
	stop.Store(true)
	wg.Wait()
	q := func(v []float64, p float64) time.Duration {
		s := slices.Clone(v)
		slices.Sort(s)
		return time.Duration(s[int(p*float64(len(s)-1))]).Round(time.Microsecond)
	}
	fmt.Printf("%d trace starts and stops, %d forced collections, under %d ping-pong pair(s):\n", rounds, rounds, pairs)
	fmt.Printf("  trace.Start wall time p50 %v p90 %v max %v; trace.Stop p50 %v p90 %v max %v\n",
		q(startWall, 0.5), q(startWall, 0.9), q(startWall, 1), q(stopWall, 0.5), q(stopWall, 0.9), q(stopWall, 1))
	for i, name := range []string{"stop-the-world, not GC (the tracer's)", "of which stopping", "stop-the-world, GC"} {
		h := diff(before[i], after[i])
		fmt.Printf("  %s: %d pauses, p50 %v, p90 %v, p99 %v, max %v\n", name, h.n,
			h.quantile(0.5), h.quantile(0.9), h.quantile(0.99), h.quantile(1))
	}
}

// bucketCounts is the difference of two readings of a runtime histogram.
type bucketCounts struct {
	buckets []float64
	counts  []uint64
	n       uint64
}

func diff(before, after *metrics.Float64Histogram) bucketCounts {
	d := bucketCounts{buckets: after.Buckets}
	for i := range after.Counts {
		c := after.Counts[i] - before.Counts[i]
		d.counts = append(d.counts, c)
		d.n += c
	}
	return d
}

// quantile returns the upper bound of the bucket holding quantile q.
func (d bucketCounts) quantile(q float64) time.Duration {
	if d.n == 0 {
		return 0
	}
	want := uint64(q * float64(d.n-1))
	var seen uint64
	for i, c := range d.counts {
		seen += c
		if c > 0 && seen > want {
			hi := d.buckets[i+1]
			if hi > 1e9 {
				hi = d.buckets[i]
			}
			return time.Duration(hi * 1e9).Round(time.Microsecond)
		}
	}
	return 0
}

func runAppTracer(rounds int, length time.Duration, duty int) {
	for r := range rounds {
		order := []string{"off", "offcpu"}
		if r%2 == 1 {
			order = []string{"offcpu", "off"}
		}
		for _, config := range order {
			var frCalls, frFailed, tsCalls, tsFailed int
			var firstErr error
			profiled(config, length, duty, func() {
				var wg sync.WaitGroup
				end := time.Now().Add(length)
				wg.Go(func() {
					for time.Now().Before(end) {
						fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MaxBytes: 1 << 20})
						frCalls++
						if err := fr.Start(); err != nil {
							frFailed++
							firstErr = cmp.Or(firstErr, err)
							time.Sleep(10 * time.Millisecond)
							continue
						}
						time.Sleep(5 * time.Millisecond)
						frCalls++
						if _, err := fr.WriteTo(io.Discard); err != nil {
							frFailed++
						}
						fr.Stop()
						time.Sleep(5 * time.Millisecond)
					}
				})
				wg.Go(func() {
					for time.Now().Before(end) {
						tsCalls++
						if err := trace.Start(io.Discard); err != nil {
							tsFailed++
						} else {
							time.Sleep(10 * time.Millisecond)
							trace.Stop()
						}
						time.Sleep(90 * time.Millisecond)
					}
				})
				wg.Wait()
			})
			fmt.Printf("round %d %-6s flight recorder: %d of %d calls failed (%v); trace.Start: %d of %d failed (%.1f %%)\n",
				r+1, config, frFailed, frCalls, firstErr, tsFailed, tsCalls, 100*float64(tsFailed)/float64(tsCalls))
		}
	}
}

// work is what the busy work between two channel operations adds to.
var work atomic.Int64

// runGoroutines parks n goroutines, keeps a few waking up, and prints
// the peak heap and resident memory in phases without and with the
// off-CPU profile, above the idle level measured before the first phase.
func runGoroutines(n, rounds int, length time.Duration) {
	block := make(chan struct{})
	var started sync.WaitGroup
	for range n {
		started.Add(1)
		go parked(block, &started, 3)
	}
	started.Wait()
	done := make(chan struct{})
	for range 8 {
		go func() {
			t := time.NewTicker(time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-t.C:
				case <-done:
					return
				}
			}
		}()
	}
	runtime.GC()
	runtime.GC()
	idleHeap, idleLive := heapBytes()
	idleRSS := rss()
	fmt.Printf("%d goroutines parked (%d in all): idle heap %.1f MiB, live %.1f MiB, RSS %.0f MB\n",
		n, runtime.NumGoroutine(), mib(idleHeap), mib(idleLive), float64(idleRSS)/1e6)
	for r := range rounds {
		order := []string{"off", "offcpu"}
		if r%2 == 1 {
			order = []string{"offcpu", "off"}
		}
		for _, config := range order {
			runtime.GC()
			var peakHeap, peakLive, peakRSS uint64
			profiled(config, length, 100, func() {
				for end := time.Now().Add(length); time.Now().Before(end); {
					h, l := heapBytes()
					peakHeap, peakLive = max(peakHeap, h), max(peakLive, l)
					peakRSS = max(peakRSS, rss())
					time.Sleep(time.Millisecond)
				}
			})
			if path := os.Getenv("OFFCPUSTRESS_HEAP_PROFILE"); path != "" && config == "offcpu" {
				// Where the phase's bytes were allocated (alloc_space),
				// as of a collection that follows them.
				runtime.GC()
				f, err := os.Create(fmt.Sprintf("%s.%d.%d", path, n, r+1))
				if err != nil {
					log.Fatal(err)
				}
				if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
					log.Fatal(err)
				}
				f.Close()
			}
			fmt.Printf("  round %d %-6s peak heap +%.1f MiB, peak live +%.1f MiB, peak RSS +%.0f MB\n", r+1, config,
				mib(peakHeap-min(peakHeap, idleHeap)), mib(peakLive-min(peakLive, idleLive)), float64(peakRSS-min(peakRSS, idleRSS))/1e6)
		}
	}
	close(done)
	close(block)
	runtime.GC()
}

// parked blocks on block under depth frames of its own.
func parked(block chan struct{}, started *sync.WaitGroup, depth int) {
	if depth > 0 {
		parked(block, started, depth-1)
		return
	}
	started.Done()
	<-block
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// heapBytes returns the heap's objects, unswept garbage included, and
// the live heap as the last collection marked it.
func heapBytes() (objects, live uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// rss returns the resident set size, in bytes.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}
