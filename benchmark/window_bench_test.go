package benchmark

import (
	"bytes"
	"io"
	"math"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/grafana/pyroscope-go/godeltaprof"

	"github.com/pprofotel/profiler/benchmark/internal/gen"
)

// advanceFraction is the share of each kind's stacks that runs again in a
// benchmark window: most stacks of a service are quiet in any one window.
const advanceFraction = 0.1

var (
	sourceOnce sync.Once
	source     *gen.Source
)

// largeSource returns the process's generated runtime state, creating it on
// first use. It lives as long as the test binary.
func largeSource() *gen.Source {
	sourceOnce.Do(func() { source = gen.New(gen.Large) })
	return source
}

// kinds are the inputs of the per-window benchmarks; "all" is one window
// of the three profiles, exported as one request.
var kinds = []struct {
	name  string
	names []string
}{
	{"heap", []string{"heap"}},
	{"mutex", []string{"mutex"}},
	{"block", []string{"block"}},
	{"all", []string{"heap", "mutex", "block"}},
}

// deltaProfiler is godeltaprof's profiler of one kind.
type deltaProfiler interface{ Profile(io.Writer) error }

func newDeltaProfilers(names []string) []deltaProfiler {
	var out []deltaProfiler
	for _, n := range names {
		switch n {
		case "heap":
			out = append(out, godeltaprof.NewHeapProfiler())
		case "mutex":
			out = append(out, godeltaprof.NewMutexProfiler())
		case "block":
			out = append(out, godeltaprof.NewBlockProfiler())
		}
	}
	return out
}

func sum(data map[string][]byte) int {
	n := 0
	for _, b := range data {
		n += len(b)
	}
	return n
}

