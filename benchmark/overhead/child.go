package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sync/atomic"
	"syscall"
	"time"
)

// snapshot is what the child reports at the start and at the end of the
// measured interval; the parent subtracts the two.
type snapshot struct {
	NumGC        uint32
	PauseTotalNs uint64
	HeapAlloc    uint64
	HeapSys      uint64
	Sys          uint64
	// CPUNanos is the child's user plus system CPU time: the whole process,
	// profiler included.
	CPUNanos int64
	// Work counts the operations of the CPU-bound service (0 for the HTTP
	// service, whose work is counted by the load generator).
	Work int64
	// LivePeak is the most heap the garbage collector found live since
	// the previous snapshot: what a profiler holds on to shows here, not in
	// HeapAlloc at one instant.
	LivePeak uint64
}

func takeSnapshot() snapshot {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return snapshot{
		NumGC:        ms.NumGC,
		PauseTotalNs: ms.PauseTotalNs,
		HeapAlloc:    ms.HeapAlloc,
		HeapSys:      ms.HeapSys,
		Sys:          ms.Sys,
		CPUNanos:     ru.Utime.Nano() + ru.Stime.Nano(),
		Work:         cpuWork.Load(),
		LivePeak:     livePeak.Swap(liveHeap()),
	}
}

// livePeak is the most heap found live since the last snapshot, kept by
// watchLiveHeap.
var livePeak atomic.Uint64

// watchLiveHeap reads the live heap every 10 ms, more often than the
// service's collections run, and keeps its peak.
func watchLiveHeap() {
	for range time.Tick(10 * time.Millisecond) {
		v := liveHeap()
		for {
			old := livePeak.Load()
			if v <= old || livePeak.CompareAndSwap(old, v) {
				break
			}
		}
	}
}

func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// allocsProfileEnv names the file prefix to which the child writes its
// allocation profile at each snapshot (PREFIX.1 at the start of the
// measured interval, PREFIX.2 at its end), so that the difference shows
// who allocated what while the load ran (perf.sh sets it).
const allocsProfileEnv = "OVERHEAD_ALLOCS_PROFILE"

func writeAllocsProfile(n int) {
	prefix := os.Getenv(allocsProfileEnv)
	if prefix == "" {
		return
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", prefix, n))
	if err != nil {
		fmt.Fprintln(os.Stderr, "overhead child:", err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		fmt.Fprintln(os.Stderr, "overhead child:", err)
	}
}

// childOptions are what the parent passes to a child on its command line.
type childOptions struct {
	setup      string
	service    string
	stubAddr   string
	period     time.Duration
	liveMB     int
	hashRounds int
}

// runChild is the process under test: it builds the service's live heap,
// starts the configured profiler, serves on a loopback port that it prints
// on stdout, and exits when the parent closes its stdin.
func runChild(o childOptions) error {
	st, ok := setupByName(o.setup)
	if !ok {
		return fmt.Errorf("-child %q: unknown configuration", o.setup)
	}
	var svc http.Handler = http.NotFoundHandler()
	if o.service == "cpu" {
		startCPUService(o.liveMB, o.hashRounds)
	} else {
		svc = newService(o.liveMB, 2, o.hashRounds)
	}
	runtime.GC()
	go watchLiveHeap()

	stop, err := st.start(o.stubAddr, o.period)
	if err != nil {
		return fmt.Errorf("starting %s: %w", st.name, err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	handler, closeRoutes := routes(svc, st.traced)
	defer closeRoutes()
	mux := http.NewServeMux()
	mux.Handle("/", handler)
	var snapshots atomic.Int32
	mux.HandleFunc("/_bench/snapshot", func(w http.ResponseWriter, r *http.Request) {
		writeAllocsProfile(int(snapshots.Add(1)))
		json.NewEncoder(w).Encode(takeSnapshot())
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	fmt.Printf("listening %s\n", ln.Addr())

	// The parent closes stdin when it has measured what it needs; if the
	// parent dies, stdin closes too and the child does not linger.
	io.Copy(io.Discard, os.Stdin)
	srv.Close()
	done := make(chan struct{})
	go func() { stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	return nil
}
