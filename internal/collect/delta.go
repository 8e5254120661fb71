package collect

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"slices"

	"github.com/pprofotel/profiler/internal/hashindex"
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
	key       []byte // the stack key of the sample being applied
	// pcNumbers numbers every program counter seen, in order of first
	// sight, so that a stack key holds a varint of one or two bytes per
	// frame rather than an 8-byte address. Program counters keep their
	// meaning for the life of the process, and there are only as many as
	// the binary has call sites, so the numbering is never reset.
	pcNumbers map[uint64]uint32
	// pcs holds the number of each location of the profile being applied.
	pcs []uint32
}

// stackTable maps stack keys to the cumulative values reported for them,
// so that adding a stack allocates nothing once the buffers have grown.
type stackTable struct {
	keys   hashindex.Keys
	values []int64 // entry e's totals are values[e*n : e*n+n]
}

// reset empties t for a profile of the given number of samples, with room
// for the key bytes and values like holds and an eighth more, so that a
// table filled for a profile like the last one, or slightly larger, does
// not grow: growing copies all the keys.
func (t *stackTable) reset(samples int, like *stackTable) {
	t.keys.Reset(samples, like.keys.Size()+like.keys.Size()/8)
	t.values = slices.Grow(t.values[:0], len(like.values)+len(like.values)/8)
}

// newDeltaState returns the state for a profile whose values at the given
// indices are cumulative.
func newDeltaState(numValues int, cumulative ...int) *deltaState {
	isDelta := make([]bool, numValues)
	for _, i := range cumulative {
		isDelta[i] = true
	}
	return &deltaState{isDelta: isDelta, seed: maphash.MakeSeed(), pcNumbers: make(map[uint64]uint32)}
}

// reset forgets every reported total, so that the next profile becomes the
// baseline.
func (d *deltaState) reset() {
	d.prev.reset(0, &stackTable{})
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
	cur.reset(len(p.Samples), prev)

	// First merge samples of the same stack. The runtime writes each stack
	// once today, but subtracting per occurrence would be wrong if it ever
	// split one, so sum them before taking the difference. Entry e of cur
	// is merged sample e.
	merged := p.Samples[:0]
	var guess int32
	for i := range p.Samples {
		s := p.Samples[i]
		if len(s.Values) != n {
			continue
		}
		d.key = appendStackKey(d.key[:0], d.pcs, &s)
		h := maphash.Bytes(d.seed, d.key)
		e, at := cur.keys.Find(h, d.key)
		if e >= 0 {
			dst := merged[e].Values
			for j, v := range s.Values {
				dst[j] += v
			}
			continue
		}
		cur.keys.Add(&at, d.key)
		// The runtime writes its stacks in the same order every time,
		// so the entry after the last one found is likely the one.
		var pe int32
		if int(guess) < prev.keys.Len() && bytes.Equal(prev.keys.Key(guess), d.key) {
			pe = guess
		} else {
			pe, _ = prev.keys.Find(h, d.key)
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
	key = appendUvarint(key, uint64(len(s.Locations)))
	key = appendPCs(key, pcs, s.Locations)
	for i := range s.Labels {
		l := &s.Labels[i]
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

// appendPCs appends the numbers of the program counters of locs as
// varints. This is the innermost loop of apply: numbers below 16,384, those
// of every call site of most programs, take one or two bytes, so room for
// two per location is made at once and the bytes are written by index
// rather than appended one by one.
func appendPCs(key []byte, pcs []uint32, locs []int32) []byte {
	n := len(key)
	key = slices.Grow(key, 2*len(locs))
	buf := key[n : n+2*len(locs)]
	i := 0
	for j, li := range locs {
		switch num := pcs[li]; {
		case num < 1<<7:
			buf[i] = byte(num)
			i++
		case num < 1<<14:
			buf[i] = byte(num) | 0x80
			buf[i+1] = byte(num >> 7)
			i += 2
		default:
			key = key[:n+i]
			for _, li := range locs[j:] {
				key = binary.AppendUvarint(key, uint64(pcs[li]))
			}
			return key
		}
	}
	return key[:n+i]
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
