package hashindex

import (
	"fmt"
	"testing"
)

// table is a user of an Index: it keeps its keys and compares them.
type table struct {
	x    Index
	keys []string
	hash func(string) uint64
}

func (t *table) lookup(k string) (e int32, found bool) {
	p := t.x.Probe(t.hash(k))
	for e := t.x.Next(&p); e >= 0; e = t.x.Next(&p) {
		if t.keys[e] == k {
			return e, true
		}
	}
	e = int32(len(t.keys))
	t.keys = append(t.keys, k)
	t.x.Insert(&p, e)
	return e, false
}

func TestIndex(t *testing.T) {
	tests := []struct {
		name string
		hash func(string) uint64
	}{
		{"spread", func(k string) uint64 {
			var h uint64
			for i := 0; i < len(k); i++ {
				h = Mix(h, uint64(k[i]))
			}
			return h
		}},
		// Every key has the same hash: Next must offer them all.
		{"all equal", func(string) uint64 { return 7 }},
		// Equal top halves, different bottom halves: the index sees
		// only the top half, so these collide too.
		{"equal top half", func(k string) uint64 { return 1<<40 | uint64(len(k)) }},
		// Different tags with the same home slot.
		{"same home", func(k string) uint64 { return uint64(len(k)) << 32 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := &table{hash: tt.hash} // the zero Index, grown by Insert
			for round := range 3 {
				var keys []string
				for i := range 300 {
					keys = append(keys, fmt.Sprintf("k%d-%d", i, round))
				}
				for i, k := range keys {
					if e, found := tab.lookup(k); found || e != int32(i) {
						t.Fatalf("round %d: first lookup of %s = %d, %v; want %d, false", round, k, e, found, i)
					}
				}
				for i, k := range keys {
					if e, found := tab.lookup(k); !found || e != int32(i) {
						t.Fatalf("round %d: second lookup of %s = %d, %v; want %d, true", round, k, e, found, i)
					}
				}
				if got := tab.x.Len(); got != len(keys) {
					t.Fatalf("round %d: Len = %d, want %d", round, got, len(keys))
				}
				// Reset to room for fewer keys than come next, so
				// that the table also grows while it is in use.
				tab.x.Reset(100 * round)
				tab.keys = tab.keys[:0]
				if got := tab.x.Len(); got != 0 {
					t.Fatalf("Len after Reset = %d, want 0", got)
				}
			}
		})
	}
}

func TestIndexNextFiltersByTag(t *testing.T) {
	var x Index
	x.Reset(4)
	// Two hashes with the same home slot and different top halves.
	a, b := uint64(0x00000001_00000000), uint64(0x00000002_00000000)
	pa := x.Probe(a)
	if e := x.Next(&pa); e != -1 {
		t.Fatalf("Next on an empty index = %d, want -1", e)
	}
	x.Insert(&pa, 10)
	pb := x.Probe(b)
	if e := x.Next(&pb); e != -1 {
		t.Fatalf("Next for another tag = %d, want -1 (entry 10 has another hash)", e)
	}
	x.Insert(&pb, 20)
	for _, c := range []struct {
		h    uint64
		want int32
	}{{a, 10}, {b, 20}} {
		p := x.Probe(c.h)
		if e := x.Next(&p); e != c.want {
			t.Errorf("Next for %#x = %d, want %d", c.h, e, c.want)
		}
		if e := x.Next(&p); e != -1 {
			t.Errorf("second Next for %#x = %d, want -1", c.h, e)
		}
	}
}

func TestIndexAllocatesNothingOnceSized(t *testing.T) {
	var x Index
	fill := func() {
		x.Reset(1000)
		for i := range 1000 {
			p := x.Probe(Mix(0, uint64(i)))
			for x.Next(&p) >= 0 {
			}
			x.Insert(&p, int32(i))
		}
	}
	fill()
	if n := testing.AllocsPerRun(10, fill); n != 0 {
		t.Errorf("refilling a sized Index with 1000 entries: %v allocations, want 0", n)
	}
}
