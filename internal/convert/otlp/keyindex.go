package otlp

import (
	"bytes"
	"hash/maphash"
	"slices"

	"github.com/pprofotel/profiler/internal/hashindex"
)

// keyIndex numbers byte-string keys in the order they are added, like a
// map[string]int32 whose values count up from 0, but allocates nothing once
// its buffers have grown to the size of a window: a map[string] insert must
// allocate a string for every new key. Keys are copied into one reused
// arena and found through a hashindex.Index of their maphash hashes.
type keyIndex struct {
	seed maphash.Seed
	// hash replaces maphash when set; tests use it to force collisions.
	hash  func([]byte) uint64
	index hashindex.Index
	ends  []int // key number -> end of the key in arena
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
	n := len(x.ends) + len(x.ends)/8
	x.index.Reset(n)
	x.ends = slices.Grow(x.ends[:0], n)
	x.arena = slices.Grow(x.arena[:0], len(x.arena)+len(x.arena)/8)
}

// key returns key number e.
func (x *keyIndex) key(e int32) []byte {
	start := 0
	if e > 0 {
		start = x.ends[e-1]
	}
	return x.arena[start:x.ends[e]]
}

// lookup returns the number of key, adding it as the next number if it is
// new. found tells which.
func (x *keyIndex) lookup(key []byte) (num int32, found bool) {
	var h uint64
	if x.hash != nil {
		h = x.hash(key)
	} else {
		h = maphash.Bytes(x.seed, key)
	}
	p := x.index.Probe(h)
	for e := x.index.Next(&p); e >= 0; e = x.index.Next(&p) {
		if bytes.Equal(x.key(e), key) {
			return e, true
		}
	}
	e := int32(len(x.ends))
	x.arena = append(x.arena, key...)
	x.ends = append(x.ends, len(x.arena))
	x.index.Insert(&p, e)
	return e, false
}
