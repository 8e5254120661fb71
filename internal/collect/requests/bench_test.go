package requests

import (
	"math/rand/v2"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkTracker is the tracker's whole cost per request as a busy
// service gives it: Begin, a route set, End, a sweep every 1,000 requests
// and a window every 90,000 (9,000 requests a second, 10 s windows, as
// the overhead service), on one goroutine, so that the time per op is
// CPU time. Two routes alternate.
func BenchmarkTracker(b *testing.B) {
	tr, request := benchRequests(b)
	i := 0
	for b.Loop() {
		i++
		request(i)
		if i%1000 == 0 {
			tr.Sweep(benchStart)
		}
		if i%90000 == 0 {
			tr.Window(benchStart)
		}
	}
	reportCPU(b)
}

// BenchmarkTrackerParallel is BenchmarkTracker on every P at once, as a
// service's handlers run: what Begin's shared state costs when every core
// touches it. Each goroutine sweeps after every 1,000 of its requests and
// the one that completes the 90,000th of a window ends it. The requests
// are counted across goroutines only at the sweeps: a counter that every
// op adds to would be a cache line that every request shares, the
// benchmark's own, which is what the benchmark looks for in the tracker.
func BenchmarkTrackerParallel(b *testing.B) {
	tr, request := benchRequests(b)
	var goroutines, thousands atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		// Each goroutine starts at a place of its own among the ids.
		i := int(goroutines.Add(1)) * 7919
		mine := 0
		for pb.Next() {
			i++
			mine++
			request(i)
			if mine%1000 != 0 {
				continue
			}
			tr.Sweep(benchStart)
			if thousands.Add(1)%90 == 0 {
				tr.Window(benchStart)
			}
		}
	})
	reportCPU(b)
}

// BenchmarkTrackerParallelFloor is BenchmarkTrackerParallel's op
// without a Tracker: a Request made, routed and ended, each goroutine
// keeping its last 1,000. What it costs more at -cpu 16 than at -cpu 1 is
// the machine's, not the Tracker's: more goroutines than cores, each
// allocating, with the garbage collector's workers among them.
func BenchmarkTrackerParallelFloor(b *testing.B) {
	id := ids(1)
	b.ReportAllocs()
	cpuStart = processCPU(b)
	b.RunParallel(func(pb *testing.PB) {
		kept := make([]*Request, 0, 1000)
		for pb.Next() {
			if len(kept) == cap(kept) {
				kept = kept[:0]
			}
			r := &Request{ids: id, name: "GET", start: benchStart}
			r.SetHTTPRoute("/work")
			r.Labelled()
			r.End(benchStart)
			kept = append(kept, r)
		}
	})
	reportCPU(b)
}

// cpuStart is the process's CPU time when the benchmark's timer started.
var cpuStart time.Duration

// processCPU returns the CPU time the process used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process's CPU time per op since the timer
// started, the sweeper's and the garbage collector's included: with more
// goroutines than cores, ns/op is wall time, and this the cost.
func reportCPU(b *testing.B) {
	b.ReportMetric(float64(processCPU(b)-cpuStart)/float64(b.N), "cpu-ns/op")
}

// benchStart is when the benchmarks' requests start and end.
var benchStart = time.Now()

// benchRequests installs a Tracker for b and returns it, and what a
// benchmark's op does to it: the request numbered i.
func benchRequests(b *testing.B) (*Tracker, func(i int)) {
	tr := New(Config{})
	if err := tr.Install(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if q := tr.Window(time.Now()); q.Dropped != 0 {
			b.Errorf("%d requests dropped", q.Dropped)
		}
		tr.Stop()
	})
	const n = 1 << 17
	all := make([]string, n)
	for i := range all {
		all[i] = ids(i + 1)
	}
	routes := [2]string{"/work", "/lock"}
	b.ReportAllocs()
	b.ResetTimer()
	cpuStart = processCPU(b)
	return tr, func(i int) {
		// As the label wrapper does for a span given its route at Start,
		// or by a middleware on the goroutine that carries its labels:
		// the labels carry the route.
		r := Begin(all[i%n], "GET", "", benchStart)
		r.SetHTTPRoute(routes[i%2])
		r.Labelled()
		r.End(benchStart)
	}
}

// BenchmarkSortRoots sorts a full window's roots, DefaultMaxRoots of
// them with random span ids, as Window does at a window's end.
func BenchmarkSortRoots(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	ids := make([]uint64, DefaultMaxRoots)
	for i := range ids {
		ids[i] = rng.Uint64()
	}
	rs := roots{ids: make([]uint64, len(ids)), routes: make([]uint16, len(ids))}
	for b.Loop() {
		copy(rs.ids, ids)
		rs.sort()
	}
}
