package hashindex

import (
	"bytes"
	"slices"
)

// Keys numbers byte-string keys in the order they are added, like a
// map[string]int32 whose values count up from 0, but allocates nothing once
// its buffers have grown to the size of a window: a map[string] insert must
// allocate a string for every new key. Keys are copied into one reused
// arena and found through an Index of their hashes, which the caller
// computes. The zero value is empty and ready to use.
type Keys struct {
	index Index
	ends  []int // key number -> end of the key in arena
	arena []byte
}

// Reset forgets every key and keeps the memory, with room for n keys of
// size bytes in all: adding that many allocates nothing.
func (k *Keys) Reset(n, size int) {
	k.index.Reset(n)
	k.ends = slices.Grow(k.ends[:0], n)
	k.arena = slices.Grow(k.arena[:0], size)
}

// Len returns the number of keys.
func (k *Keys) Len() int { return len(k.ends) }

// Size returns the number of bytes of all keys.
func (k *Keys) Size() int { return len(k.arena) }

// Key returns key number e. It is valid until the next Reset.
func (k *Keys) Key(e int32) []byte {
	start := 0
	if e > 0 {
		start = k.ends[e-1]
	}
	return k.arena[start:k.ends[e]]
}

// Find returns the number of key, whose hash is h, or -1 with the probe at
// which Add adds it.
func (k *Keys) Find(h uint64, key []byte) (int32, Probe) {
	p := k.index.Probe(h)
	for e := k.index.Next(&p); e >= 0; e = k.index.Next(&p) {
		if bytes.Equal(k.Key(e), key) {
			return e, p
		}
	}
	return -1, p
}

// Add adds key, which Find has just not found at p, as the next number,
// and returns that number.
func (k *Keys) Add(p *Probe, key []byte) int32 {
	e := int32(len(k.ends))
	k.arena = append(k.arena, key...)
	k.ends = append(k.ends, len(k.arena))
	k.index.Insert(p, e)
	return e
}
