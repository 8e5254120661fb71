// Package waittest makes a goroutine wait in known ways, on stacks of its
// own, for tests of the off-CPU profile.
package waittest

import (
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
