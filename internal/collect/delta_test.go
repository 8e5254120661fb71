package collect

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
)

// stackProfile builds a profile whose samples are identified by one
// location each, at the given addresses, with the given values.
func stackProfile(numValues int, samples map[uint64][]int64) *pprofdecode.Profile {
	p := &pprofdecode.Profile{SampleTypes: make([]pprofdecode.ValueType, numValues)}
	for addr, values := range samples {
		p.Locations = append(p.Locations, pprofdecode.Location{Mapping: -1, Address: addr})
		p.Samples = append(p.Samples, pprofdecode.Sample{
			Locations: []int32{int32(len(p.Locations) - 1)},
			Values:    append([]int64(nil), values...),
		})
	}
	return p
}

// byAddress returns the samples of p keyed by their leaf address.
func byAddress(p *pprofdecode.Profile) map[uint64][]int64 {
	out := make(map[uint64][]int64)
	for _, s := range p.Samples {
		out[p.Locations[s.Locations[0]].Address] = s.Values
	}
	return out
}

func TestDeltaState(t *testing.T) {
	type step = map[uint64][]int64
	tests := []struct {
		name       string
		numValues  int
		cumulative []int
		in         []step // in[0] is the baseline
		want       []step // one per window, in[1:]
	}{
		{
			name: "growing stacks report the growth", numValues: 2, cumulative: []int{0, 1},
			in:   []step{{1: {1, 10}}, {1: {3, 30}, 2: {1, 5}}, {1: {4, 40}, 2: {1, 5}}},
			want: []step{{1: {2, 20}, 2: {1, 5}}, {1: {1, 10}}},
		},
		{
			name: "unchanged stacks are left out", numValues: 2, cumulative: []int{0, 1},
			in:   []step{{1: {5, 50}}, {1: {5, 50}}},
			want: []step{{}},
		},
		{
			name: "snapshot values pass through", numValues: 4, cumulative: []int{0, 1},
			in:   []step{{1: {1, 10, 1, 10}}, {1: {1, 10, 1, 10}, 2: {2, 20, 0, 0}}, {1: {1, 10, 0, 0}, 2: {2, 20, 0, 0}}},
			want: []step{{1: {0, 0, 1, 10}, 2: {2, 20, 0, 0}}, {}},
		},
		{
			name: "a decrease reports zero and keeps the baseline", numValues: 2, cumulative: []int{0, 1},
			in: []step{{1: {10, 100}}, {1: {8, 120}}, {1: {12, 130}}},
			// window 1: count fell (held at 10), space grew by 20;
			// window 2: count 12-10, space 130-120. Sums: 2 and 30, as 12-10 and 130-100.
			want: []step{{1: {0, 20}}, {1: {2, 10}}},
		},
		{
			// Stack 2 is missing from window 2, so its totals are forgotten
			// and its return in window 3 counts from zero, as for any stack
			// the runtime reports anew.
			name: "stacks come and go", numValues: 2, cumulative: []int{0, 1},
			in:   []step{{1: {1, 1}, 2: {5, 5}}, {1: {2, 2}, 3: {4, 4}}, {1: {2, 2}, 2: {6, 6}, 3: {7, 7}}},
			want: []step{{1: {1, 1}, 3: {4, 4}}, {2: {6, 6}, 3: {3, 3}}},
		},
		{
			name: "a stack seen for the first time reports all it has", numValues: 2, cumulative: []int{0, 1},
			in:   []step{{}, {7: {3, 3}}},
			want: []step{{7: {3, 3}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeltaState(tt.numValues, tt.cumulative...)
			d.apply(stackProfile(tt.numValues, tt.in[0]))
			for i, in := range tt.in[1:] {
				p := stackProfile(tt.numValues, in)
				d.apply(p)
				if got := byAddress(p); !reflect.DeepEqual(got, tt.want[i]) {
					t.Errorf("window %d: got %v, want %v", i+1, got, tt.want[i])
				}
			}
		})
	}
}

func TestDeltaStateMergesRepeatedStacks(t *testing.T) {
	d := newDeltaState(2, 0, 1)
	twice := func(a, b int64) *pprofdecode.Profile {
		p := &pprofdecode.Profile{
			SampleTypes: make([]pprofdecode.ValueType, 2),
			Locations:   []pprofdecode.Location{{Mapping: -1, Address: 0x10}},
		}
		p.Samples = []pprofdecode.Sample{
			{Locations: []int32{0}, Values: []int64{a, a}},
			{Locations: []int32{0}, Values: []int64{b, b}},
		}
		return p
	}
	d.apply(twice(1, 2))
	p := twice(4, 5)
	d.apply(p)
	if len(p.Samples) != 1 {
		t.Fatalf("got %d samples, want the two occurrences merged into 1", len(p.Samples))
	}
	if got, want := p.Samples[0].Values, []int64{6, 6}; !reflect.DeepEqual(got, want) {
		t.Errorf("values: got %v, want %v ((4+5)-(1+2))", got, want)
	}
}

func TestDeltaStateLabelsSeparateStacks(t *testing.T) {
	d := newDeltaState(1, 0)
	mk := func(v1, v2 int64) *pprofdecode.Profile {
		return &pprofdecode.Profile{
			SampleTypes: make([]pprofdecode.ValueType, 1),
			Locations:   []pprofdecode.Location{{Mapping: -1, Address: 0x10}},
			Samples: []pprofdecode.Sample{
				{Locations: []int32{0}, Values: []int64{v1}, Labels: []pprofdecode.Label{{Key: "bytes", Num: 16, IsNum: true}}},
				{Locations: []int32{0}, Values: []int64{v2}, Labels: []pprofdecode.Label{{Key: "bytes", Num: 32, IsNum: true}}},
			},
		}
	}
	d.apply(mk(1, 1))
	p := mk(3, 1)
	d.apply(p)
	if len(p.Samples) != 1 || p.Samples[0].Values[0] != 2 || p.Samples[0].Labels[0].Num != 16 {
		t.Fatalf("got %+v, want only the 16-byte stack with delta 2", p.Samples)
	}
}

func TestDeltaStateAllocatesNothingOnceWarm(t *testing.T) {
	// Every window a different tenth of 1,000 stacks is missing, so
	// stacks keep leaving and coming back.
	const stacks = 1000
	d := newDeltaState(2, 0, 1)
	window := func(w int) *pprofdecode.Profile {
		in := make(map[uint64][]int64, stacks)
		for i := range stacks {
			if i%10 != w%10 {
				in[uint64(i+1)] = []int64{int64(w), int64(w)}
			}
		}
		return stackProfile(2, in)
	}
	const windows = 20
	profiles := make([]*pprofdecode.Profile, windows)
	for w := range profiles {
		profiles[w] = window(w)
	}
	for _, p := range profiles[:2] {
		d.apply(p)
	}
	next := 2
	allocs := testing.AllocsPerRun(windows-3, func() {
		d.apply(profiles[next])
		next++
	})
	if allocs != 0 {
		t.Errorf("apply allocated %v times per profile once warm, want 0", allocs)
	}
	// The last window still reports the right deltas: stacks present in
	// the window before grew by 1, the returning tenth reports its total.
	last := byAddress(profiles[windows-1])
	for addr, v := range last {
		want := int64(1)
		if int(addr-1)%10 == (windows-2)%10 {
			want = windows - 1
		}
		if v[0] != want || v[1] != want {
			t.Fatalf("stack %d: got %v, want [%d %d]", addr, v, want, want)
		}
	}
	if len(last) != stacks-stacks/10 {
		t.Errorf("last window has %d stacks, want %d", len(last), stacks-stacks/10)
	}
}

// pack moves s's stack to PackedLocations, as runtime/pprof numbers
// locations: id i+1 for index i.
func pack(s *pprofdecode.Sample) {
	b := []byte{}
	for _, li := range s.Locations {
		b = binary.AppendUvarint(b, uint64(li)+1)
	}
	s.Locations, s.PackedLocations = nil, b
}

// unpack undoes pack.
func unpack(t *testing.T, s *pprofdecode.Sample) {
	t.Helper()
	for b := s.PackedLocations; len(b) > 0; {
		id, n := binary.Uvarint(b)
		if n <= 0 {
			t.Fatalf("bad packed stack %v", s.PackedLocations)
		}
		s.Locations = append(s.Locations, int32(id-1))
		b = b[n:]
	}
	s.PackedLocations = nil
}

func TestStackKey(t *testing.T) {
	// Location i's program counter is pcs[i]; tokens are those of a
	// deltaState, so equal program counters have equal tokens.
	pcs := make([]uint64, 20000)
	for i := range pcs {
		pcs[i] = uint64(0x400000 + 16*i)
	}
	pcs[7] = pcs[3] // two locations of one program counter
	d := newDeltaState(1, 0)
	d.apply(&pprofdecode.Profile{SampleTypes: make([]pprofdecode.ValueType, 1), Locations: locations(pcs)})
	labels := []pprofdecode.Label{{Key: "bytes", Num: 512, IsNum: true}, {Key: "k", Str: "v"}}
	key := func(locs []int32, labels []pprofdecode.Label, packed bool) [2]uint64 {
		s := pprofdecode.Sample{Locations: locs, Labels: labels}
		if packed {
			pack(&s)
		}
		k, ok := d.stackKey(&s)
		if !ok {
			t.Fatalf("stack %v: not ok", locs)
		}
		return k
	}
	base := []int32{0, 1, 2, 3, 200, 19999}
	tests := []struct {
		name  string
		locs  []int32
		equal bool // to base's key
	}{
		{"same", []int32{0, 1, 2, 3, 200, 19999}, true},
		{"another location of the same program counter", []int32{0, 1, 2, 7, 200, 19999}, true},
		{"frames swapped", []int32{1, 0, 2, 3, 200, 19999}, false},
		{"one frame less", []int32{0, 1, 2, 3, 200}, false},
		{"one frame more", []int32{0, 1, 2, 3, 200, 19999, 0}, false},
		{"leaf differs", []int32{4, 1, 2, 3, 200, 19999}, false},
		{"root differs", []int32{0, 1, 2, 3, 200, 19998}, false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		for _, packed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/packed=%v", tt.name, packed), func(t *testing.T) {
				got := key(tt.locs, labels, packed)
				want := key(base, labels, false)
				if (got == want) != tt.equal {
					t.Errorf("key %x, base's %x: equal = %v, want %v", got, want, !tt.equal, tt.equal)
				}
				for _, other := range [][]pprofdecode.Label{
					nil,
					labels[:1],
					{labels[1], labels[0]},
					{{Key: "bytes", Num: 512, NumUnit: "bytes", IsNum: true}, labels[1]},
					{labels[0], {Key: "k", Str: "w"}},
				} {
					if key(tt.locs, other, packed) == got {
						t.Errorf("labels %v give the key of %v", other, labels)
					}
				}
			})
		}
	}
}

