package collect

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/bits"
	"slices"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/hashindex"
)

// deltaState turns successive cumulative profiles of one runtime profile
// into per-window deltas.
//
// Stacks are identified by their program counters and labels, not by pprof
// location ids: the runtime numbers locations afresh on every write, but a
// program counter names the same code for the life of the process. A
// stack's key is a 128-bit hash of its program counters (stackHash) and
// labels, so that reading a stack costs one pass over its location ids,
// with nothing written per frame.
//
// The totals reported so far live in two tables that take turns: apply
// reads the previous profile's table and writes the current profile's
// stacks, with their totals, into the other. A stack the runtime no longer
// reports is thus forgotten without a deletion pass, and once the tables
// have grown to the size of a profile, apply allocates nothing, however
// many stacks come and go.
type deltaState struct {
	// isDelta[i] tells whether sample value i is cumulative. Heap profiles
	// mix cumulative (alloc_*) and snapshot (inuse_*) values.
	isDelta []bool
	// prev holds the totals reported up to the previous profile; cur is
	// filled from it by apply and then swapped with it.
	prev, cur stackTable
	labels    []byte // the labels of the sample being applied, as bytes
	// pcTokens holds two random 64-bit tokens for every program counter
	// seen: the hash of a stack combines its frames' tokens. Program
	// counters keep their meaning for the life of the process, and there
	// are only as many as the binary has call sites, so they are never
	// forgotten.
	pcTokens  map[uint64][2]uint64
	tokenSeed [2]maphash.Seed // also hashes labels
	// locTokens holds the tokens of each location of the profile being
	// applied.
	locTokens [][2]uint64
}

// stackTable maps stack keys to the cumulative values reported for them,
// so that adding a stack allocates nothing once the buffers have grown.
type stackTable struct {
	index  hashindex.Index
	keys   [][2]uint64
	values []int64 // entry e's totals are values[e*n : e*n+n]
}

// reset empties t for a profile of the given number of samples, with room
// for as many entries as like holds and an eighth more, so that a table
// filled for a profile like the last one, or slightly larger, does not
// grow.
func (t *stackTable) reset(samples int, like *stackTable) {
	t.index.Reset(samples)
	t.keys = slices.Grow(t.keys[:0], len(like.keys)+len(like.keys)/8)
	t.values = slices.Grow(t.values[:0], len(like.values)+len(like.values)/8)
}

// find returns the entry of key k, or -1 and where to add it.
func (t *stackTable) find(k [2]uint64) (int32, hashindex.Probe) {
	// k is a hash already.
	p := t.index.Probe(k[0])
	for e := t.index.Next(&p); e >= 0; e = t.index.Next(&p) {
		if t.keys[e] == k {
			return e, p
		}
	}
	return -1, p
}

// add adds key k where find stopped, as the next entry.
func (t *stackTable) add(p *hashindex.Probe, k [2]uint64) {
	t.index.Insert(p, int32(len(t.keys)))
	t.keys = append(t.keys, k)
}

// newDeltaState returns the state for a profile whose values at the given
// indices are cumulative.
func newDeltaState(numValues int, cumulative ...int) *deltaState {
	isDelta := make([]bool, numValues)
	for _, i := range cumulative {
		isDelta[i] = true
	}
	return &deltaState{
		isDelta:   isDelta,
		pcTokens:  make(map[uint64][2]uint64),
		tokenSeed: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
	}
}

// reset forgets every reported total, so that the next profile becomes the
// baseline.
func (d *deltaState) reset() {
	d.prev.reset(0, &stackTable{})
}

