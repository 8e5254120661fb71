package collect

import (
	"reflect"
	"testing"

	"github.com/pprofotel/profiler/internal/profile"
)

// stackProfile builds a profile whose samples are identified by one
// location each, at the given addresses, with the given values.
func stackProfile(numValues int, samples map[uint64][]int64) *profile.Profile {
	p := &profile.Profile{SampleTypes: make([]profile.ValueType, numValues)}
	for addr, values := range samples {
		p.Locations = append(p.Locations, profile.Location{Mapping: -1, Address: addr})
		p.Samples = append(p.Samples, profile.Sample{
			Locations: []int32{int32(len(p.Locations) - 1)},
			Values:    append([]int64(nil), values...),
		})
	}
	return p
}

// byAddress returns the samples of p keyed by their leaf address.
func byAddress(p *profile.Profile) map[uint64][]int64 {
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
	twice := func(a, b int64) *profile.Profile {
		p := &profile.Profile{
			SampleTypes: make([]profile.ValueType, 2),
			Locations:   []profile.Location{{Mapping: -1, Address: 0x10}},
		}
		p.Samples = []profile.Sample{
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
	mk := func(v1, v2 int64) *profile.Profile {
		return &profile.Profile{
			SampleTypes: make([]profile.ValueType, 1),
			Locations:   []profile.Location{{Mapping: -1, Address: 0x10}},
			Samples: []profile.Sample{
				{Locations: []int32{0}, Values: []int64{v1}, Labels: []profile.Label{{Key: "bytes", Num: 16, IsNum: true}}},
				{Locations: []int32{0}, Values: []int64{v2}, Labels: []profile.Label{{Key: "bytes", Num: 32, IsNum: true}}},
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
	window := func(w int) *profile.Profile {
		in := make(map[uint64][]int64, stacks)
		for i := range stacks {
			if i%10 != w%10 {
				in[uint64(i+1)] = []int64{int64(w), int64(w)}
			}
		}
		return stackProfile(2, in)
	}
	const windows = 20
	profiles := make([]*profile.Profile, windows)
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

func BenchmarkDeltaApply(b *testing.B) {
	const stacks = 5000
	base := make(map[uint64][]int64, stacks)
	for i := range stacks {
		base[uint64(i+1)] = []int64{0, 0, 1, 8}
	}
	d := newDeltaState(4, 0, 1)
	d.apply(stackProfile(4, base))
	p := stackProfile(4, base)
	orig := append([]profile.Sample(nil), p.Samples...)
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
