package offcpu

import (
	"bytes"
	"io"
	"runtime/trace"
	"slices"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/testutil/polltest"
	"github.com/pprofotel/profiler/internal/testutil/waittest"
)

// TestSinkHandsOverWholeGenerations subscribes a sink to the execution
// trace as a stretch does and takes from it three times: each take hands
// over the generations the runtime completed since the last, whole, and
// each parses on its own after the header: together they are the trace,
// once.
func TestSinkHandsOverWholeGenerations(t *testing.T) {
	sink := newTraceSink(64<<20, 64<<20, [2][]byte{})
	if err := trace.Start(sink); err != nil {
		t.Fatal(err)
	}
	w := newWindow(DefaultMaxWaits, SampleType)
	rd := w.newReading(time.Now())
	takes := 0
	for range 3 {
		waittest.InSleep(20 * time.Millisecond)
		// Only the runtime ends a generation while the trace runs, about
		// every second: wait for one.
		<-sink.ready
		header, gens := sink.take()
		if gens == nil {
			t.Fatal("ready, but no generation to take")
		}
		if string(header[:3]) != "go " || gens[len(gens)-1] != evEndOfGeneration {
			t.Fatalf("take %d: header %q, last byte %d: not whole generations after a header", takes, header, gens[len(gens)-1])
		}
		if err := rd.read(io.MultiReader(bytes.NewReader(header), bytes.NewReader(gens))); err != nil {
			t.Fatalf("take %d does not parse on its own: %v", takes, err)
		}
		takes++
	}
	trace.Stop()
	if dropped, offered := sink.close(); dropped || offered != sink.kept {
		t.Errorf("dropped %v, offered %d, kept %d; want all kept", dropped, offered, sink.kept)
	}
	if _, gens := sink.take(); gens != nil {
		if err := rd.read(io.MultiReader(bytes.NewReader(sink.header), bytes.NewReader(gens))); err != nil {
			t.Fatalf("the last generation does not parse: %v", err)
		}
	}
	if got := waited(w.build(new(built), time.Now(), time.Now().Add(time.Hour), 1), "InSleep")["sleep"]; got < 40*time.Millisecond {
		t.Errorf("the takes hold %v of sleep, want at least the 40ms of two whole sleeps", got)
	}
}

// TestSinkLimitKeepsWholeGenerations writes batches to a sink by hand: it
// asks for the stretch's end once soft bytes are kept, keeps the
// generations that fit its limit, drops whole the one that crosses it and
// everything after, and ignores every write once closed.
func TestSinkLimitKeepsWholeGenerations(t *testing.T) {
	batch := func(n int) []byte { return bytes.Repeat([]byte{1}, n) }
	end := []byte{evEndOfGeneration}
	s := newTraceSink(150, 250, [2][]byte{})
	for _, b := range [][]byte{[]byte("go 1.26 trace\x00\x00\x00"), batch(100), end} {
		s.Write(b)
	}
	if s.isFull() || len(s.ready) != 1 {
		t.Fatalf("after one generation of 101 bytes: full %v, %d signals; want not full, one", s.isFull(), len(s.ready))
	}
	<-s.ready
	s.Write(batch(60)) // 161 kept: past soft
	if !s.isFull() || len(s.ready) != 1 {
		t.Fatalf("past soft: full %v, %d signals", s.isFull(), len(s.ready))
	}
	s.Write(batch(60)) // 221
	s.Write(end)       // 222: a second generation, whole
	s.Write(batch(20)) // 242
	s.Write(batch(20)) // 262 > 250: the third generation is dropped
	s.Write(end)
	s.Write(batch(1)) // and all after it
	s.Write(end)
	header, gens := s.take()
	if string(header) != "go 1.26 trace\x00\x00\x00" || len(gens) != 222 || s.kept != 222 {
		t.Errorf("took %d bytes after header %q, kept %d; want the two whole generations, 222", len(gens), header, s.kept)
	}
	if _, more := s.take(); more != nil {
		t.Errorf("a second take gave %d bytes", len(more))
	}
	dropped, offered := s.close()
	if !dropped || offered != 100+1+60+60+1+20+20+1+1+1 {
		t.Errorf("close: dropped %v, offered %d", dropped, offered)
	}
	s.Write(batch(5))
	s.Write(end)
	if _, late := s.take(); late != nil || s.offered != offered {
		t.Errorf("a write after close was kept")
	}
}

