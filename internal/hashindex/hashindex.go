// Package hashindex is an open-addressing index from 64-bit hashes to entry
// numbers, for the tables of the profiler that have an entry per sample or
// stack and are rebuilt every window. The owner of an Index keeps the keys
// and tells them apart; the index only finds the entries whose hash may
// match.
//
// It does what a map[uint64]int32 with colliding entries chained does, for
// less: with thousands of keys, each map access costs a cache miss or two
// in the map's groups, and adding a key after looking it up costs a second
// access. A slot here is eight bytes holding an entry and the top half of
// its hash, so a probe that meets no key or another key reads one cache
// line, and a key that is not found is added where its lookup stopped.
package hashindex

import "math/bits"

// entryBits is the low half of a slot, which holds its entry plus one (0
// is an empty slot); the high half holds the top 32 bits of the hash.
const entryBits = 1<<32 - 1

// minSlots is the size of the smallest table.
const minSlots = 8

// Index maps hashes to entries. The zero value is an empty index.
type Index struct {
	slots []uint64
	// shift turns a hash into its home slot: the top bits index the
	// table, so that the hash half a slot keeps is enough to move it
	// when the table grows.
	shift uint
	n     int
}

// Len returns the number of entries.
func (x *Index) Len() int { return x.n }

// Reset empties x and makes room for n entries: adding that many does not
// allocate. The memory is kept, so refilling a table of the same size
// never allocates.
func (x *Index) Reset(n int) {
	// At most half full, so that probes stay short.
	size := minSlots
	for size < 2*n {
		size *= 2
	}
	if len(x.slots) < size {
		x.slots = make([]uint64, size)
		x.shift = 64 - uint(bits.TrailingZeros(uint(size)))
	} else {
		clear(x.slots)
	}
	x.n = 0
}

// Probe is a lookup in progress: the slots from a hash's home slot up to
// the first empty one.
type Probe struct {
	pos uint64
	tag uint64 // the top 32 bits of the hash, in place
}

// Probe starts the lookup of hash h.
func (x *Index) Probe(h uint64) Probe {
	tag := h &^ entryBits
	// In a zero Index pos means nothing: Next finds nothing there, and
	// Insert grows the table and places the entry anew.
	return Probe{pos: tag >> x.shift, tag: tag}
}

// Next returns the next entry of p whose hash has the same top 32 bits as
// p's, or -1 when p has reached an empty slot, where Insert can add the
// key.
func (x *Index) Next(p *Probe) int32 {
	if len(x.slots) == 0 {
		return -1
	}
	mask := uint64(len(x.slots) - 1)
	for {
		s := x.slots[p.pos&mask]
		if s == 0 {
			return -1
		}
		p.pos = (p.pos + 1) & mask
		if s&^entryBits == p.tag {
			return int32(s&entryBits - 1)
		}
	}
}

// Insert adds entry e, whose key the caller has not found, at the empty
// slot where p stopped: Next must have returned -1 for p, and nothing may
// have been added to x since. e must not be negative.
func (x *Index) Insert(p *Probe, e int32) {
	if 2*(x.n+1) > len(x.slots) {
		x.grow()
		p.pos = p.tag >> x.shift
		for x.Next(p) >= 0 {
		}
	}
	x.slots[p.pos] = p.tag | (uint64(e) + 1)
	x.n++
}

// grow doubles the table, moving every slot to its home in the new one.
func (x *Index) grow() {
	old := x.slots
	size := max(minSlots, 2*len(old))
	x.slots = make([]uint64, size)
	x.shift = 64 - uint(bits.TrailingZeros(uint(size)))
	mask := uint64(size - 1)
	for _, s := range old {
		if s == 0 {
			continue
		}
		// The entry, in the low half, shifts out: shift is at least
		// 32, as no table has 2^32 slots.
		i := s >> x.shift
		for x.slots[i] != 0 {
			i = (i + 1) & mask
		}
		x.slots[i] = s
	}
}

// Mix returns hash h extended with v. It hashes keys made of integers, such
// as the location indices of a stack, without writing them out as bytes
// first. Multiplying by an odd constant is a bijection, and carries every
// bit of h^v into the top bits, those an Index uses; keys are compared
// anyway, so hashes need only spread well, not resist collisions.
func Mix(h, v uint64) uint64 {
	return (h ^ v) * 0x9e3779b97f4a7c15
}
