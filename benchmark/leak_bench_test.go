package benchmark

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/convert/otlp"
)

// The state BenchmarkGoroutineProfiles collects from: parkedGoroutines
// goroutines blocked on a channel that the benchmark keeps reachable
// (alive, so not leaks), and leakedGoroutines blocked on channels nothing
// else can reach (leaks the Go 1.27 runtime finds).
const (
	parkedGoroutines = 10_000
	leakedGoroutines = 5
	tickInterval     = 5 * time.Millisecond
)

// parked is closed to end the parked goroutines; as a package variable it
// keeps their channel reachable.
var parked chan struct{}

func startParked() {
	parked = make(chan struct{})
	var started sync.WaitGroup
	started.Add(parkedGoroutines)
	for range parkedGoroutines {
		go parkedWorker(parked, &started)
	}
	started.Wait()
}

var leakOnce sync.Once

// leak starts the leaked goroutines, once per process: a leak cannot be
// ended.
func leak() {
	leakOnce.Do(func() {
		var started sync.WaitGroup
		started.Add(leakedGoroutines)
		// The leaks carry a label, to see whether the leak profile keeps
		// the labels of the goroutines it reports.
		pprof.Do(context.Background(), pprof.Labels("leak", "yes"), func(context.Context) {
			for range leakedGoroutines {
				go leakedWorker(&started)
			}
		})
		started.Wait()
	})
}

//go:noinline
func parkedWorker(release <-chan struct{}, started *sync.WaitGroup) {
	started.Done()
	<-release
}

//go:noinline
func leakedWorker(started *sync.WaitGroup) {
	never := make(chan struct{})
	started.Done()
	<-never
}

// liveHeap holds the pointerful heap of the heap=... variants.
var liveHeap []*heapNode

type heapNode struct {
	next *heapNode
	_    [48]byte
}

func setLiveHeap(size int) {
	liveHeap = make([]*heapNode, size/64)
	for i := range liveHeap {
		liveHeap[i] = &heapNode{}
		if i > 0 {
			liveHeap[i].next = liveHeap[i-1]
		}
	}
	runtime.GC()
}

// BenchmarkGoroutineProfiles measures one collection of the goroutine and
// of the goroutine-leak profile (WriteTo, debug=0, as the profiler calls
// it) with 10,000 parked goroutines and five leaked ones, and the pause the
// application sees meanwhile: a goroutine receives from a 5 ms ticker and
// records how late each tick arrives, while collections run back to back.
//
//   - idle: no collection (each op sleeps 10 ms), the lateness baseline;
//   - goroutine: pprof.Lookup("goroutine").WriteTo;
//   - goroutineleak: pprof.Lookup("goroutineleak").WriteTo, which runs a GC
//     cycle with leak detection first;
//   - gc: runtime.GC alone, to tell the leak profile's cost from a GC's.
//
// Each runs with only the goroutines' own memory (heap=0MiB) and with a
// 256 MiB live heap of small pointerful objects, as the GC's mark work, and
// so the leak profile's, grows with the live heap.
//
// Metrics besides ns/op: tick-p50-µs, tick-p99-µs, tick-max-µs (lateness
// of the ticks received during the timed loop), stw-max-µs (the longest
// stop-the-world pause the runtime recorded, upper bound of its histogram
// bucket), gc/op (GC cycles per collection), gc-cpu-ms/op (CPU time of the
// GC per collection, the runtime's estimate, idle mark workers included).
//
// The parked goroutines end with the benchmark; the five leaked ones stay
// for the rest of the process.
//
// Under a Go without the goroutine-leak profile (1.26 without
// GOEXPERIMENT=goroutineleakprofile) the goroutineleak variants are left
// out, and the log says why.
func BenchmarkGoroutineProfiles(b *testing.B) {
	leak()
	startParked()
	defer close(parked)
	variants := []struct {
		name    string
		collect func() error
	}{
		{"idle", func() error { time.Sleep(10 * time.Millisecond); return nil }},
		{"goroutine", writeProfile("goroutine")},
		{"goroutineleak", writeProfile("goroutineleak")},
		{"gc", func() error { runtime.GC(); return nil }},
	}
	leakProfile := pprof.Lookup("goroutineleak") != nil
	if !leakProfile {
		// Printed, not logged: go test shows neither a benchmark's log nor
		// a skip's reason without -v.
		fmt.Printf("BenchmarkGoroutineProfiles: goroutineleak left out: the profile is unavailable in %s (it needs Go 1.27, or Go 1.26 with GOEXPERIMENT=goroutineleakprofile)\n",
			runtime.Version())
	}
	for _, heapMiB := range []int{0, 256} {
		setLiveHeap(heapMiB << 20)
		for _, v := range variants {
			if v.name == "goroutineleak" && !leakProfile {
				continue
			}
			b.Run(fmt.Sprintf("heap=%dMiB/%s", heapMiB, v.name), func(b *testing.B) {
				if v.name == "goroutineleak" {
					checkLeakProfile(b)
				}
				benchCollection(b, v.collect)
			})
		}
	}
	setLiveHeap(0)
}

