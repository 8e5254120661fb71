package integration

import (
	"context"
	"reflect"
	"runtime"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// The workload's functions, one per behaviour, so that each profile type
// has a function of known name to look for. They are kept out of line so
// that they appear as frames of their own.
//
// Its CPU is spent by design in two functions: burnCPU spins without
// pause, burnInSpan spins for a fifth of its time. Everything else sleeps
// or blocks most of the time, and allocates slowly enough to need about
// one garbage collection a second. So burnCPU is the top function by flat
// CPU, far ahead of anything else.
//
// spinRounds is how many steps of a linear congruential generator the burn
// functions take between two looks at the clock: about 100µs of arithmetic,
// so that their CPU lands in their own frames rather than in time.Now.
const spinRounds = 100_000

// burnCPU spins until stopped. The arithmetic is written out here and in
// burnInSpan, rather than shared, so that no helper frame takes the flat
// CPU; it works on locals only, which the race detector leaves alone.
//
//go:noinline
func burnCPU(stop <-chan struct{}) (x uint64) {
	for {
		select {
		case <-stop:
			return x
		default:
		}
		for range spinRounds {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
}

// burnInSpan spins for d inside the span started by its caller.
//
//go:noinline
func burnInSpan(d time.Duration) (x uint64) {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		for range spinRounds {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

// spanLoop starts a span, spins in it, ends it, and rests as long.
func spanLoop(stop <-chan struct{}, tracer trace.Tracer) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		_, span := tracer.Start(context.Background(), "burn")
		burnInSpan(2 * time.Millisecond)
		span.End()
		time.Sleep(8 * time.Millisecond)
	}
}

// allocateBuffers allocates 6.4 MB/s and keeps the last 4 MB live, for the
// in-use sample types: enough for the default heap sampling (one sample per
// 512 KiB on average) to see its buffers in every window. It returns them
// so that they are heap allocations, whatever escape analysis concludes.
//
//go:noinline
func allocateBuffers(stop <-chan struct{}) [][]byte {
	keep := make([][]byte, 64)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return keep
		case <-tick.C:
		}
		keep[i%len(keep)] = make([]byte, 64<<10)
	}
}

//go:noinline
func contendMutex(stop <-chan struct{}, mu *sync.Mutex) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		mu.Lock()
		time.Sleep(200 * time.Microsecond)
		mu.Unlock()
	}
}

//go:noinline
func blockOnChannel(stop <-chan struct{}, ticks <-chan time.Time) {
	for {
		select {
		case <-stop:
			return
		case <-ticks:
		}
	}
}

//go:noinline
func parkGoroutine(stop <-chan struct{}) { <-stop }

// workload runs the functions above on their own goroutines until stopped.
type workload struct {
	stop chan struct{}
	wg   sync.WaitGroup
}

// startWorkload starts the workload; its spans come from tracer, which
// should label goroutines (see labels.WrapTracerProvider).
func startWorkload(tracer trace.Tracer) *workload {
	w := &workload{stop: make(chan struct{})}
	ticker := time.NewTicker(time.Millisecond)
	var mu sync.Mutex
	for _, f := range []func(){
		func() { burnCPU(w.stop) },
		func() { spanLoop(w.stop, tracer) },
		func() { allocateBuffers(w.stop) },
		func() { contendMutex(w.stop, &mu) },
		func() { contendMutex(w.stop, &mu) },
		func() { blockOnChannel(w.stop, ticker.C); ticker.Stop() },
		func() { parkGoroutine(w.stop) },
	} {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			f()
		}()
	}
	return w
}

// Stop stops the workload and waits for its goroutines, so that every span
// has ended when it returns.
func (w *workload) Stop() {
	close(w.stop)
	w.wg.Wait()
}

// funcName returns the name the runtime, and so every profile, gives f.
func funcName(f any) string {
	return runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
}