// apply rewrites p in place: cumulative values become the change since the
// previous call, and samples whose values are all zero are removed. The
// first call after reset records the baseline; what it leaves in p is what
// the runtime reported since the program started. Stacks may be packed
// (pprofdecode.Decoder.DeferLocations); those apply keeps stay packed.
//
// A cumulative value that is lower than what was already reported cannot
// come from the runtime's own counters, which only grow; it would come from
// a changed sampling rate. Such a value is reported as zero and the earlier
// total is kept as the baseline, so that no window is negative and the sum
// of all windows still equals the runtime's final total.
//
// apply returns an error, and leaves the reported totals as they were, if
// a packed stack references a location p does not have.
func (d *deltaState) apply(p *pprofdecode.Profile) error {
	if len(p.SampleTypes) != len(d.isDelta) {
		// A profile of another shape than expected (a future runtime):
		// report it as it is rather than subtract mismatched values.
		return nil
	}
	d.tokenize(p.Locations)
	d.cur.reset(len(p.Samples), &d.prev)
	merged, err := d.merge(p.Samples)
	if err != nil {
		return err
	}
	kept := d.subtract(merged)
	clear(p.Samples[len(kept):])
	p.Samples = kept
	d.prev, d.cur = d.cur, d.prev
	return nil
}

// tokenize sets locTokens to the tokens of locs' addresses, in order.
func (d *deltaState) tokenize(locs []pprofdecode.Location) {
	d.locTokens = d.locTokens[:0]
	for i := range locs {
		pc := locs[i].Address
		t, ok := d.pcTokens[pc]
		if !ok {
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], pc)
			t = [2]uint64{maphash.Bytes(d.tokenSeed[0], b[:]), maphash.Bytes(d.tokenSeed[1], b[:])}
			d.pcTokens[pc] = t
		}
		d.locTokens = append(d.locTokens, t)
	}
}

// merge sums the samples of the same stack, in place, and enters each
// stack into cur with the totals prev had for it: entry e of cur is
// merged sample e. The runtime writes each stack once today, but
// subtracting per occurrence would be wrong if it ever split one.
func (d *deltaState) merge(samples []pprofdecode.Sample) ([]pprofdecode.Sample, error) {
	n := len(d.isDelta)
	cur, prev := &d.cur, &d.prev
	merged := samples[:0]
	var guess int32
	for i := range samples {
		s := samples[i]
		if len(s.Values) != n {
			continue
		}
		k, ok := d.stackKey(&s)
		if !ok {
			return nil, fmt.Errorf("collect: sample %d references a location the profile does not have", i)
		}
		e, at := cur.find(k)
		if e >= 0 {
			dst := merged[e].Values
			for j, v := range s.Values {
				dst[j] += v
			}
			continue
		}
		cur.add(&at, k)
		// The runtime writes its stacks in the same order every time,
		// so the entry after the last one found is likely the one.
		var pe int32
		if int(guess) < len(prev.keys) && prev.keys[guess] == k {
			pe = guess
		} else {
			pe, _ = prev.find(k)
		}
		if pe >= 0 {
			guess = pe + 1
			cur.values = append(cur.values, prev.values[int(pe)*n:int(pe)*n+n]...)
		} else {
			for range n {
				cur.values = append(cur.values, 0)
			}
		}
		merged = append(merged, s)
	}
	return merged, nil
}

// subtract turns each merged sample's cumulative values into what grew
// since prev, keeps the new totals in cur, and returns the samples left
// with a value other than zero. A value below the total already reported
// is sent as zero, the total kept (see apply).
func (d *deltaState) subtract(merged []pprofdecode.Sample) []pprofdecode.Sample {
	n := len(d.isDelta)
	kept := merged[:0]
	for i, s := range merged {
		totals := d.cur.values[i*n : i*n+n]
		nonZero := false
		for j, v := range s.Values {
			if d.isDelta[j] {
				diff := v - totals[j]
				if diff < 0 {
					diff = 0
				} else {
					totals[j] = v
				}
				s.Values[j] = diff
			}
			if s.Values[j] != 0 {
				nonZero = true
			}
		}
		if nonZero {
			kept = append(kept, s)
		}
	}
	return kept
}

