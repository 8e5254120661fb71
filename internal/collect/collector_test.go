package collect

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	gpprof "github.com/google/pprof/profile"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/testutil/cputest"
)

// stackKey names a sample by its frames and labels, the same way for a
// decoded profile and for a google/pprof one, so the two can be compared.
func stackKey(frames []string, labels []string) string {
	sort.Strings(labels)
	return strings.Join(frames, ";") + "|" + strings.Join(labels, ",")
}

func ourTotals(p *pprofdecode.Profile, valueIndex int, into map[string]int64) {
	for _, s := range p.Samples {
		var frames, labels []string
		for _, li := range s.Locations {
			for _, ln := range p.Locations[li].Lines {
				frames = append(frames, fmt.Sprintf("%s:%d", p.Functions[ln.Function].Name, ln.Line))
			}
		}
		for _, l := range s.Labels {
			if l.IsNum {
				labels = append(labels, fmt.Sprintf("%s=%d", l.Key, l.Num))
			} else {
				labels = append(labels, l.Key+"="+l.Str)
			}
		}
		into[stackKey(frames, labels)] += s.Values[valueIndex]
	}
}

func runtimeTotals(t *testing.T, data []byte, valueIndex int) map[string]int64 {
	t.Helper()
	p, err := gpprof.ParseData(data)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]int64)
	for _, s := range p.Sample {
		var frames, labels []string
		for _, loc := range s.Location {
			for _, ln := range loc.Line {
				frames = append(frames, fmt.Sprintf("%s:%d", ln.Function.Name, ln.Line))
			}
		}
		for k, vs := range s.Label {
			for _, v := range vs {
				labels = append(labels, k+"="+v)
			}
		}
		for k, vs := range s.NumLabel {
			for _, v := range vs {
				labels = append(labels, fmt.Sprintf("%s=%d", k, v))
			}
		}
		out[stackKey(frames, labels)] += s.Value[valueIndex]
	}
	return out
}

// recordedSource replays snapshots recorded from the runtime: each read of
// a profile returns its next snapshot.
type recordedSource struct {
	snapshots map[string][][]byte
	next      map[string]int
}

func (r *recordedSource) read(name string, w io.Writer) error {
	i := r.next[name]
	r.next[name]++
	if i >= len(r.snapshots[name]) {
		return fmt.Errorf("no snapshot %d of %s", i, name)
	}
	_, err := w.Write(r.snapshots[name][i])
	return err
}

var sink [][]byte

//go:noinline
func allocateSmall(n int) {
	for range n {
		sink = append(sink, make([]byte, 1024))
	}
}

//go:noinline
func allocateLarge(n int) {
	for range n {
		sink = append(sink, make([]byte, 64<<10))
	}
}

//go:noinline
func contend(rounds int) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				mu.Lock()
				time.Sleep(10 * time.Microsecond)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

//go:noinline
func blockOnChannel(rounds int) {
	ch := make(chan int)
	go func() {
		for i := range rounds {
			time.Sleep(20 * time.Microsecond)
			ch <- i
		}
	}()
	for range rounds {
		<-ch
	}
}

