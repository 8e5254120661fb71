package collect

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"slices"

	"github.com/pprofotel/profiler/internal/profile"
)

// deltaState turns successive cumulative profiles of one runtime profile
// into per-window deltas.
//
// Stacks are identified by their program counters and labels, not by pprof
// location ids: the runtime numbers locations afresh on every write, but a
// program counter names the same code for the life of the process.
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
	seed    maphash.Seed
	// prev holds the totals reported up to the previous profile; cur is
	// filled from it by apply and then swapped with it.
	prev, cur stackTable
	key       []byte
	// pcNumbers numbers every program counter seen, in order of first
	// sight, so that a stack key holds a varint of one or two bytes per
	// frame rather than an 8-byte address. Program counters keep their
	// meaning for the life of the process, and there are only as many as
	// the binary has call sites, so the numbering is never reset.
	pcNumbers map[uint64]uint32
	// pcs holds the number of each location of the profile being applied.
	pcs []uint32
}

// stackTable maps stack keys to the cumulative values reported for them.
// Keys are kept in one arena and the map is keyed by their hash, so that
// adding a stack allocates nothing once the buffers have grown; entries
// with the same hash are chained and told apart by comparing keys.
type stackTable struct {
	heads  map[uint64]int32 // hash -> latest entry with that hash
	prev   []int32          // entry -> earlier entry with the same hash, or -1
	ends   []int            // entry -> end of its key in keys
	keys   []byte
	values []int64 // entry e's totals are values[e*n : e*n+n]
}

func (t *stackTable) reset() {
	if t.heads == nil {
		t.heads = make(map[uint64]int32)
	}
	clear(t.heads)
	t.prev = t.prev[:0]
	t.ends = t.ends[:0]
	t.keys = t.keys[:0]
	t.values = t.values[:0]
}

// reserve makes room for the entries and key bytes like holds and an
// eighth more, so that a table filled for a profile like the last one, or
// slightly larger, does not grow: growing copies all the keys.
func (t *stackTable) reserve(like *stackTable) {
	t.prev = slices.Grow(t.prev, len(like.prev)+len(like.prev)/8)
	t.ends = slices.Grow(t.ends, len(like.ends)+len(like.ends)/8)
	t.keys = slices.Grow(t.keys, len(like.keys)+len(like.keys)/8)
	t.values = slices.Grow(t.values, len(like.values)+len(like.values)/8)
}

func (t *stackTable) key(e int32) []byte {
	start := 0
	if e > 0 {
		start = t.ends[e-1]
	}
	return t.keys[start:t.ends[e]]
}

// find returns the entry of key, whose hash is h, or -1.
func (t *stackTable) find(h uint64, key []byte) int32 {
	head, ok := t.heads[h]
	if !ok {
		return -1
	}
	for e := head; e >= 0; e = t.prev[e] {
		if bytes.Equal(t.key(e), key) {
			return e
		}
	}
	return -1
}

// add appends an entry for key, whose hash is h and which must not be in
// the table yet, with the first n values of totals, or zeros if totals is
// nil.
func (t *stackTable) add(h uint64, key []byte, totals []int64, n int) {
	e := int32(len(t.ends))
	head, ok := t.heads[h]
	if !ok {
		head = -1
	}
	t.heads[h] = e
	t.prev = append(t.prev, head)
	t.keys = append(t.keys, key...)
	t.ends = append(t.ends, len(t.keys))
	if totals != nil {
		t.values = append(t.values, totals[:n]...)
	} else {
		for range n {
			t.values = append(t.values, 0)
		}
	}
}

// newDeltaState returns the state for a profile whose values at the given
// indices are cumulative.
func newDeltaState(numValues int, cumulative ...int) *deltaState {
	isDelta := make([]bool, numValues)
	for _, i := range cumulative {
		isDelta[i] = true
	}
	d := &deltaState{isDelta: isDelta, seed: maphash.MakeSeed(), pcNumbers: make(map[uint64]uint32)}
	d.prev.reset()
	d.cur.reset()
	return d
}

// reset forgets every reported total, so that the next profile becomes the
// baseline.
func (d *deltaState) reset() {
	d.prev.reset()
}

// apply rewrites p in place: cumulative values become the change since the
// previous call, and samples whose values are all zero are removed. The
// first call after reset records the baseline; what it leaves in p is what
// the runtime reported since the program started.
//
// A cumulative value that is lower than what was already reported cannot
// come from the runtime's own counters, which only grow; it would come from
// a changed sampling rate. Such a value is reported as zero and the earlier
// total is kept as the baseline, so that no window is negative and the sum
// of all windows still equals the runtime's final total.
func (d *deltaState) apply(p *profile.Profile) {
	n := len(d.isDelta)
	if len(p.SampleTypes) != n {
		// A profile of another shape than expected (a future runtime):
		// report it as it is rather than subtract mismatched values.
		return
	}
	d.pcs = d.pcs[:0]
	for i := range p.Locations {
		pc := p.Locations[i].Address
		num, ok := d.pcNumbers[pc]
		if !ok {
			num = uint32(len(d.pcNumbers))
			d.pcNumbers[pc] = num
		}
		d.pcs = append(d.pcs, num)
	}
	cur, prev := &d.cur, &d.prev
	cur.reset()
	cur.reserve(prev)

	// First merge samples of the same stack. The runtime writes each stack
	// once today, but subtracting per occurrence would be wrong if it ever
	// split one, so sum them before taking the difference. Entry e of cur
	// is merged sample e.
	merged := p.Samples[:0]
	for i := range p.Samples {
		s := p.Samples[i]
		if len(s.Values) != n {
			continue
		}
		d.key = appendStackKey(d.key[:0], d.pcs, &s)
		h := maphash.Bytes(d.seed, d.key)
		if e := cur.find(h, d.key); e >= 0 {
			dst := merged[e].Values
			for j, v := range s.Values {
				dst[j] += v
			}
			continue
		}
		var totals []int64
		if e := prev.find(h, d.key); e >= 0 {
			totals = prev.values[int(e)*n:]
		}
		cur.add(h, d.key, totals, n)
		merged = append(merged, s)
	}

	kept := merged[:0]
	for i, s := range merged {
		totals := cur.values[i*n : i*n+n]
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
	clear(p.Samples[len(kept):])
	p.Samples = kept
	d.prev, d.cur = d.cur, d.prev
}

// appendStackKey appends the identity of s: its program counters, by
// their numbers in pcs, then its labels.
func appendStackKey(key []byte, pcs []uint32, s *profile.Sample) []byte {
	// The count makes the key unambiguous: the labels start after it.
	key = binary.AppendUvarint(key, uint64(len(s.Locations)))
	for _, li := range s.Locations {
		// Numbers below 16,384 (every call site of most programs) take
		// one or two bytes, written inline.
		switch n := pcs[li]; {
		case n < 1<<7:
			key = append(key, byte(n))
		case n < 1<<14:
			key = append(key, byte(n)|0x80, byte(n>>7))
		default:
			key = binary.AppendUvarint(key, uint64(n))
		}
	}
	for _, l := range s.Labels {
		key = appendString(key, l.Key)
		if l.IsNum {
			key = append(key, 'n')
			key = binary.LittleEndian.AppendUint64(key, uint64(l.Num))
			key = appendString(key, l.NumUnit)
		} else {
			key = append(key, 's')
			key = appendString(key, l.Str)
		}
	}
	return key
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
