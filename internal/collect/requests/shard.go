package requests

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// shard holds requests begun since the last sweep. Begin takes a shard
// from a sync.Pool, whose fast path keeps one object per P, so that the
// lock and the slice it touches mostly stay in one core's cache: no cache
// line is shared by every request.
type shard struct {
	mu    sync.Mutex
	fresh []*Request
	// spare is the slice the sweep gave back, owned by the sweep
	// (sweepMu).
	spare []*Request
	_     [128 - 56]byte // a shard per pair of cache lines
}

// shards are a Tracker's shards: a fixed set, which the sweep drains,
// handed out through a pool. The pool may drop what it holds at a
// garbage collection; it then hands out the fixed shards again in turn,
// so that a shard is never lost to the sweep, at worst shared by two Ps.
type shards struct {
	all  []shard
	next atomic.Uint32 // the shard the pool hands out when empty
	pool sync.Pool
}

// newShards returns shards for twice as many Ps as the process has.
func newShards() *shards {
	s := &shards{all: make([]shard, 2*runtime.GOMAXPROCS(0))}
	s.pool.New = func() any {
		return &s.all[int(s.next.Add(1)-1)%len(s.all)]
	}
	return s
}

// add appends r to a shard.
func (s *shards) add(r *Request) {
	sh := s.pool.Get().(*shard)
	sh.mu.Lock()
	sh.fresh = append(sh.fresh, r)
	sh.mu.Unlock()
	s.pool.Put(sh)
}
