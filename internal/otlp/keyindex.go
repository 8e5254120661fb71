package otlp

import (
	"hash/maphash"

	"github.com/pprofotel/profiler/internal/hashindex"
)

// keyIndex numbers byte-string keys in the order they are added, hashing
// them with maphash (see hashindex.Keys).
type keyIndex struct {
	seed maphash.Seed
	// hash replaces maphash when set; tests use it to force collisions.
	hash func([]byte) uint64
	keys hashindex.Keys
}

func newKeyIndex() keyIndex {
	return keyIndex{seed: maphash.MakeSeed()}
}

// reset forgets every key and keeps the memory, with room for an eighth
// more keys and key bytes than the last use took: a window slightly larger
// than the last would otherwise make append double a buffer, and keep it
// doubled for good.
func (x *keyIndex) reset() {
	n, size := x.keys.Len(), x.keys.Size()
	x.keys.Reset(n+n/8, size+size/8)
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
	e, p := x.keys.Find(h, key)
	if e >= 0 {
		return e, true
	}
	return x.keys.Add(&p, key), false
}
