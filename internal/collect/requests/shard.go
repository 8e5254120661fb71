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

// add appends r to a shard, and reports whether the shard now holds a
// multiple of freshBound requests: a sweep is due before the period ends.
func (s *shards) add(r *Request) (full bool) {
	sh := s.pool.Get().(*shard)
	sh.mu.Lock()
	sh.fresh = append(sh.fresh, r)
	full = len(sh.fresh)%freshBound == 0
	sh.mu.Unlock()
	s.pool.Put(sh)
	return full
}

// freshBound is the requests a shard holds at which Begin asks for a
// sweep before the period ends. Every request begun is kept until a
// sweep takes it in, and those that ended until it counts them: at a
// million requests a second, a 100 ms period would keep a hundred
// thousand for the garbage collector to mark at every cycle.
const freshBound = 1024
