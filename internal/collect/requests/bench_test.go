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
	request := benchRequests(b)
	i := 0
	for b.Loop() {
		i++
		request(i, i)
	}
	reportCPU(b)
}

// BenchmarkTrackerParallel is BenchmarkTracker on every P at once, as a
// service's handlers run: what Begin's shared state costs when every core
// touches it. Each goroutine sweeps after every 1,000 of its requests and
// the one that completes the 90,000th of a window ends it.
func BenchmarkTrackerParallel(b *testing.B) {
	request := benchRequests(b)
	var count atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		mine := 0
		for pb.Next() {
			mine++
			request(int(count.Add(1)), mine)
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

// benchRequests installs a Tracker for b and returns what a benchmark's
// op does: the request numbered i in the run, the goroutine's mine-th.
func benchRequests(b *testing.B) func(i, mine int) {
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
	start := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	cpuStart = processCPU(b)
	return func(i, mine int) {
		// As the label wrapper does for a span given its route at Start,
		// or by a middleware on the goroutine that carries its labels:
		// the labels carry the route.
		r := Begin(all[i%n], "GET", "", start)
		r.SetHTTPRoute(routes[i%2])
		r.Labelled()
		r.End(start)
		if mine%1000 == 0 {
			tr.sweepNow(start)
		}
		if i%90000 == 0 {
			tr.Window(start)
		}
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