// BenchmarkLeakWindow measures a whole profiler window, as the profiler's
// loop runs it (collect.Collector.Collect, then the OTLP request built and
// marshalled), without and with the goroutine-leak profile, in the state
// of BenchmarkGoroutineProfiles (10,000 parked goroutines, 5 leaked, no
// live heap and 256 MiB), with the same metrics. The window reads the heap
// and goroutine profiles, the defaults without the CPU profile, whose
// stop waits for the runtime's profile writer and would blur the
// difference; the goroutine profile's guard is off (MaxGoroutines -1), as
// 10,005 goroutines are over its default limit. The leak profile is read
// every window here (no Period): what one window that carries it costs.
func BenchmarkLeakWindow(b *testing.B) {
	leak()
	startParked()
	defer close(parked)
	leakProfile := pprof.Lookup("goroutineleak") != nil
	if !leakProfile {
		fmt.Printf("BenchmarkLeakWindow: goroutineleak left out: the profile is unavailable in %s\n", runtime.Version())
	}
	for _, heapMiB := range []int{0, 256} {
		setLiveHeap(heapMiB << 20)
		for _, v := range []struct {
			name     string
			profiles []string
		}{
			{"heap+goroutine", []string{collect.Heap, collect.Goroutine}},
			{"heap+goroutine+goroutineleak", []string{collect.Heap, collect.Goroutine, collect.GoroutineLeak}},
		} {
			if slices.Contains(v.profiles, collect.GoroutineLeak) && !leakProfile {
				continue
			}
			b.Run(fmt.Sprintf("heap=%dMiB/%s", heapMiB, v.name), func(b *testing.B) {
				c, err := collect.New(collect.Config{Profiles: v.profiles, MaxGoroutines: -1})
				if err != nil {
					b.Fatal(err)
				}
				builder := otlp.NewBuilder(nil, &commonpb.InstrumentationScope{Name: "bench"})
				c.Start(time.Now())
				var bytes int
				benchCollection(b, func() error {
					w := c.Collect(time.Now())
					if len(w.Profiles) != len(v.profiles) {
						return fmt.Errorf("window holds %d profiles, want %d", len(w.Profiles), len(v.profiles))
					}
					inputs := make([]otlp.Input, len(w.Profiles))
					for i, p := range w.Profiles {
						inputs[i] = otlp.Input{Name: p.Name, Profile: p.Data}
					}
					data, err := proto.Marshal(builder.Build(w.Start, w.End, inputs))
					bytes = len(data)
					return err
				})
				b.ReportMetric(float64(bytes), "request-B")
				c.Stop(time.Now())
			})
		}
	}
	setLiveHeap(0)
}

func writeProfile(name string) func() error {
	var buf bytes.Buffer
	return func() error {
		buf.Reset()
		return pprof.Lookup(name).WriteTo(&buf, 0)
	}
}

func benchCollection(b *testing.B, collect func() error) {
	before := readPauses()
	ticks := startTicker()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := collect(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	late := ticks.stop()
	after := readPauses()
	if len(late) == 0 {
		b.Fatal("no tick arrived during the timed loop")
	}
	slices.Sort(late)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(late[len(late)/2]), "tick-p50-µs")
	b.ReportMetric(us(late[(len(late)*99)/100]), "tick-p99-µs")
	b.ReportMetric(us(late[len(late)-1]), "tick-max-µs")
	b.ReportMetric(after.longestSince(before)*1e6, "stw-max-µs")
	b.ReportMetric(float64(after.gcCycles-before.gcCycles)/float64(b.N), "gc/op")
	b.ReportMetric((after.gcCPU-before.gcCPU)*1e3/float64(b.N), "gc-cpu-ms/op")
}