// BenchmarkWindow measures one window's work on the generated runtime
// state. Between iterations, with the timer stopped, a tenth of the stacks
// run again and a GC publishes them, so every window has real deltas. ours
// and naive replay the same recorded windows (see sequence).
//
//   - write: the runtime writing the profiles (pprof.Lookup(name).WriteTo),
//     which every profiler on public APIs pays; reports the gzipped bytes
//     the runtime wrote (pprof-gz-B).
//   - ours: the profiler's work on that output: decode, delta, OTLP
//     request and dictionary, serialisation, gzip (otlp-gz-B), and how
//     long the runtime took to write that very input (input-write-ns/op),
//     which is larger than what write saw.
//   - naive: google/pprof Parse, ScaleN/Merge delta, OTLP conversion,
//     serialisation, gzip (otlp-gz-B).
//   - godeltaprof: pyroscope-go's delta profilers, which read the runtime's
//     records through //go:linkname and write gzipped pprof (pprof-gz-B).
//   - paired: ours and naive again, alternating window by window, for the
//     ratio of their times (ours/naive) under the same machine conditions.
//   - write-ours: the runtime's write of the live state, then ours on that
//     very output, window by window, for ours/write under the same machine
//     conditions.
func BenchmarkWindow(b *testing.B) {
	src := largeSource()
	seqs := make(map[string]*sequence)
	for _, k := range kinds {
		seqs[k.name] = &sequence{src: src, names: k.names}
		b.Run(k.name+"/write", func(b *testing.B) {
			b.ReportAllocs()
			var buf bytes.Buffer
			n := 0
			for range b.N {
				b.StopTimer()
				src.Advance(advanceFraction)
				n = 0
				b.StartTimer()
				for _, name := range k.names {
					buf.Reset()
					if err := pprofLookup(name).WriteTo(&buf, 0); err != nil {
						b.Fatal(err)
					}
					n += buf.Len()
				}
			}
			b.ReportMetric(float64(n), "pprof-gz-B")
		})
		b.Run(k.name+"/godeltaprof", func(b *testing.B) {
			profs := newDeltaProfilers(k.names)
			var buf bytes.Buffer
			for _, p := range profs { // the baseline
				if err := p.Profile(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				src.Advance(advanceFraction)
				buf.Reset()
				b.StartTimer()
				for _, p := range profs {
					if err := p.Profile(&buf); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(buf.Len()), "pprof-gz-B")
		})
		ours := func(base map[string][]byte) (pipeline, error) { return newOurs(k.names, base) }
		naive := func(base map[string][]byte) (pipeline, error) { return newNaive(k.names, base) }
		b.Run(k.name+"/ours", func(b *testing.B) { benchPipeline(b, seqs[k.name], ours) })
		b.Run(k.name+"/naive", func(b *testing.B) { benchPipeline(b, seqs[k.name], naive) })
		b.Run(k.name+"/paired", func(b *testing.B) { benchPaired(b, seqs[k.name], ours, naive) })
		b.Run(k.name+"/write-ours", func(b *testing.B) {
			benchWriteThenOurs(b, src, k.names)
		})
	}
}

type pipeline interface {
	window(map[string][]byte) (int, error)
}

// sequence records the runtime's output for successive windows, so that
// ours and naive process exactly the same input: both allocate, and what
// they allocate would otherwise enter the heap profile the other reads.
type sequence struct {
	src     *gen.Source
	names   []string
	windows []map[string][]byte // [0] is the baseline
	// writeNs[i] is how long the runtime took to write windows[i]. The
	// write variant reads the live state, which is smaller than the state
	// recorded later for ours and naive; this is the write of exactly
	// their input.
	writeNs []int64
}

// window returns the runtime's output at the end of window i, recording
// windows up to i as needed.
func (s *sequence) window(i int) (map[string][]byte, error) {
	for len(s.windows) <= i {
		if len(s.windows) > 0 {
			s.src.Advance(advanceFraction)
		}
		start := time.Now()
		data, err := snapshot(s.names)
		if err != nil {
			return nil, err
		}
		s.writeNs = append(s.writeNs, time.Since(start).Nanoseconds())
		s.windows = append(s.windows, data)
	}
	return s.windows[i], nil
}

type newPipeline func(baseline map[string][]byte) (pipeline, error)

// readyPipelines makes a pipeline with each of news, window 0 of seq as its
// baseline, and runs window 1 through it untimed, so that the benchmark
// sees the steady state. It records the windows up to 1+n, the ones to
// time, before returning after a GC: so that the variant that happens to
// run first does not have the runtime's write and the source's work (and
// the collection of their garbage) between its timed windows while the
// other has not.
func readyPipelines(b *testing.B, seq *sequence, n int, news ...newPipeline) []pipeline {
	b.StopTimer()
	if _, err := seq.window(1 + n); err != nil {
		b.Fatal(err)
	}
	out := make([]pipeline, len(news))
	for i, newP := range news {
		p, err := newP(seq.windows[0])
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.window(seq.windows[1]); err != nil {
			b.Fatal(err)
		}
		out[i] = p
	}
	runtime.GC()
	return out
}

func benchPipeline(b *testing.B, seq *sequence, newP newPipeline) {
	p := readyPipelines(b, seq, b.N, newP)[0]
	b.ReportAllocs()
	size, in := 0, 0
	var writeNs int64
	var err error
	for i := range b.N {
		data := seq.windows[2+i]
		in = sum(data)
		writeNs += seq.writeNs[2+i]
		b.StartTimer()
		if size, err = p.window(data); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
	}
	b.ReportMetric(float64(size), "otlp-gz-B")
	b.ReportMetric(float64(in), "pprof-gz-B")
	b.ReportMetric(float64(writeNs)/float64(b.N), "input-write-ns/op")
}

// benchPaired times ours and naive on the same windows, alternating between
// them window by window (ours first in even windows, naive first in odd
// ones), and reports each one's time per window and their ratio. The
// separate ours and naive benchmarks run minutes apart in a round, and on a
// shared machine the speed of the machine can change by a third in that
// time; here both see it alike.
func benchPaired(b *testing.B, seq *sequence, ours, naive newPipeline) {
	pipelines := readyPipelines(b, seq, b.N, ours, naive)
	var ns [2]time.Duration
	b.StartTimer()
	for i := range b.N {
		for j := range 2 {
			which := (i + j) % 2
			start := time.Now()
			if _, err := pipelines[which].window(seq.windows[2+i]); err != nil {
				b.Fatal(err)
			}
			ns[which] += time.Since(start)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(ns[0].Nanoseconds())/float64(b.N), "ours-ns/op")
	b.ReportMetric(float64(ns[1].Nanoseconds())/float64(b.N), "naive-ns/op")
	b.ReportMetric(float64(ns[0])/float64(ns[1]), "ours/naive")
}

// benchWriteThenOurs times, in each window, the runtime writing the live
// state (write-ns/op) and then ours processing exactly that output
// (ours-ns/op), and reports their ratio. The write and ours variants run
// minutes apart in a round; this pairs each of ours' windows with the
// write that produced it.
func benchWriteThenOurs(b *testing.B, src *gen.Source, names []string) {
	b.StopTimer()
	base, err := snapshot(names)
	if err != nil {
		b.Fatal(err)
	}
	p, err := newOurs(names, base)
	if err != nil {
		b.Fatal(err)
	}
	src.Advance(advanceFraction)
	if data, err := snapshot(names); err != nil {
		b.Fatal(err)
	} else if _, err := p.window(data); err != nil { // the steady state, untimed
		b.Fatal(err)
	}
	var write, ours time.Duration
	for range b.N {
		src.Advance(advanceFraction)
		runtime.GC()
		b.StartTimer()
		start := time.Now()
		data, err := snapshot(names)
		if err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if _, err := p.window(data); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(mid)
		write += mid.Sub(start)
		b.StopTimer()
	}
	b.ReportMetric(float64(write.Nanoseconds())/float64(b.N), "write-ns/op")
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N), "ours-ns/op")
	b.ReportMetric(float64(ours)/float64(write), "ours/write")
}

// BenchmarkRetained runs the profiler's pipeline for 1,000 windows of the
// heap profile and reports its retained heap (HeapAlloc after two GCs, less
// what it was before the pipeline existed) at every hundredth window, and
// the runtime's own profiling memory, MemStats.BuckHashSys. Each window a
// hundredth of the heap stacks runs again.
//
// It runs twice. With input=growing every allocation of the process is
// sampled at the default rate, as in a real program, and the heap profile
// itself grows: the test process keeps allocating at stacks and sizes it
// had not used before (the pipeline's own buffers among them), and the
// delta state must hold one entry per stack the runtime reports. With
// input=stable only the generated stacks are sampled (MemProfileRate is 0
// outside them), so the input keeps its size and any growth left is the
// pipeline's own.
func BenchmarkRetained(b *testing.B) {
	src := largeSource()
	for _, tc := range []struct {
		name string
		rate int // MemProfileRate outside the generated stacks
	}{
		{"input=stable", 0},
		{"input=growing", runtime.MemProfileRate},
	} {
		b.Run(tc.name, func(b *testing.B) {
			prevRate := runtime.MemProfileRate
			runtime.MemProfileRate = tc.rate
			defer func() { runtime.MemProfileRate = prevRate }()
			for range b.N {
				retainedOverWindows(b, src)
			}
		})
	}
}

func retainedOverWindows(b *testing.B, src *gen.Source) {
	names := []string{"heap"}
	var ms runtime.MemStats
	retained := func() int64 {
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	// The pipeline's input is allocated for each window by snapshot;
	// it is not the pipeline's, so it is dropped before measuring.
	base, err := snapshot(names)
	if err != nil {
		b.Fatal(err)
	}
	before := retained()
	p, err := newOurs(names, base)
	if err != nil {
		b.Fatal(err)
	}
	base = nil
	var at100, at1000 int64
	lowest, highest := int64(math.MaxInt64), int64(math.MinInt64)
	for w := 1; w <= 1000; w++ {
		src.Advance(0.01)
		data, err := snapshot(names)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.window(data); err != nil {
			b.Fatal(err)
		}
		if w%100 != 0 {
			continue
		}
		// The runtime's heap profile itself may grow; its size and the
		// number of samples sent tell that growth apart from the
		// pipeline's.
		samples := 0
		for _, sp := range p.req.ResourceProfiles[0].ScopeProfiles {
			for _, prof := range sp.Profiles {
				samples = max(samples, len(prof.Samples))
			}
		}
		in := len(data["heap"])
		p.req, p.data, data = nil, nil, nil
		r := retained() - before
		lowest, highest = min(lowest, r), max(highest, r)
		b.Logf("window %4d: retained %d B, heap input %d B gzipped, %d samples sent", w, r, in, samples)
		switch w {
		case 100:
			at100 = r
			b.ReportMetric(float64(in), "input-gz-B@100")
			b.ReportMetric(float64(samples), "samples@100")
		case 1000:
			at1000 = r
			b.ReportMetric(float64(in), "input-gz-B@1000")
			b.ReportMetric(float64(samples), "samples@1000")
		}
	}
	runtime.KeepAlive(p)
	b.ReportMetric(float64(at100), "retained-B@100")
	b.ReportMetric(float64(at1000), "retained-B@1000")
	b.ReportMetric(float64(at1000-at100), "growth-B")
	b.ReportMetric(float64(highest-lowest), "range-B")
	b.ReportMetric(float64(ms.BuckHashSys), "BuckHashSys-B")
	b.ReportMetric(float64(at1000)/float64(ms.BuckHashSys), "retained/BuckHashSys")
}
