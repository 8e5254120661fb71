// Package waittest makes a goroutine wait in known ways, on stacks of its
// own, for tests of the off-CPU profile.
package waittest

import (
	"runtime/trace"
	"sync"
	"time"
)

// OnChannel waits d on a channel receive ("chan receive"), until a
// goroutine it starts sends.
//
//go:noinline
func OnChannel(d time.Duration) {
	ch := make(chan struct{})
	go func() { time.Sleep(d); ch <- struct{}{} }()
	<-ch
}

// OnMutex waits d to lock a sync.Mutex ("sync") that a goroutine it starts
// holds for that long.
//
//go:noinline
func OnMutex(d time.Duration) {
	var mu sync.Mutex
	mu.Lock()
	go func() { time.Sleep(d); mu.Unlock() }()
	mu.Lock()
}

// InSleep waits d in time.Sleep ("sleep").
//
//go:noinline
func InSleep(d time.Duration) { time.Sleep(d) }

// OnMutexTraced waits to lock a sync.Mutex ("sync") that a goroutine it
// starts holds for at least d, and then until the execution tracer has
// run for after: the holder unlocks once it has seen the tracer enabled,
// slept after, and found it enabled still (or again, past a trace that
// ended meanwhile), or after a minute of waiting for it. A slow request
// that must be explained from a trace its watch starts lasts, so, until
// that trace has seen it, however long a loaded machine takes to start
// the tracer.
//
//go:noinline
func OnMutexTraced(d, after time.Duration) {
	var mu sync.Mutex
	mu.Lock()
	go func() {
		time.Sleep(d)
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			for !trace.IsEnabled() && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(after)
			if trace.IsEnabled() {
				break
			}
		}
		mu.Unlock()
	}()
	mu.Lock()
}