// ticker records how late each tick of a tickInterval ticker is received.
type ticker struct {
	done chan struct{}
	late chan []time.Duration
}

func startTicker() *ticker {
	t := &ticker{done: make(chan struct{}), late: make(chan []time.Duration)}
	go func() {
		tick := time.NewTicker(tickInterval)
		defer tick.Stop()
		var late []time.Duration
		for {
			select {
			case <-t.done:
				t.late <- late
				return
			case due := <-tick.C: // the time the tick was due
				late = append(late, time.Since(due))
			}
		}
	}()
	return t
}

func (t *ticker) stop() []time.Duration {
	close(t.done)
	return <-t.late
}

// pauses is the runtime's record of stop-the-world pauses (GC and other,
// such as the goroutine profile's), of GC cycles and of the CPU time the GC
// used.
type pauses struct {
	buckets  []float64 // seconds; len(counts)+1 boundaries
	counts   []uint64  // GC and other pauses summed per bucket
	gcCycles uint64
	gcCPU    float64 // seconds, an estimate the runtime keeps
}

func readPauses() pauses {
	s := []metrics.Sample{
		{Name: "/sched/pauses/total/gc:seconds"},
		{Name: "/sched/pauses/total/other:seconds"},
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
	}
	metrics.Read(s)
	gc, other := s[0].Value.Float64Histogram(), s[1].Value.Float64Histogram()
	p := pauses{buckets: gc.Buckets, counts: slices.Clone(gc.Counts), gcCycles: s[2].Value.Uint64(), gcCPU: s[3].Value.Float64()}
	for i, c := range other.Counts {
		p.counts[i] += c
	}
	return p
}

// longestSince returns the upper bound, in seconds, of the highest bucket
// that gained a pause since before.
func (p pauses) longestSince(before pauses) float64 {
	for i := len(p.counts) - 1; i >= 0; i-- {
		if p.counts[i] > before.counts[i] {
			if math.IsInf(p.buckets[i+1], 1) {
				return p.buckets[i]
			}
			return p.buckets[i+1]
		}
	}
	return 0
}

// checkLeakProfile makes sure the benchmark measures what it says: the
// leak profile reports exactly the leaked goroutines, with their labels,
// and none of the parked ones. A goroutine counts only once it has blocked,
// so the check gives the ones just started a second to get there.
func checkLeakProfile(b *testing.B) {
	var err error
	for range 100 {
		if err = leakProfileMatches(); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Fatal(err)
}

func leakProfileMatches() error {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutineleak").WriteTo(&buf, 0); err != nil {
		return err
	}
	p, err := profile.ParseData(buf.Bytes())
	if err != nil {
		return err
	}
	if len(p.SampleType) != 1 || p.SampleType[0].Type != "goroutineleak" || p.SampleType[0].Unit != "count" {
		return fmt.Errorf("sample types %v, want [goroutineleak/count]", p.SampleType)
	}
	var leaked, labelled, other int64
	for _, s := range p.Sample {
		if inStack(s, "leakedWorker") {
			leaked += s.Value[0]
			if slices.Equal(s.Label["leak"], []string{"yes"}) {
				labelled += s.Value[0]
			}
		} else if inStack(s, "parkedWorker") {
			other += s.Value[0]
		}
	}
	if leaked != leakedGoroutines || labelled != leakedGoroutines || other != 0 {
		return fmt.Errorf("leak profile: %d leaked (%d with their label), %d parked; want %d, %d, 0",
			leaked, labelled, other, leakedGoroutines, leakedGoroutines)
	}
	return nil
}

func inStack(s *profile.Sample, function string) bool {
	for _, loc := range s.Location {
		for _, l := range loc.Line {
			if strings.HasSuffix(l.Function.Name, "."+function) {
				return true
			}
		}
	}
	return false
}