func snapshot(t *testing.T, name string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := pprof.Lookup(name).WriteTo(&buf, 0); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDeltasAddUpToRuntimeTotals records real runtime profiles while the
// program allocates, contends and blocks between snapshots, replays them
// through a collector, and checks that the windows' deltas add up, stack by
// stack, to the runtime's last snapshot minus its first.
func TestDeltasAddUpToRuntimeTotals(t *testing.T) {
	defer runtime.SetMutexProfileFraction(runtime.SetMutexProfileFraction(1))
	runtime.SetBlockProfileRate(1)
	defer runtime.SetBlockProfileRate(0)
	oldRate := runtime.MemProfileRate
	runtime.MemProfileRate = 4096
	defer func() { runtime.MemProfileRate = oldRate }()

	names := []string{Heap, Mutex, Block}
	const windows = 4
	src := &recordedSource{snapshots: map[string][][]byte{}, next: map[string]int{}}
	record := func() {
		runtime.GC() // the heap profile publishes at the end of a GC cycle
		for _, n := range names {
			src.snapshots[n] = append(src.snapshots[n], snapshot(t, n))
		}
	}
	record()
	for w := 1; w <= windows; w++ {
		allocateSmall(200 * w)
		allocateLarge(10 * w)
		contend(20 * w)
		blockOnChannel(20 * w)
		sink = nil
		record()
	}

	c, err := New(Config{Profiles: names, Source: src.read})
	if err != nil {
		t.Fatal(err)
	}
	// A window's profiles are valid until the next call, so each window
	// is tallied before the next one is collected.
	cumulative := map[string][]int{Heap: {0, 1}, Mutex: {0, 1}, Block: {0, 1}}
	sums := make(map[string][]map[string]int64)
	for _, name := range names {
		for range cumulative[name] {
			sums[name] = append(sums[name], make(map[string]int64))
		}
	}
	funcs := map[string][]string{Heap: {"allocateSmall", "allocateLarge"}, Mutex: {"contend"}, Block: {"blockOnChannel"}}
	seen := make(map[string]map[string]bool)
	lastInuse := make(map[int]map[string]int64)
	tally := func(w Window, last bool) {
		for _, name := range names {
			p := findProfile(t, w, name)
			for i, vi := range cumulative[name] {
				for _, s := range p.Samples {
					if s.Values[vi] < 0 {
						t.Fatalf("%s value %d: negative delta %d", name, vi, s.Values[vi])
					}
				}
				ourTotals(p, vi, sums[name][i])
			}
			if seen[name] == nil {
				seen[name] = make(map[string]bool)
			}
			markFunctions(p, funcs[name], seen[name])
			if name == Heap && last {
				for _, vi := range []int{2, 3} {
					lastInuse[vi] = make(map[string]int64)
					ourTotals(p, vi, lastInuse[vi])
				}
			}
		}
	}
	start := time.Unix(1000, 0)
	c.Start(start)
	for w := 1; w < windows; w++ {
		tally(c.Collect(start.Add(time.Duration(w)*time.Second)), false)
	}
	tally(c.Stop(start.Add(windows*time.Second)), true)

	for _, name := range names {
		for i, vi := range cumulative[name] {
			sum := sums[name][i]
			first := runtimeTotals(t, src.snapshots[name][0], vi)
			last := runtimeTotals(t, src.snapshots[name][windows], vi)
			want := make(map[string]int64)
			for k, v := range last {
				if d := v - first[k]; d != 0 {
					want[k] = d
				}
			}
			for k, v := range sum {
				if v == 0 {
					delete(sum, k)
				}
			}
			if len(want) == 0 {
				t.Fatalf("%s value %d: the workload recorded nothing", name, vi)
			}
			if !equalTotals(sum, want) {
				t.Errorf("%s value %d: deltas do not add up to the runtime's totals\n%s", name, vi, diffTotals(sum, want))
			}
		}
		for _, f := range funcs[name] {
			if !seen[name][f] {
				t.Errorf("%s profile: no stack through %s", name, f)
			}
		}
	}
	// In-use values are a snapshot: the last window holds the runtime's
	// last state.
	for _, vi := range []int{2, 3} {
		if !equalTotals(nonZero(lastInuse[vi]), nonZero(runtimeTotals(t, src.snapshots[Heap][windows], vi))) {
			t.Errorf("heap value %d: the last window is not the runtime's last snapshot", vi)
		}
	}
}

func nonZero(m map[string]int64) map[string]int64 {
	for k, v := range m {
		if v == 0 {
			delete(m, k)
		}
	}
	return m
}

func equalTotals(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func diffTotals(got, want map[string]int64) string {
	var b strings.Builder
	for k, v := range want {
		if got[k] != v {
			fmt.Fprintf(&b, "  %s: got %d, want %d\n", k, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			fmt.Fprintf(&b, "  %s: got %d, want nothing\n", k, v)
		}
	}
	return b.String()
}

func findProfile(t *testing.T, w Window, name string) *pprofdecode.Profile {
	t.Helper()
	for _, p := range w.Profiles {
		if p.Name == name {
			return p.Data
		}
	}
	t.Fatalf("window %v-%v has no %s profile", w.Start, w.End, name)
	return nil
}

// markFunctions records in seen which of funcs appear in p's stacks.
func markFunctions(p *pprofdecode.Profile, funcs []string, seen map[string]bool) {
	for _, s := range p.Samples {
		for _, li := range s.Locations {
			for _, ln := range p.Locations[li].Lines {
				fn := p.Functions[ln.Function].Name
				for _, f := range funcs {
					if strings.HasSuffix(fn, "."+f) || strings.Contains(fn, "."+f+".func") {
						seen[f] = true
					}
				}
			}
		}
	}
}

// fakeCPU is a CPU profiler that is busy on the starts listed (counted
// from 1) and otherwise records a fixed profile.
type fakeCPU struct {
	busy    map[int]bool
	started int
	data    []byte
	w       io.Writer
}

func (f *fakeCPU) start(w io.Writer) error {
	f.started++
	if f.busy[f.started] {
		return errors.New("cpu profiling already in use")
	}
	f.w = w
	return nil
}

func (f *fakeCPU) stop() {
	f.w.Write(f.data)
	f.w = nil
}

func TestCPUProfilerBusy(t *testing.T) {
	cpuData := snapshot(t, Goroutine) // any valid profile will do as CPU data
	cpu := &fakeCPU{busy: map[int]bool{1: true, 2: true}, data: cpuData}
	stats := new(Omissions)
	c, err := New(Config{
		Profiles:  []string{CPU, Goroutine},
		Source:    RuntimeSource,
		CPU:       CPUProfiler{Start: cpu.start, Stop: cpu.stop},
		Omissions: stats,
	})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(0, 0)
	c.Start(now) // start 1: busy
	windows := []Window{
		c.Collect(now.Add(time.Second)),     // no CPU; start 2: busy
		c.Collect(now.Add(2 * time.Second)), // no CPU; start 3 succeeds
		c.Collect(now.Add(3 * time.Second)), // CPU; start 4 succeeds
		c.Stop(now.Add(4 * time.Second)),    // CPU
	}
	wantCPU := []bool{false, false, true, true}
	has := func(w Window, name string) bool {
		for _, p := range w.Profiles {
			if p.Name == name {
				return true
			}
		}
		return false
	}
	for i, w := range windows {
		if got := has(w, CPU); got != wantCPU[i] {
			t.Errorf("window %d: CPU profile present = %v, want %v", i+1, got, wantCPU[i])
		}
		if !has(w, Goroutine) {
			t.Errorf("window %d: goroutine profile missing; a busy CPU profiler must not affect other types", i+1)
		}
	}
	if got := stats.CPUProfilesSkipped.Load(); got != 2 {
		t.Errorf("CPUProfilesSkipped = %d, want 2", got)
	}
	if cpu.w != nil {
		t.Error("the CPU profile is still running after Stop")
	}
}

//go:noinline
func burnCPU(d time.Duration) int {
	x := 0
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := range 10000 {
			x += i * i
		}
	}
	return x
}

// TestCollectorOnTheLiveRuntime runs the real CPU profiler and the real
// runtime profiles through a few windows.
func TestCollectorOnTheLiveRuntime(t *testing.T) {
	c, err := New(Config{Profiles: []string{CPU, Heap, Goroutine}})
	if err != nil {
		t.Fatal(err)
	}
	c.Start(time.Now())
	var cpuSamples int
	for i := 0; i < 50 && cpuSamples < 5; i++ {
		burnCPU(50 * time.Millisecond)
		w := c.Collect(time.Now())
		if len(w.Profiles) != 3 {
			t.Fatalf("window %d: %d profiles, want 3", i, len(w.Profiles))
		}
		p := findProfile(t, w, CPU)
		for _, s := range p.Samples {
			for _, li := range s.Locations {
				for _, ln := range p.Locations[li].Lines {
					if strings.HasSuffix(p.Functions[ln.Function].Name, ".burnCPU") {
						cpuSamples++
					}
				}
			}
		}
	}
	w := c.Stop(time.Now())
	if cpuSamples < 5 {
		t.Errorf("found %d CPU samples in burnCPU, want at least 5", cpuSamples)
	}
	if len(w.Profiles) != 3 {
		t.Errorf("final window: %d profiles, want 3", len(w.Profiles))
	}
	// The CPU profiler must be free again after Stop.
	if err := pprof.StartCPUProfile(io.Discard); err != nil {
		t.Fatalf("CPU profiler still held after Stop: %v", err)
	}
	pprof.StopCPUProfile()
}

// TestCollectAllocatesLittleOnceWarm checks that a window of profiles like
// the last one is decoded into the memory of the last one: what a window
// allocates is its list of profiles and one string table per profile,
// however many samples they hold.
func TestCollectAllocatesLittleOnceWarm(t *testing.T) {
	defer runtime.SetMutexProfileFraction(runtime.SetMutexProfileFraction(1))
	runtime.SetBlockProfileRate(1)
	defer runtime.SetBlockProfileRate(0)
	contend(20)
	blockOnChannel(20)
	names := []string{Heap, Mutex, Block}
	// Uncompressed, as gunzip allocates per deflate block of its input.
	data := make(map[string][]byte)
	samples := 0
	for _, name := range names {
		raw := rawProfile(t, name)
		data[name] = raw
		p, err := pprofdecode.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		samples += len(p.Samples)
	}
	c, err := New(Config{Profiles: names, Source: func(name string, w io.Writer) error {
		_, err := w.Write(data[name])
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(0, 0)
	c.Start(now)
	c.Collect(now)
	allocs := testing.AllocsPerRun(20, func() {
		now = now.Add(time.Second)
		if w := c.Collect(now); len(w.Profiles) != len(names) {
			t.Fatalf("%d profiles, want %d", len(w.Profiles), len(names))
		}
	})
	if want := float64(1 + len(names)); allocs > want {
		t.Errorf("Collect of %d profiles (%d samples): %v allocations per window, want at most %v", len(names), samples, allocs, want)
	}
}

// rawProfile returns the named runtime profile as uncompressed protobuf.
func rawProfile(t *testing.T, name string) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(snapshot(t, name)))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestMalformedStackLeavesProfileOut checks that a stack the decoder leaves
// packed for the delta, which references a location the profile does not
// have, leaves that profile out of the window, counted, like any other
// profile that cannot be read.
func TestMalformedStackLeavesProfileOut(t *testing.T) {
	// A mutex profile of three locations, numbered 1..3, and one sample of
	// the given location ids, in protobuf (profile.proto's field numbers).
	varint := func(b []byte, field protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(b, field, protowire.VarintType), v)
	}
	bytesField := func(b []byte, field protowire.Number, m []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, field, protowire.BytesType), m)
	}
	packed := func(vs ...uint64) []byte {
		var b []byte
		for _, v := range vs {
			b = protowire.AppendVarint(b, v)
		}
		return b
	}
	build := func(ids ...uint64) []byte {
		var p []byte
		p = bytesField(p, 1, varint(varint(nil, 1, 1), 2, 2)) // contentions/count
		p = bytesField(p, 1, varint(varint(nil, 1, 3), 2, 4)) // delay/nanoseconds
		p = bytesField(p, 2, bytesField(bytesField(nil, 1, packed(ids...)), 2, packed(5, 7)))
		for id := uint64(1); id <= 3; id++ {
			p = bytesField(p, 4, varint(varint(nil, 1, id), 3, 0x1000*id))
		}
		for _, s := range []string{"", "contentions", "count", "delay", "nanoseconds"} {
			p = bytesField(p, 6, []byte(s))
		}
		return p
	}
	tests := []struct {
		name string
		ids  []uint64
		ok   bool
	}{
		{"valid", []uint64{1, 2, 3}, true},
		{"unknown location", []uint64{1, 2, 4}, false},
		{"location id zero", []uint64{0, 1, 2}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := build(tt.ids...)
			stats := new(Omissions)
			c, err := New(Config{Profiles: []string{Mutex}, Omissions: stats, Source: func(_ string, w io.Writer) error {
				_, err := w.Write(data)
				return err
			}})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Unix(0, 0)
			c.Start(now)
			w := c.Collect(now.Add(time.Second))
			if got := len(w.Profiles) == 1; got != tt.ok {
				t.Errorf("window has %d profiles, want the mutex profile: %v", len(w.Profiles), tt.ok)
			}
			wantErrors := int64(0)
			if !tt.ok {
				wantErrors = 2 // the baseline and the window
			}
			if got := stats.ProfilesLeftOut.Load(); got != wantErrors {
				t.Errorf("%d errors counted, want %d", got, wantErrors)
			}
		})
	}
}

