// Package gen drives the Go runtime's heap, mutex and block profiles to the
// size of a large production service, so that profiler costs are measured
// on realistic input: thousands of distinct stacks, 20 to 60 frames deep,
// every frame a location with an inlined call.
//
// The stacks are made of 64 generated functions (funcs_gen.go). Stack i
// calls, at level l, the function picked by the l-th base-64 digit of i for
// the first three levels (so stacks are distinct up to 262,144 of them) and
// by a fixed mix of i and l below. It has 20 + i%41 levels, each a
// generated function with the inlined walker.next: 20 to 60 locations (40
// to 120 frames counting the inlined calls), plus the few of the leaf and
// of the caller.
package gen

//go:generate go run mkfuncs.go

import (
	"context"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"
)

// Config sets how many distinct stacks each profile gets.
type Config struct {
	HeapStacks  int // allocation sites
	MutexStacks int // sync.Mutex unlocks that ended contention
	BlockStacks int // channel receives that blocked
}

// Large is the source the benchmarks use: a heap profile of about 1 MB
// (raw protobuf) with some 6,900 stacks, as in the issue, and a couple of
// thousand contended mutex and blocking stacks.
var Large = Config{HeapStacks: 6900, MutexStacks: 2000, BlockStacks: 2000}

const (
	kindHeap = iota
	kindMutex
	kindBlock
)

var kindNames = [...]string{"heap", "mutex", "block"}

// Source owns the generated runtime state. Its allocations stay live, one
// per heap stack, so the live heap has a constant size whatever the number
// of windows.
//
// Every stack runs on one goroutine the Source starts, whoever calls
// Advance: the runtime records the whole call stack, so stacks run from
// Advance's callers would be recorded again under every function that
// called it, and the profiles would hold several copies of the source.
type Source struct {
	cfg    Config
	live   [][]byte
	next   [3]int // next stack of each kind to touch
	wg     sync.WaitGroup
	prevMF int
	work   chan float64  // a fraction of the stacks to run again
	done   chan struct{} // the run asked for on work has finished
}

// New records every stack of cfg once. It enables mutex and block profiling
// at full rate (every event); Close restores the mutex fraction and turns
// block profiling off.
func New(cfg Config) *Source {
	s := &Source{cfg: cfg, live: make([][]byte, cfg.HeapStacks), work: make(chan float64), done: make(chan struct{})}
	s.prevMF = runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	go s.run()
	s.Advance(1)
	return s
}

// Close stops the Source's goroutine and restores the runtime's profiling
// rates. The Source must not be used afterwards.
func (s *Source) Close() {
	close(s.work)
	runtime.SetMutexProfileFraction(s.prevMF)
	runtime.SetBlockProfileRate(0)
}

// run runs the stacks Advance asks for, until Close.
func (s *Source) run() {
	for fraction := range s.work {
		s.runStacks(fraction)
		s.done <- struct{}{}
	}
}

// Advance is one window of activity: it runs the given fraction of each
// kind's stacks again (rotating, so successive windows touch different
// stacks), which grows their cumulative values, and ends with a garbage
// collection so that the heap profile, which reports the state as of the
// last completed cycle, shows it.
//
// The heap stacks' allocations are sampled one by one
// (runtime.MemProfileRate = 1), and only they: sampling every allocation of
// the whole process would slow down what the benchmarks measure. The
// previous rate is restored before Advance returns.
func (s *Source) Advance(fraction float64) {
	s.work <- fraction
	<-s.done
	runtime.GC()
}

// runStacks runs the given fraction of each kind's stacks, on the Source's
// goroutine.
func (s *Source) runStacks(fraction float64) {
	prevRate := runtime.MemProfileRate
	for k, n := range [...]int{s.cfg.HeapStacks, s.cfg.MutexStacks, s.cfg.BlockStacks} {
		count := min(n, int(fraction*float64(n)+0.5))
		if k == kindHeap {
			runtime.MemProfileRate = 1
		} else {
			runtime.MemProfileRate = prevRate
		}
		// Each shard runs under its own pprof labels, as request handlers
		// would; the runtime keeps labels only in the CPU and goroutine
		// profiles, so the heap, mutex and block profiles do not show them.
		pprof.Do(context.Background(), pprof.Labels("gen.kind", kindNames[k], "gen.window", strconv.Itoa(s.next[k]/max(count, 1))), func(context.Context) {
			for range count {
				newWalker(s, k, s.next[k]).next(0)
				s.next[k] = (s.next[k] + 1) % n
			}
		})
	}
	s.wg.Wait()
}

type walker struct {
	s     *Source
	kind  int
	id    int
	depth int
	path  [61]uint8 // step of each level, leafStep at depth
}

func newWalker(s *Source, kind, id int) *walker {
	w := &walker{s: s, kind: kind, id: id, depth: 20 + id%41}
	for level := range w.path {
		f := (id*31 + level*17) & 63
		if level < 3 {
			f = (id >> (6 * level)) & 63
		}
		w.path[level] = uint8(f)
	}
	w.path[w.depth] = leafStep
	return w
}

// next calls the function of the next level, or the leaf at the bottom.
// It is small enough to be inlined; the choice of function is in path,
// computed once per stack.
func (w *walker) next(level int) {
	steps[w.path[level]](w, level)
}

// steps holds the 64 generated frames and, last, the leaf. Each generated
// frame calls the next level through walker.next, which the compiler
// inlines, from one of two call sites, so every frame is a location with
// an inlined line.
var steps [65]func(*walker, int)

func init() {
	f := frameFuncs()
	copy(steps[:], f[:])
	steps[leafStep] = func(w *walker, _ int) { w.leaf() }
}

const leafStep = 64

//go:noinline
func (w *walker) leaf() {
	switch w.kind {
	case kindHeap:
		// Sizes differ per stack, as real allocation sites do.
		w.s.live[w.id] = make([]byte, 64+8*(w.id%512))
	case kindMutex:
		contend(&w.s.wg)
	case kindBlock:
		block()
	}
}

// contend holds a mutex until another goroutine waits for it, so that the
// Unlock, whose stack the mutex profile records, ends real contention.
//
//go:noinline
func contend(wg *sync.WaitGroup) {
	mu := new(sync.Mutex)
	mu.Lock()
	wg.Add(1)
	go func() {
		defer wg.Done()
		mu.Lock()
		mu.Unlock()
	}()
	// Long enough for the waiter to spin and park; a timer would round
	// this up to a millisecond.
	for start := time.Now(); time.Since(start) < 20*time.Microsecond; {
		runtime.Gosched()
	}
	mu.Unlock()
}

// block waits on a channel that a new goroutine sends on, which it usually
// does only after this receive has blocked.
//
//go:noinline
func block() {
	ch := make(chan struct{})
	go func() { ch <- struct{}{} }()
	<-ch
}
