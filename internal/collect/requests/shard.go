package requests

import (
	"runtime"
	"sync"
	_ "unsafe" // go:linkname
)

// shard holds the requests begun on one P since the last sweep. Begin
// appends to the shard of the P it runs on, so that the lock and the
// slice it touches stay in that core's cache: no cache line is shared by
// every request.
type shard struct {
	mu    sync.Mutex
	fresh []*Request
	// spare is the slice the sweep gave back, owned by the sweep
	// (sweepMu).
	spare []*Request
	_     [128 - 56]byte // a shard per pair of cache lines
}

// newShards returns one shard per P, a power of two of them.
func newShards() []shard {
	n := 1
	for n < runtime.GOMAXPROCS(0) {
		n *= 2
	}
	return make([]shard, n)
}

// procPin and procUnpin are the runtime's own, behind sync.Pool's per-P
// caches; the runtime keeps them for packages outside the standard
// library (go.dev/issue/67401). Begin only reads the P's number: the
// goroutine may move to another P at once, which costs a shared lock,
// never a wrong result.
//
//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// mine returns the shard of the calling goroutine's P.
func mine(shards []shard) *shard {
	p := procPin()
	procUnpin()
	return &shards[p&(len(shards)-1)]
}