// TestStrayStopCPUProfile has the application call pprof.StopCPUProfile
// in the middle of a window, as a careless one would: that window goes
// without CPU data and is counted as skipped, and the next one has the
// CPU profile running again, with samples.
func TestStrayStopCPUProfile(t *testing.T) {
	stats := new(Omissions)
	c, err := New(Config{Profiles: []string{CPU, Goroutine}, Omissions: stats})
	if err != nil {
		t.Fatal(err)
	}
	c.Start(time.Now())
	pprof.StopCPUProfile() // the application's
	w := c.Collect(time.Now())
	for _, p := range w.Profiles {
		if p.Name == CPU {
			t.Errorf("the window the application stopped the CPU profile in has a CPU profile of %d samples", len(p.Data.Samples))
		}
	}
	if got := stats.CPUProfilesSkipped.Load(); got != 1 {
		t.Errorf("CPUProfilesSkipped = %d, want 1", got)
	}
	if err := pprof.StartCPUProfile(io.Discard); err == nil {
		pprof.StopCPUProfile()
		t.Fatal("the CPU profiler is free after the window: the collector did not restart it")
	}
	cputest.Spin(200 * time.Millisecond)
	w = c.Stop(time.Now())
	if p := findProfile(t, w, CPU); len(p.Samples) == 0 {
		t.Error("the CPU profile of the window after the restart has no samples")
	}
	if got := stats.CPUProfilesSkipped.Load(); got != 1 {
		t.Errorf("CPUProfilesSkipped = %d after the restarted window, want 1", got)
	}
}

