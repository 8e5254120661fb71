package collect

import (
	"encoding/binary"

	"github.com/pprofotel/profiler/internal/profile"
)

// deltaState turns successive cumulative profiles of one runtime profile
// into per-window deltas.
//
// Stacks are identified by their program counters and labels, not by pprof
// location ids: the runtime numbers locations afresh on every write, but a
// program counter names the same code for the life of the process.
type deltaState struct {
	// isDelta[i] tells whether sample value i is cumulative. Heap profiles
	// mix cumulative (alloc_*) and snapshot (inuse_*) values.
	isDelta []bool
	// last holds, per stack, the cumulative values already reported.
	last map[string]*stackTotals
	// generation marks the entries seen in the current profile, so entries
	// of stacks the runtime no longer reports can be forgotten without
	// rebuilding the map.
	generation uint64
	key        []byte
	entries    []*stackTotals
}

type stackTotals struct {
	values     []int64
	generation uint64
	// position is the stack's index among the current profile's merged
	// samples, valid while generation is current.
	position int
}

// newDeltaState returns the state for a profile whose values at the given
// indices are cumulative.
func newDeltaState(numValues int, cumulative ...int) *deltaState {
	isDelta := make([]bool, numValues)
	for _, i := range cumulative {
		isDelta[i] = true
	}
	return &deltaState{isDelta: isDelta, last: make(map[string]*stackTotals)}
}

// reset forgets every reported total, so that the next profile becomes the
// baseline.
func (d *deltaState) reset() {
	clear(d.last)
}

// apply rewrites p in place: cumulative values become the change since the
// previous call, and samples whose values are all zero are removed. The
// first call after reset records the baseline and leaves p with only its
// snapshot values.
//
// A cumulative value that is lower than what was already reported cannot
// come from the runtime's own counters, which only grow; it would come from
// a changed sampling rate. Such a value is reported as zero and the earlier
// total is kept as the baseline, so that no window is negative and the sum
// of all windows still equals the runtime's final total.
func (d *deltaState) apply(p *profile.Profile) {
	if len(p.SampleTypes) != len(d.isDelta) {
		// A profile of another shape than expected (a future runtime):
		// report it as it is rather than subtract mismatched values.
		return
	}
	d.generation++

	// First merge samples of the same stack. The runtime writes each stack
	// once today, but subtracting per occurrence would be wrong if it ever
	// split one, so sum them before taking the difference.
	merged := p.Samples[:0]
	d.entries = d.entries[:0]
	for i := range p.Samples {
		s := p.Samples[i]
		if len(s.Values) != len(d.isDelta) {
			continue
		}
		d.key = appendStackKey(d.key[:0], p, &s)
		t, seen := d.last[string(d.key)]
		if !seen {
			t = &stackTotals{values: make([]int64, len(s.Values))}
			d.last[string(d.key)] = t
		}
		if seen && t.generation == d.generation {
			dst := merged[t.position].Values
			for j, v := range s.Values {
				dst[j] += v
			}
			continue
		}
		t.generation = d.generation
		t.position = len(merged)
		merged = append(merged, s)
		d.entries = append(d.entries, t)
	}

	kept := merged[:0]
	for i, s := range merged {
		t := d.entries[i]
		nonZero := false
		for j, v := range s.Values {
			if d.isDelta[j] {
				diff := v - t.values[j]
				if diff < 0 {
					diff = 0
				} else {
					t.values[j] = v
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

	for k, t := range d.last {
		if t.generation != d.generation {
			delete(d.last, k)
		}
	}
	clear(d.entries)
}

// appendStackKey appends the identity of s: its program counters, then its
// labels.
func appendStackKey(key []byte, p *profile.Profile, s *profile.Sample) []byte {
	for _, li := range s.Locations {
		key = binary.LittleEndian.AppendUint64(key, p.Locations[li].Address)
	}
	key = append(key, 0xff) // separates the stack from the labels
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
