package otlp

import (
	"bytes"
	"hash/maphash"
	"slices"

	"github.com/pprofotel/profiler/internal/hashindex"
)

// keyIndex maps byte-string keys to int32 values, like a map[string]int32,
// but allocates nothing once its buffers have grown to the size of a
// window: a map[string] insert must allocate a string for every new key.
// Keys are copied into one reused arena and indexed by their hash.
type keyIndex struct {
	seed maphash.Seed
	// hash replaces maphash when set; tests use it to force collisions.
	hash  func([]byte) uint64
	index hashindex.Index
	ends  []int // entry -> end of its key in arena
	vals  []int32
	arena []byte
}

func newKeyIndex() keyIndex {
	return keyIndex{seed: maphash.MakeSeed()}
}

// reset forgets every key and keeps the memory, with room for an eighth
// more keys and key bytes than the last use took: a window slightly larger
// than the last would otherwise make append double a buffer, and keep it
// doubled for good.
func (x *keyIndex) reset() {
	n := len(x.vals) + len(x.vals)/8
	x.index.Reset(n)
	x.ends = slices.Grow(x.ends[:0], n)
	x.vals = slices.Grow(x.vals[:0], n)
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
	p := x.index.Probe(h)
	for e := x.index.Next(&p); e >= 0; e = x.index.Next(&p) {
		if bytes.Equal(x.key(e), key) {
			return x.vals[e], true
		}
	}
	e := int32(len(x.vals))
	x.arena = append(x.arena, key...)
	x.ends = append(x.ends, len(x.arena))
	x.vals = append(x.vals, v)
	x.index.Insert(&p, e)
	return v, false
}
