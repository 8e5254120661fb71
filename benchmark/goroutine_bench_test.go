package benchmark

import (
	"fmt"
	"io"
	"runtime/pprof"
	"slices"
	"sync"
	"testing"
	"time"
)

// parkGoroutines starts n goroutines blocked on a channel and returns the
// function that releases them.
func parkGoroutines(n int) (release func()) {
	stop := make(chan struct{})
	var started, done sync.WaitGroup
	started.Add(n)
	done.Add(n)
	for range n {
		go func() {
			defer done.Done()
			started.Done()
			<-stop
		}()
	}
	started.Wait()
	return func() {
		close(stop)
		done.Wait()
	}
}

// tickerLateness runs a ticker of period, as an application would, until
// stop is closed, and returns how late each tick was received.
func tickerLateness(period time.Duration, stop <-chan struct{}) <-chan []time.Duration {
	out := make(chan []time.Duration, 1)
	go func() {
		var late []time.Duration
		t := time.NewTicker(period)
		defer t.Stop()
		next := time.Now().Add(period)
		for {
			select {
			case <-stop:
				out <- late
				return
			case <-t.C:
				received := time.Now()
				late = append(late, max(received.Sub(next), 0))
				next = next.Add(period)
				for next.Before(received) {
					next = next.Add(period) // ticks the ticker dropped
				}
			}
		}
	}()
	return out
}

// quantile returns the q quantile of d.
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// BenchmarkGoroutineProfile measures, with n goroutines parked, how long
// the runtime's goroutine profile takes to write (what the collector does
// every window when the goroutine profile is on) and how late a 5 ms
// ticker of the application runs meanwhile (tick-p99-ms, tick-max-ms),
// against the same ticker and goroutines with no profile written (variant
// idle). It is the measurement behind collect.DefaultMaxGoroutines.
func BenchmarkGoroutineProfile(b *testing.B) {
	const period = 5 * time.Millisecond
	for _, n := range []int{1_000, 10_000, 30_000, 100_000} {
		for _, write := range []bool{false, true} {
			name := "idle"
			if write {
				name = "write"
			}
			b.Run(fmt.Sprintf("goroutines=%d/%s", n, name), func(b *testing.B) {
				release := parkGoroutines(n)
				defer release()
				stop := make(chan struct{})
				lateness := tickerLateness(period, stop)
				var total time.Duration
				for b.Loop() {
					start := time.Now()
					if write {
						if err := pprof.Lookup("goroutine").WriteTo(io.Discard, 0); err != nil {
							b.Fatal(err)
						}
					}
					total += time.Since(start)
					// Between windows the application runs alone.
					time.Sleep(20 * time.Millisecond)
				}
				close(stop)
				late := <-lateness
				b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "write-ms")
				b.ReportMetric(float64(quantile(late, 0.99).Microseconds())/1000, "tick-p99-ms")
				b.ReportMetric(float64(slices.Max(append(late, 0)).Microseconds())/1000, "tick-max-ms")
			})
		}
	}
}