func TestStackKeyRejectsBadPackedStacks(t *testing.T) {
	d := newDeltaState(1, 0)
	d.apply(&pprofdecode.Profile{SampleTypes: make([]pprofdecode.ValueType, 1), Locations: locations(make([]uint64, 20000))})
	tests := []struct {
		name   string
		packed []byte
		ok     bool
	}{
		{"first and last", []byte{1, 0xa0, 0x9c, 0x01}, true}, // ids 1 and 20,000
		{"id zero", []byte{1, 0}, false},
		{"past the last", []byte{0xa1, 0x9c, 0x01}, false}, // 20,001
		{"truncated two-byte id", []byte{1, 0x81}, false},
		{"truncated three-byte id", []byte{0xa0, 0x9c}, false},
		{"overlong", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := pprofdecode.Sample{PackedLocations: tt.packed}
			if _, ok := d.stackKey(&s); ok != tt.ok {
				t.Errorf("ok = %v, want %v", ok, tt.ok)
			}
			p := &pprofdecode.Profile{
				SampleTypes: make([]pprofdecode.ValueType, 1),
				Locations:   locations(make([]uint64, 20000)),
				Samples:     []pprofdecode.Sample{{PackedLocations: tt.packed, Values: []int64{1}}},
			}
			if err := d.apply(p); (err == nil) != tt.ok {
				t.Errorf("apply: %v, want an error: %v", err, !tt.ok)
			}
		})
	}
}