// stackKey returns the identity of s: the hash of its program counters
// and, if it has labels, of them too. It reports false if a packed stack
// is malformed or references a location the profile does not have.
func (d *deltaState) stackKey(s *pprofdecode.Sample) ([2]uint64, bool) {
	h, ok := stackHash(d.locTokens, s)
	if len(s.Labels) == 0 || !ok {
		return h, ok
	}
	d.labels = appendLabels(d.labels[:0], s.Labels)
	return [2]uint64{
		mix(h[0] ^ maphash.Bytes(d.tokenSeed[0], d.labels)),
		mix(h[1] ^ maphash.Bytes(d.tokenSeed[1], d.labels)),
	}, true
}

// appendLabels appends labels in a form that tells every label set apart.
func appendLabels(b []byte, labels []pprofdecode.Label) []byte {
	for i := range labels {
		l := &labels[i]
		b = appendString(b, l.Key)
		if l.IsNum {
			b = append(b, 'n')
			b = binary.LittleEndian.AppendUint64(b, uint64(l.Num))
			b = appendString(b, l.NumUnit)
		} else {
			b = append(b, 's')
			b = appendString(b, l.Str)
		}
	}
	return b
}

// stackHash returns the 128-bit hash of a stack: two independent 64-bit
// lanes, each folding in its own random token of every frame's program
// counter, in order, through a step that is invertible for a given token
// (xor, rotate, multiply by an odd constant), then the frame count. Stacks
// of one length that differ in a single frame therefore never share a
// lane's value; others share both lanes with a probability of the order of
// 2^-128 (the tokens are random per process), far below anything a process
// could meet in its life, even with a million stacks a window. Identifying
// stacks by a hash rather than by their program counters written out, as
// dd-trace-go's fastdelta also does, writes nothing per frame: this is the
// innermost loop of apply.
//
// A packed stack is read straight from its location ids, which the runtime
// numbers 1..len(locTokens).
func stackHash(locTokens [][2]uint64, s *pprofdecode.Sample) ([2]uint64, bool) {
	h0, h1 := uint64(0x243f6a8885a308d3), uint64(0x13198a2e03707344)
	frames := 0
	if s.PackedLocations == nil {
		for _, li := range s.Locations {
			if uint(li) >= uint(len(locTokens)) {
				return [2]uint64{}, false
			}
			h0, h1 = fold(h0, h1, &locTokens[li])
		}
		frames = len(s.Locations)
	} else {
		b := s.PackedLocations
		for pos := 0; pos < len(b); frames++ {
			c := b[pos]
			id := uint(c)
			pos++
			if c >= 0x80 {
				if pos < len(b) && b[pos] < 0x80 {
					id = uint(c&0x7f) | uint(b[pos])<<7
					pos++
				} else { // more than 16,383 locations
					v, n := binary.Uvarint(b[pos-1:])
					if n <= 0 {
						return [2]uint64{}, false
					}
					id = uint(v)
					pos += n - 1
				}
			}
			if id-1 >= uint(len(locTokens)) { // id 0 wraps around
				return [2]uint64{}, false
			}
			h0, h1 = fold(h0, h1, &locTokens[id-1])
		}
	}
	return [2]uint64{mix(h0 ^ uint64(frames)), mix(h1 ^ uint64(frames))}, true
}

// fold is stackHash's step: it folds a frame's tokens into the two lanes.
func fold(h0, h1 uint64, t *[2]uint64) (uint64, uint64) {
	return bits.RotateLeft64(h0^t[0], 29) * 0x9fb21c651e98df25,
		bits.RotateLeft64(h1^t[1], 31) * 0xff51afd7ed558ccd
}

// mix is the final step of MurmurHash3's 64-bit hash: it spreads every bit
// of x over the result, which the multiply steps of stackHash leave to the
// high bits.
func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// appendUvarint appends v as a varint, the one-byte form inline.
func appendUvarint(b []byte, v uint64) []byte {
	if v < 1<<7 {
		return append(b, byte(v))
	}
	return binary.AppendUvarint(b, v)
}

func appendString(b []byte, s string) []byte {
	return append(appendUvarint(b, uint64(len(s))), s...)
}