// TestGoroutineGuard runs windows with the number of goroutines below,
// above and again below Config.MaxGoroutines: above it the window goes
// without its goroutine profile, counted every window and logged once, and
// the other profiles are unaffected.
func TestGoroutineGuard(t *testing.T) {
	for _, tt := range []struct {
		name string
		max  func(base int) int
		want int // windows skipped of the three
	}{
		{"limit", func(base int) int { return base + 100 }, 2},
		{"no limit", func(int) int { return -1 }, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			stats := new(Omissions)
			c, err := New(Config{
				Profiles:      []string{Heap, Goroutine},
				Omissions:     stats,
				Logger:        slog.New(slog.NewTextHandler(&logs, nil)),
				MaxGoroutines: tt.max(runtime.NumGoroutine()),
			})
			if err != nil {
				t.Fatal(err)
			}
			c.Start(time.Now())
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for range 200 {
				wg.Go(func() { <-stop })
			}
			skipped := 0
			for i := range 2 {
				w := c.Collect(time.Now())
				if findName(w, Heap) == nil {
					t.Errorf("window %d: heap profile missing", i)
				}
				if findName(w, Goroutine) == nil {
					skipped++
				}
			}
			close(stop)
			wg.Wait()
			w := c.Stop(time.Now())
			if p := findName(w, Goroutine); p == nil {
				t.Error("goroutine profile still missing below the limit")
			}
			if skipped != tt.want || stats.GoroutineProfilesSkipped.Load() != int64(tt.want) {
				t.Errorf("skipped %d windows, counted %d, want %d", skipped, stats.GoroutineProfilesSkipped.Load(), tt.want)
			}
			if n := strings.Count(logs.String(), "goroutine profile skipped"); n != min(tt.want, 1) {
				t.Errorf("logged the skip %d times, want %d:\n%s", n, min(tt.want, 1), logs.String())
			}
		})
	}
	c, err := New(Config{Profiles: []string{Goroutine}})
	if err != nil {
		t.Fatal(err)
	}
	if c.maxGoroutines != DefaultMaxGoroutines {
		t.Errorf("zero MaxGoroutines gives a limit of %d, want DefaultMaxGoroutines", c.maxGoroutines)
	}
}