// locations returns locations with the given program counters.
func locations(pcs []uint64) []pprofdecode.Location {
	locs := make([]pprofdecode.Location, len(pcs))
	for i, pc := range pcs {
		locs[i] = pprofdecode.Location{Mapping: -1, Address: pc}
	}
	return locs
}

// TestDeltaStateMatchesReference applies windows of random deep stacks to
// a deltaState and to a plain implementation of the same rules, keyed by
// formatted addresses and labels. The windows reorder, repeat, drop and
// relabel stacks, relocate their locations, and number more program
// counters than fit a stack key's two-byte form.
func TestDeltaStateMatchesReference(t *testing.T) {
	const numValues = 3 // two cumulative, one snapshot
	r := rand.New(rand.NewPCG(3, 4))
	type stack struct {
		addrs  []uint64
		labels []pprofdecode.Label
	}
	stacks := make([]stack, 400)
	for i := range stacks {
		s := &stacks[i]
		for range 1 + r.IntN(60) {
			// Few addresses are common, as callers are; the rest
			// spread over more than 16,384 numbers.
			if r.IntN(2) == 0 {
				s.addrs = append(s.addrs, uint64(1+r.IntN(100)))
			} else {
				s.addrs = append(s.addrs, uint64(1000+r.IntN(40000)))
			}
		}
		switch r.IntN(4) {
		case 1:
			s.labels = []pprofdecode.Label{{Key: "bytes", Num: int64(8 << r.IntN(3)), IsNum: true}}
		case 2:
			s.labels = []pprofdecode.Label{{Key: "k", Str: "v"}, {Key: "bytes", Num: 16, NumUnit: "bytes", IsNum: true}}
		}
	}
	// Every address once, first, so that the numbering grows past 16,384
	// in the first window and numbers of all sizes mix in the stacks.
	all := stack{}
	for a := range 41000 {
		all.addrs = append(all.addrs, uint64(a+1))
	}
	stacks = append([]stack{all}, stacks...)

	totals := make([][]int64, len(stacks))
	for i := range totals {
		totals[i] = make([]int64, numValues)
	}
	refPrev := map[string][]int64{}
	d := newDeltaState(numValues, 0, 1)
	for w := range 12 {
		// The runtime's new state: stacks grow, and some are missing.
		p := &pprofdecode.Profile{SampleTypes: make([]pprofdecode.ValueType, numValues)}
		locOf := map[uint64]int32{}
		var order []int
		for i := range stacks {
			if r.IntN(8) == 0 && i != 0 {
				continue
			}
			totals[i][0] += int64(r.IntN(3))
			totals[i][1] += int64(r.IntN(3)) * 8
			totals[i][2] = int64(r.IntN(2))
			order = append(order, i)
		}
		if w%3 != 0 {
			r.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		}
		for _, i := range order {
			s := stacks[i]
			parts := 1
			if r.IntN(10) == 0 {
				parts = 2 // written as two samples, to be merged
			}
			for part := range parts {
				smp := pprofdecode.Sample{Labels: s.labels, Values: make([]int64, numValues)}
				for _, a := range s.addrs {
					li, ok := locOf[a]
					if !ok {
						li = int32(len(p.Locations))
						locOf[a] = li
						p.Locations = append(p.Locations, pprofdecode.Location{Mapping: -1, Address: a})
					}
					smp.Locations = append(smp.Locations, li)
				}
				for j, v := range totals[i] {
					if part == 0 {
						smp.Values[j] = v - v/2*int64(parts-1)
					} else {
						smp.Values[j] = v / 2
					}
				}
				p.Samples = append(p.Samples, smp)
			}
		}

		want := referenceDelta(p, refPrev, []bool{true, true, false})
		// Half the stacks come packed, as a Decoder with
		// DeferLocations leaves them; ids past 16,383 take three bytes.
		for i := range p.Samples {
			if r.IntN(2) == 0 {
				pack(&p.Samples[i])
			}
		}
		if err := d.apply(p); err != nil {
			t.Fatalf("window %d: %v", w, err)
		}
		got := make([]string, len(p.Samples))
		for i := range p.Samples {
			unpack(t, &p.Samples[i])
			got[i] = formatSample(p, &p.Samples[i])
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("window %d: got %d samples, want %d; first difference at %d", w, len(got), len(want), firstDiff(got, want))
		}
	}
}

