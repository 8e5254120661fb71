package otlp

import (
	"fmt"
	"testing"
)

func TestKeyIndex(t *testing.T) {
	for _, tc := range []struct {
		name string
		hash func([]byte) uint64
	}{
		{"maphash", nil},
		// Every key collides: lookups must tell keys apart by their bytes.
		{"all-colliding", func([]byte) uint64 { return 7 }},
		// Keys of the same length collide.
		{"by-length", func(b []byte) uint64 { return uint64(len(b)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newKeyIndex()
			x.hash = tc.hash
			for round := range 2 {
				keys := [][]byte{nil, []byte("a"), []byte("ab"), []byte("b"), []byte("ba"), {0}, {0, 0}}
				for i := range 100 {
					keys = append(keys, fmt.Appendf(nil, "k%d-%d", i, round))
				}
				// Numbers count up from 0 again after reset.
				for i, k := range keys {
					n, found := x.lookup(k)
					if found || n != int32(i) {
						t.Fatalf("round %d: first lookup of %q = %d, %v; want %d, false", round, k, n, found, i)
					}
				}
				for i, k := range keys {
					n, found := x.lookup(append([]byte(nil), k...))
					if !found || n != int32(i) {
						t.Fatalf("round %d: second lookup of %q = %d, %v; want %d, true", round, k, n, found, i)
					}
				}
				x.reset()
			}
		})
	}
}

func TestKeyIndexAllocatesNothingWhenWarm(t *testing.T) {
	x := newKeyIndex()
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "stack-%d", i)
	}
	fill := func() {
		x.reset()
		for _, k := range keys {
			x.lookup(k)
		}
	}
	fill()
	if n := testing.AllocsPerRun(10, fill); n != 0 {
		t.Errorf("refilling a warm keyIndex with %d keys: %v allocations, want 0", len(keys), n)
	}
}
