package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
)

// record is one entry of the service's cache. Its size (about 1 KiB with
// the map and slice headers) and pointer-rich shape make the garbage
// collector walk a heap that looks like a real service's: maps, strings,
// slices of floats and byte payloads.
type record struct {
	ID      int
	Name    string
	Tags    []string
	Scores  []float64
	Payload []byte
	Attrs   map[string]string
}

// cacheShards spreads the records over several locks, as a real cache
// would, so that contention is occasional rather than total.
const cacheShards = 16

type shard struct {
	mu      sync.RWMutex
	records map[int]*record
}

// cache is the service's live heap: tens of MB that survive every garbage
// collection, so the GC target is set by the application and not by
// whatever the profiler retains.
type cache struct {
	shards [cacheShards]shard
	size   int
}

// recordBytes is roughly what one record retains; newCache uses it to turn
// a size in MB into a number of records.
const recordBytes = 1100

func newCache(liveMB int) *cache {
	n := liveMB << 20 / recordBytes
	c := &cache{size: n}
	for i := range c.shards {
		c.shards[i].records = make(map[int]*record, n/cacheShards+1)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for id := range n {
		c.shards[id%cacheShards].records[id] = newRecord(id, rng)
	}
	return c
}

func newRecord(id int, rng *rand.Rand) *record {
	r := &record{
		ID:      id,
		Name:    "record-" + strconv.Itoa(id),
		Tags:    make([]string, 4),
		Scores:  make([]float64, 32),
		Payload: make([]byte, 512),
		Attrs:   make(map[string]string, 4),
	}
	for i := range r.Tags {
		r.Tags[i] = "tag-" + strconv.Itoa(rng.IntN(1000))
	}
	for i := range r.Scores {
		r.Scores[i] = rng.Float64()
	}
	for i := 0; i < len(r.Payload); i += 8 {
		binary.LittleEndian.PutUint64(r.Payload[i:], rng.Uint64())
	}
	for i := range 4 {
		r.Attrs["k"+strconv.Itoa(i)] = strconv.Itoa(rng.IntN(1 << 20))
	}
	return r
}

func (c *cache) get(id int) (record, bool) {
	s := &c.shards[id%cacheShards]
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.records[id]
	if !ok {
		return record{}, false
	}
	return *r, true
}

// replace swaps a record for a freshly built one, building it under the
// write lock so that readers of the shard wait: this is the lock
// contention the mutex profile sees.
func (c *cache) replace(id int, seed uint64) {
	s := &c.shards[id%cacheShards]
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[id] = newRecord(id, rand.New(rand.NewPCG(seed, uint64(id))))
}

// job is a unit of work handed to the worker pool over a channel; the
// handler blocks on done, which is what the block profile sees.
type job struct {
	data []byte
	done chan [32]byte
}

// service is the HTTP service under test.
type service struct {
	cache *cache
	jobs  chan job
	// hashRounds is the number of 512-byte payloads each request hashes:
	// the knob for how much CPU a request costs.
	hashRounds int
}

func newService(liveMB, workers, hashRounds int) *service {
	s := &service{cache: newCache(liveMB), jobs: make(chan job), hashRounds: hashRounds}
	for range workers {
		go s.worker()
	}
	return s
}

func (s *service) worker() {
	for j := range s.jobs {
		sum := sha256.Sum256(j.data)
		for range 8 {
			sum = sha256.Sum256(sum[:])
		}
		j.done <- sum
	}
}

// response is what /work returns.
type response struct {
	ID     int      `json:"id"`
	Name   string   `json:"name"`
	Tags   []string `json:"tags"`
	Top    []float64
	Digest string `json:"digest"`
	Pooled string `json:"pooled,omitempty"`
}

// ServeHTTP handles /work?k=KEY&n=SEQ. Every request reads a record, does
// some CPU work and allocates its response; every 8th also replaces a
// record (write lock, retained allocation) and every 4th hands work to the
// pool over a channel. The handler reaches the work through a recursion
// whose depth depends on the key, so the profiles hold a few dozen
// distinct stacks rather than one.
func (s *service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k, err1 := strconv.Atoi(r.URL.Query().Get("k"))
	n, err2 := strconv.Atoi(r.URL.Query().Get("n"))
	if err1 != nil || err2 != nil || k < 0 {
		http.Error(w, "want /work?k=KEY&n=SEQ", http.StatusBadRequest)
		return
	}
	resp, ok := s.descend(k%s.cache.size, n, 2+k%12)
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

//go:noinline
func (s *service) descend(k, n, depth int) (*response, bool) {
	if depth > 0 {
		return s.descend(k, n, depth-1)
	}
	return s.handle(k, n)
}

func (s *service) handle(k, n int) (*response, bool) {
	rec, ok := s.cache.get(k)
	if !ok {
		return nil, false
	}
	resp := &response{ID: rec.ID, Name: rec.Name, Tags: rec.Tags}

	// CPU: hash the payload, chained, and rank the scores.
	h := sha256.New()
	var sum [32]byte
	for range s.hashRounds {
		h.Write(rec.Payload)
		h.Write(sum[:])
		h.Sum(sum[:0])
	}
	resp.Digest = fmt.Sprintf("%x", sum[:8])
	top := slices.Clone(rec.Scores)
	slices.Sort(top)
	resp.Top = top[len(top)-4:]

	if n%8 == 0 {
		s.cache.replace(k, uint64(n))
	}
	if n%4 == 0 {
		j := job{data: rec.Payload, done: make(chan [32]byte, 1)}
		s.jobs <- j
		pooled := <-j.done
		resp.Pooled = fmt.Sprintf("%x", pooled[:8])
	}
	return resp, true
}