// referenceDelta returns the formatted samples apply should leave in p,
// and updates prev to p's totals.
func referenceDelta(p *pprofdecode.Profile, prev map[string][]int64, isDelta []bool) []string {
	key := func(s *pprofdecode.Sample) string {
		var addrs []uint64
		for _, li := range s.Locations {
			addrs = append(addrs, p.Locations[li].Address)
		}
		return fmt.Sprint(addrs, s.Labels)
	}
	var keys []string
	sums := map[string][]int64{}
	first := map[string]*pprofdecode.Sample{}
	for i := range p.Samples {
		s := &p.Samples[i]
		k := key(s)
		if sums[k] == nil {
			keys = append(keys, k)
			sums[k] = make([]int64, len(s.Values))
			first[k] = s
		}
		for j, v := range s.Values {
			sums[k][j] += v
		}
	}
	next := map[string][]int64{}
	var out []string
	for _, k := range keys {
		base := prev[k]
		if base == nil {
			base = make([]int64, len(isDelta))
		}
		tot := append([]int64(nil), base...)
		vals := append([]int64(nil), sums[k]...)
		nonZero := false
		for j := range vals {
			if isDelta[j] {
				if diff := vals[j] - tot[j]; diff < 0 {
					vals[j] = 0
				} else {
					tot[j] = vals[j]
					vals[j] = diff
				}
			}
			nonZero = nonZero || vals[j] != 0
		}
		next[k] = tot
		if nonZero {
			s := *first[k]
			s.Values = vals
			out = append(out, formatSample(p, &s))
		}
	}
	clear(prev)
	for k, v := range next {
		prev[k] = v
	}
	return out
}

