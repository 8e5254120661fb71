package otlp

import (
	"bytes"
	"hash/maphash"
	"slices"
)

// keyIndex maps byte-string keys to int32 values, like a map[string]int32,
// but allocates nothing once its buffers have grown to the size of a
// window: a map[string] insert must allocate a string for every new key,
// which made the per-sample identity and stack tables cost one allocation
// per sample and window. Keys are copied into one reused arena and the map
// is keyed by their hash; entries with the same hash are chained and told
// apart by comparing the bytes.
type keyIndex struct {
	seed maphash.Seed
	// hash replaces maphash when set; tests use it to force collisions.
	hash  func([]byte) uint64
	heads map[uint64]int32 // hash -> latest entry with that hash
	ends  []int            // entry -> end of its key in arena
	prev  []int32          // entry -> earlier entry with the same hash, or -1
	vals  []int32
	arena []byte
}

func newKeyIndex() keyIndex {
	return keyIndex{seed: maphash.MakeSeed(), heads: make(map[uint64]int32)}
}

// reset forgets every key and keeps the memory, with room for an eighth
// more keys and key bytes than the last use took: a window slightly larger
// than the last would otherwise make append double a buffer, and keep it
// doubled for good.
func (x *keyIndex) reset() {
	clear(x.heads)
	x.ends = slices.Grow(x.ends[:0], len(x.ends)+len(x.ends)/8)
	x.prev = slices.Grow(x.prev[:0], len(x.prev)+len(x.prev)/8)
	x.vals = slices.Grow(x.vals[:0], len(x.vals)+len(x.vals)/8)
	x.arena = slices.Grow(x.arena[:0], len(x.arena)+len(x.arena)/8)
}

func (x *keyIndex) key(e int32) []byte {
	start := 0
	if e > 0 {
		start = x.ends[e-1]
	}
	return x.arena[start:x.ends[e]]
}

// lookup returns the value of key, or adds key with value v and returns v.
// found tells which.
func (x *keyIndex) lookup(key []byte, v int32) (val int32, found bool) {
	var h uint64
	if x.hash != nil {
		h = x.hash(key)
	} else {
		h = maphash.Bytes(x.seed, key)
	}
	head, ok := x.heads[h]
	if ok {
		for e := head; e >= 0; e = x.prev[e] {
			if bytes.Equal(x.key(e), key) {
				return x.vals[e], true
			}
		}
	} else {
		head = -1
	}
	e := int32(len(x.vals))
	x.arena = append(x.arena, key...)
	x.ends = append(x.ends, len(x.arena))
	x.prev = append(x.prev, head)
	x.vals = append(x.vals, v)
	x.heads[h] = e
	return v, false
}
