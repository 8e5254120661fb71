package offcpu

import (
	"bytes"
	"runtime/trace"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/waittest"
)

// TestChunksReadEachGenerationOnce reads one flight recorder three times,
// as a stretch does, and checks that every read hands on only the
// generations after the last one read, whole and in order, and that each
// chunk parses on its own: together they are the trace, once.
func TestChunksReadEachGenerationOnce(t *testing.T) {
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: 10 * time.Second, MaxBytes: 64 << 20})
	if err := fr.Start(); err != nil {
		t.Fatal(err)
	}
	defer fr.Stop()
	w := newWindow(DefaultMaxWaits)
	rd := w.newReading(time.Now())
	var after uint64
	for i := range 3 {
		time.Sleep(20 * time.Millisecond)
		var buf bytes.Buffer
		c := chunkWriter{buf: &buf, after: after, limit: 64 << 20}
		if _, err := fr.WriteTo(&c); err != nil {
			t.Fatal(err)
		}
		if !c.kept() || c.full {
			t.Fatalf("read %d: kept %v, full %v; want a whole new generation", i, c.kept(), c.full)
		}
		// The ring still holds the generations read before (MinAge is
		// 10 s): only the new ones may be handed on.
		if c.first != after+1 && after != 0 || c.last < c.first {
			t.Fatalf("read %d: generations %d..%d after %d", i, c.first, c.last, after)
		}
		if c.offered != buf.Len()-traceHeaderLen {
			t.Errorf("read %d: offered %d bytes, kept %d", i, c.offered, buf.Len()-traceHeaderLen)
		}
		after = c.last
		if err := rd.read(&buf); err != nil {
			t.Fatalf("read %d does not parse on its own: %v", i, err)
		}
	}
	if covered := rd.finish(); covered < 40*time.Millisecond {
		t.Errorf("the three reads cover %v of a trace of at least 60ms", covered)
	}
}

// TestChunkLimitKeepsWholeGenerations gives a read less room than the
// flight recorder holds: it keeps the generations that fit, whole, drops
// the one that crosses the limit and all after it, says so, and what it
// kept parses.
func TestChunkLimitKeepsWholeGenerations(t *testing.T) {
	stop := pingPong(1)
	defer stop()
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: 10 * time.Second, MaxBytes: 64 << 20})
	if err := fr.Start(); err != nil {
		t.Fatal(err)
	}
	defer fr.Stop()
	var all bytes.Buffer
	first := chunkWriter{buf: &all, limit: 64 << 20}
	time.Sleep(20 * time.Millisecond)
	if _, err := fr.WriteTo(&first); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if _, err := fr.WriteTo(&first); err != nil { // a second generation
		t.Fatal(err)
	}
	var whole bytes.Buffer
	c := chunkWriter{buf: &whole, limit: 64 << 20}
	if _, err := fr.WriteTo(&c); err != nil {
		t.Fatal(err)
	}
	if c.last < c.first+1 {
		t.Fatalf("generations %d..%d; the test needs two or more", c.first, c.last)
	}
	// Room for a little less than everything: the last generation goes.
	var cut bytes.Buffer
	lc := chunkWriter{buf: &cut, limit: whole.Len() - 1}
	if _, err := fr.WriteTo(&lc); err != nil {
		t.Fatal(err)
	}
	if !lc.full || lc.last >= c.last+1 || cut.Len() >= whole.Len() {
		t.Fatalf("limited read: full %v, generations %d..%d, %d of %d bytes; want the last generation dropped",
			lc.full, lc.first, lc.last, cut.Len(), whole.Len())
	}
	if lc.offered < cut.Len()-traceHeaderLen {
		t.Errorf("offered %d bytes, fewer than the %d kept", lc.offered, cut.Len()-traceHeaderLen)
	}
	rd := newWindow(DefaultMaxWaits).newReading(time.Now())
	if err := rd.read(&cut); err != nil {
		t.Errorf("the generations kept do not parse: %v", err)
	}
	// Room for less than one generation: nothing kept.
	var none bytes.Buffer
	nc := chunkWriter{buf: &none, limit: traceHeaderLen + 10}
	if _, err := fr.WriteTo(&nc); err != nil {
		t.Fatal(err)
	}
	if nc.kept() || !nc.full || nc.first != 0 || nc.last != 0 {
		t.Errorf("a read with no room kept generations %d..%d (%d bytes), full %v", nc.first, nc.last, none.Len(), nc.full)
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
	time.Sleep(time.Second)
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
	time.Sleep(300 * time.Millisecond)
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
