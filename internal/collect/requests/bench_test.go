package requests

import (
	"testing"
	"time"
)

// BenchmarkTracker is the tracker's whole cost per request as a busy
// service gives it: Begin, a route set, End, a sweep every 1,000 requests
// and a window every 90,000 (9,000 requests a second, 10 s windows, as
// the overhead service), on one goroutine, so that the time per op is
// CPU time. Two routes alternate.
func BenchmarkTracker(b *testing.B) {
	tr := New(Config{})
	if err := tr.Install(); err != nil {
		b.Fatal(err)
	}
	defer tr.Stop()
	const n = 1 << 17
	all := make([]string, n)
	for i := range all {
		all[i] = ids(i + 1)
	}
	routes := [2]string{"/work", "/lock"}
	start := time.Now()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r := Begin(all[i%n], "GET", start)
		r.SetRoute(routes[i%2])
		r.End(start)
		i++
		if i%1000 == 0 {
			tr.sweepNow(start)
		}
		if i%90000 == 0 {
			tr.Window(start)
		}
	}
}

// BenchmarkTrackerParallel begins and ends requests on every P at once,
// as a service's handlers do, its own sweeper sweeping them: what Begin's
// shared state costs when every core touches it.
func BenchmarkTrackerParallel(b *testing.B) {
	// Room for every request of the run, so that none is dropped for
	// want of a sweep.
	tr := New(Config{MaxRequests: 1 << 23})
	if err := tr.Install(); err != nil {
		b.Fatal(err)
	}
	defer tr.Stop()
	id := ids(1)
	start := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r := Begin(id, "GET", start)
			r.SetRoute("/work")
			r.End(start)
		}
	})
	b.StopTimer()
	if q := tr.Window(start); q.Dropped != 0 {
		b.Fatalf("%d requests dropped", q.Dropped)
	}
}