// TestSinkTakesAlternateTwoBuffers takes generations one after the other
// while the sink fills: each take's bytes stay as written until the next
// take, whatever the sink writes meanwhile, and the two buffers handed on
// to the next stretch are distinct.
func TestSinkTakesAlternateTwoBuffers(t *testing.T) {
	end := []byte{evEndOfGeneration}
	s := newTraceSink(1<<20, 1<<20, [2][]byte{make([]byte, 0, 64), make([]byte, 0, 64)})
	s.Write([]byte("go 1.26 trace\x00\x00\x00"))
	var prev []byte
	for i := range byte(5) {
		body := bytes.Repeat([]byte{'a' + i}, 10)
		s.Write(body)
		s.Write(end)
		_, gens := s.take()
		next := bytes.Repeat([]byte{'A' + i}, 40)
		s.Write(next) // the next generation begins while gens is read
		want := append(append(slices.Clone(prev), body...), evEndOfGeneration)
		if !bytes.Equal(gens, want) {
			t.Fatalf("take %d: %q, want %q", i, gens, want)
		}
		prev = next
	}
	s.close()
	if b := s.buffers(); &b[0][:1][0] == &b[1][:1][0] {
		t.Error("the two buffers handed on share their storage")
	}
}

// TestBurstStaysWithinBudget runs the densest wait stream there is under a
// recorder with a small budget: no stretch reads more than its budget,
// the cut stretches are counted, and the window still holds waits.
func TestBurstStaysWithinBudget(t *testing.T) {
	defer SetDutyCycle(100)()
	const budget = 1 << 20
	var stats Stats
	r := Start(time.Now(), Config{Stats: &stats, MaxTraceBytes: budget})
	stop := pingPong(1)
	// Until a stretch outgrows its budget, however slowly a loaded
	// machine runs the burst.
	polltest.Until(t, "a stretch cut", func() bool { return stats.Truncated.Load() > 0 })
	stop()
	p, err := r.Collect(time.Now(), true)
	if err != nil {
		t.Fatal(err)
	}
	if r.maxRead > budget {
		t.Errorf("a stretch read %d bytes, over its budget of %d", r.maxRead, budget)
	}
	if stats.Truncated.Load() == 0 {
		t.Error("no stretch counted as cut, though the trace outgrew the budget")
	}
	if len(p.Samples) == 0 {
		t.Error("no waits kept from the burst")
	}
}

// TestFullWindowIsNotTraced fills a window's few waits at once: the
// stretch that filled it is cut there, the next ones are not traced at
// all, both counted, and the window keeps exactly its limit of waits.
func TestFullWindowIsNotTraced(t *testing.T) {
	defer SetDutyCycle(100)()
	const maxWaits = 3
	var stats Stats
	r := Start(time.Now(), Config{Stats: &stats, MaxWaits: maxWaits})
	for range 10 {
		waittest.InSleep(time.Millisecond)
	}
	// The stretch is read when the runtime ends a generation, or when the
	// stretch ends (at most a second): wait for the cut and the next one.
	polltest.Until(t, "the cut stretch and the next", func() bool { return stats.Truncated.Load() >= 2 })
	p, err := r.Collect(time.Now(), true)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range p.Samples {
		n += len(s.Events)
	}
	if n != maxWaits {
		t.Errorf("%d waits kept, want the limit, %d", n, maxWaits)
	}
	if got := stats.Truncated.Load(); got < 2 {
		t.Errorf("Truncated = %d, want the cut stretch and at least one not traced", got)
	}
}

// TestNoWaitSpansDroppedGenerations cuts stretch after stretch at 100 %
// by a small budget, each taking over from the one before at once, while
// a goroutine sleeps a millisecond again and again: no wait kept is
// longer than two of its longest sleeps. A stretch whose sink dropped
// generations was read only up to where they began; carried from there
// into the next stretch's trace, which finds the goroutine sleeping where
// it slept then, its wait would span all it did unseen, tens of
// milliseconds. (Between the short trace and its stretch's the gap is a
// fraction of a millisecond, over which a goroutine found sleeping where
// it slept is taken to have slept all along: two sleeps at most.)
func TestNoWaitSpansDroppedGenerations(t *testing.T) {
	defer SetDutyCycle(100)()
	var stats Stats
	r := Start(time.Now(), Config{Stats: &stats, MaxTraceBytes: 256 << 10})
	stopBurst := pingPong(1)
	done, longest := make(chan struct{}), make(chan time.Duration)
	go func() {
		var most time.Duration
		for {
			select {
			case <-done:
				longest <- most
				return
			default:
			}
			t0 := time.Now()
			waittest.InSleep(time.Millisecond)
			most = max(most, time.Since(t0))
		}
	}()
	polltest.Until(t, "ten stretches cut", func() bool { return stats.Truncated.Load() >= 10 })
	p, err := r.Collect(time.Now(), true)
	close(done)
	most := <-longest
	stopBurst()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range p.Samples {
		if !fnIn(p, s, "InSleep") {
			continue
		}
		for _, e := range s.Events {
			n++
			// The trace's clock and the goroutine's agree to well
			// within a millisecond.
			if d := time.Duration(e.Value); d > 2*most+5*time.Millisecond {
				t.Errorf("a wait of %v in the sleeps, the longest of which took %v", d, most)
			}
		}
	}
	if n == 0 {
		t.Error("no sleep kept")
	}
}