func formatSample(p *pprofdecode.Profile, s *pprofdecode.Sample) string {
	var addrs []uint64
	for _, li := range s.Locations {
		addrs = append(addrs, p.Locations[li].Address)
	}
	return fmt.Sprint(addrs, s.Labels, s.Values)
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func BenchmarkDeltaApply(b *testing.B) {
	const stacks = 5000
	base := make(map[uint64][]int64, stacks)
	for i := range stacks {
		base[uint64(i+1)] = []int64{0, 0, 1, 8}
	}
	d := newDeltaState(4, 0, 1)
	d.apply(stackProfile(4, base))
	p := stackProfile(4, base)
	orig := append([]pprofdecode.Sample(nil), p.Samples...)
	b.ReportAllocs()
	b.ResetTimer()
	var round int64
	for b.Loop() {
		round++
		p.Samples = append(p.Samples[:0], orig...)
		for i := range p.Samples {
			v := p.Samples[i].Values
			v[0], v[1], v[2], v[3] = round, round*8, 1, 8
		}
		d.apply(p)
	}
}

// TestStackHashSeparatesStructuredStacks hashes every stack of up to six
// frames over eight program counters, in both forms, and checks that no
// two share either 64-bit lane: stacks that are permutations, repeats or
// prefixes of each other are where a weak combining step would collide.
// (For 300,000 random 64-bit values a chance collision has a probability
// of about 10^-9.)
func TestStackHashSeparatesStructuredStacks(t *testing.T) {
	const pcs, depth = 8, 6
	d := newDeltaState(1, 0)
	locs := make([]uint64, pcs)
	for i := range locs {
		locs[i] = uint64(0x401000 + 0x40*i)
	}
	if err := d.apply(&pprofdecode.Profile{SampleTypes: make([]pprofdecode.ValueType, 1), Locations: locations(locs)}); err != nil {
		t.Fatal(err)
	}
	seen := [2]map[uint64][]int32{{}, {}}
	var stack []int32
	var walk func()
	walk = func() {
		for _, packed := range []bool{false, true} {
			s := pprofdecode.Sample{Locations: stack}
			if packed {
				pack(&s)
			}
			h, ok := stackHash(d.locTokens, &s)
			if !ok {
				t.Fatalf("stack %v: not ok", stack)
			}
			for lane := range h {
				if other, dup := seen[lane][h[lane]]; dup && !slices.Equal(other, stack) {
					t.Fatalf("lane %d: stacks %v and %v share %x", lane, other, stack, h[lane])
				}
				seen[lane][h[lane]] = slices.Clone(stack)
			}
		}
		if len(stack) == depth {
			return
		}
		for pc := range int32(pcs) {
			stack = append(stack, pc)
			walk()
			stack = stack[:len(stack)-1]
		}
	}
	walk()
	if n := len(seen[0]); n != 299593 {
		t.Errorf("%d distinct stacks hashed, want 299,593 (8^0 + ... + 8^6)", n)
	}
}
