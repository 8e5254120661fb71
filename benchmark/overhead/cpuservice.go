package main

import (
	"crypto/sha256"
	"sync/atomic"
)

// cpuWork counts the operations of the CPU-bound service; the snapshot
// reports it.
var cpuWork atomic.Int64

// cpuBusyGoroutines is the number of goroutines the CPU-bound service
// keeps busy: one per core of the 2-core machine it was written for, so
// that every core runs the service and the runtime's CPU profiler has
// something to sample on each.
const cpuBusyGoroutines = 2

// startCPUService runs the CPU-bound service: cpuBusyGoroutines goroutines
// that hash and allocate over a live cache of liveMB, without I/O, each
// operation hashing hashRounds 512-byte blocks, replacing one cached record
// (retained allocation) and building a short-lived 4 KiB buffer. Its
// throughput is operations per second, and nothing waits on the network,
// so what a profiler costs it shows as lost operations and added CPU.
func startCPUService(liveMB, hashRounds int) {
	c := newCache(liveMB)
	for g := range cpuBusyGoroutines {
		go func() {
			var sum [32]byte
			block := make([]byte, 512)
			seed := uint64(g)
			for {
				for range hashRounds {
					copy(block, sum[:])
					sum = sha256.Sum256(block)
				}
				seed = seed*6364136223846793005 + 1442695040888963407
				c.replace(int(seed>>33)%c.size, seed)
				scratch := make([]byte, 4096)
				scratch[sum[0]] = sum[1]
				cpuSink.Store(&scratch)
				cpuWork.Add(1)
			}
		}()
	}
}

// cpuSink keeps the scratch buffers from being optimised away.
var cpuSink atomic.Pointer[[]byte]