// findName returns the named profile of w, or nil.
func findName(w Window, name string) *pprofdecode.Profile {
	for _, p := range w.Profiles {
		if p.Name == name {
			return p.Data
		}
	}
	return nil
}

// TestIntervalSpacesOutReads checks which windows read a profile with an
// Interval (the goroutine-leak profile, fed here from the goroutine profile
// so that the test runs on any Go): the first, every nth, n the interval
// over the period rounded up, and the last; and that it comes last in its
// window, after the profiles that are read every window.
func TestIntervalSpacesOutReads(t *testing.T) {
	source := func(name string, w io.Writer) error {
		if name == GoroutineLeak {
			name = Goroutine
		}
		return RuntimeSource(name, w)
	}
	for _, tt := range []struct {
		name      string
		period    time.Duration
		intervals map[string]time.Duration
		want      string // per window, 7 by Collect and the last by Stop: x read, . not
	}{
		{"default 5 min at a 60 s period", time.Minute, nil, "x....x.x"},
		{"interval of 3 periods", time.Second, map[string]time.Duration{GoroutineLeak: 3 * time.Second}, "x..x..xx"},
		{"rounded up", time.Second, map[string]time.Duration{GoroutineLeak: 2500 * time.Millisecond}, "x..x..xx"},
		{"within one period", time.Second, map[string]time.Duration{GoroutineLeak: time.Second}, "xxxxxxxx"},
		{"no period", 0, nil, "xxxxxxxx"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(Config{Profiles: []string{Heap, GoroutineLeak}, Source: source, Window: tt.period, Intervals: tt.intervals})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			c.Start(now)
			var got strings.Builder
			for i := range len(tt.want) {
				now = now.Add(tt.period)
				var w Window
				if i == len(tt.want)-1 {
					w = c.Stop(now)
				} else {
					w = c.Collect(now)
				}
				if findName(w, GoroutineLeak) == nil {
					got.WriteByte('.')
					continue
				}
				got.WriteByte('x')
				if names := []string{w.Profiles[0].Name, w.Profiles[len(w.Profiles)-1].Name}; names[0] != Heap || names[1] != GoroutineLeak {
					t.Errorf("window %d reads %v first and last, want heap first, goroutineleak last", i, names)
				}
			}
			if got.String() != tt.want {
				t.Errorf("windows read %s, want %s", got.String(), tt.want)
			}
		})
	}
}
