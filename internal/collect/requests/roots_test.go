package requests

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRootsCompact checks the roots' growth up to the bound and no
// further, their sort, the routes moving along, and their lookup.
func TestRootsCompact(t *testing.T) {
	for _, tt := range []struct {
		name     string
		n, limit int
		id       func(rng *rand.Rand, i int) uint64
	}{
		{"none", 0, 64, nil},
		{"one", 1, 64, nil},
		{"one short of the first growth", 63, 64, nil},
		{"random", 1000, 1000, nil},
		{"random, room to spare", 1000, 1500, nil},
		{"random, many", 100_000, 1 << 17, nil},
		{"ascending", 10_000, 10_000, func(_ *rand.Rand, i int) uint64 { return uint64(i) << 8 }},
		{"descending", 10_000, 10_000, func(_ *rand.Rand, i int) uint64 { return uint64(1e6-i) << 8 }},
		{"few distinct bits", 10_000, 10_000, func(rng *rand.Rand, i int) uint64 { return uint64(i)<<32 | uint64(rng.UintN(4)) }},
		{"organ pipe", 10_000, 10_000, func(_ *rand.Rand, i int) uint64 { return uint64(min(i, 10_000-i)<<1 | i&1) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tt.n)))
			var rs roots
			want := map[uint64]uint16{}
			for i := 0; rs.len() < tt.n; i++ {
				id := rng.Uint64()
				if tt.id != nil {
					id = tt.id(rng, i)
				}
				if _, dup := want[id]; dup {
					continue
				}
				e := uint16(rng.UintN(1 << 16))
				want[id] = e
				rs.add(id, e, tt.limit)
				if cap(rs.ids) > tt.limit || cap(rs.routes) > tt.limit {
					t.Fatalf("%d roots held in a capacity of %d and %d, beyond %d", rs.len(), cap(rs.ids), cap(rs.routes), tt.limit)
				}
			}
			rs.sort()
			if !slices.IsSorted(rs.ids) {
				t.Fatal("ids not sorted")
			}
			for i, id := range rs.ids {
				if rs.routes[i] != want[id] {
					t.Fatalf("root %x has route %d, want %d", id, rs.routes[i], want[id])
				}
			}
			for id, e := range want {
				if got, ok := rs.routeOf(id); !ok || got != e {
					t.Fatalf("route of %x: %d, %v; want %d", id, got, ok, e)
				}
				if _, ok := want[id+1]; !ok {
					if got, ok := rs.routeOf(id + 1); ok {
						t.Fatalf("route of unknown %x: %d", id+1, got)
					}
				}
			}
		})
	}
}

// TestSortEqualIDs sorts roots with many equal ids, which only a broken
// SDK gives: the sort ends, in order.
func TestSortEqualIDs(t *testing.T) {
	var rs roots
	for i := range 10_000 {
		rs.add(uint64(i%3), uint16(i%3), 10_000)
	}
	rs.sort()
	for i, id := range rs.ids {
		if i > 0 && id < rs.ids[i-1] || uint64(rs.routes[i]) != id {
			t.Fatalf("root %d: id %d, route %d, after %d", i, id, rs.routes[i], rs.ids[max(i-1, 0)])
		}
	}
}
