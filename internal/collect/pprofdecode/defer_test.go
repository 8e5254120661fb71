package pprofdecode

import (
	"os"
	"reflect"
	"testing"
)

// handStacks is a hand-made profile with three locations numbered 1..3 as
// the runtime numbers them, and samples whose stacks come in every form
// the format allows.
func handStacks(ids ...uint64) pb {
	p := pb{}.
		msg(fieldSampleType, handSampleType()).
		msg(fieldFunction, handFunction(1))
	for _, id := range ids {
		p = p.msg(fieldLocation, pb{}.uint(1, id).uint(3, 0x1000+id).msg(4, handLine(1, int64(id), 0)))
	}
	l1, l2, l3 := int64(ids[0]), int64(ids[1]), int64(ids[2])
	return p.
		msg(fieldSample, pb{}.packed(1, l1, l2, l3).packed(2, 5)).
		msg(fieldSample, pb{}.packed(1, l1).packed(1, l2, l3).packed(2, 6)).       // two runs
		msg(fieldSample, pb{}.uint(1, uint64(l2)).packed(1, l3).packed(2, 7)).     // unpacked, then packed
		msg(fieldSample, pb{}.packed(1, l3, l2).uint(1, uint64(l1)).packed(2, 8)). // packed, then unpacked
		msg(fieldSample, pb{}.packed(1).packed(2, 9)).                             // empty run
		msg(fieldSample, pb{}.packed(2, 10)).                                      // no stack
		strings(handStrings...)
}

// TestDeferLocations checks that a Decoder with DeferLocations, followed by
// ResolveLocations, gives what Decode gives, and which stacks it leaves
// packed on the way.
func TestDeferLocations(t *testing.T) {
	read := func(name string) []byte {
		data, err := os.ReadFile("testdata/" + name + ".pb.gz")
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	tests := []struct {
		name string
		data []byte
		// packed[i] tells whether sample i stays packed until
		// ResolveLocations; nil means every sample of more than two
		// locations (runtime/pprof packs only lists longer than two).
		packed []bool
	}{
		{"heap", read("heap"), nil},
		{"goroutine", read("goroutine"), nil},
		{"cpu", read("cpu"), nil},
		{"hand-made", handStacks(1, 2, 3), []bool{true, false, false, false, true, false}},
		{"hand-made, ids not 1..n", handStacks(3, 1, 2), []bool{false, false, false, false, false, false}},
	}
	var d Decoder
	d.DeferLocations = true
	var p Profile
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := Parse(tt.data)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.DecodeInto(&p, tt.data); err != nil {
				t.Fatal(err)
			}
			for i, s := range p.Samples {
				isPacked := s.PackedLocations != nil
				wantPacked := len(want.Samples[i].Locations) > 2
				if tt.packed != nil {
					wantPacked = tt.packed[i]
				}
				if isPacked != wantPacked {
					t.Errorf("sample %d: packed = %v, want %v", i, isPacked, wantPacked)
				}
				if isPacked && s.Locations != nil {
					t.Errorf("sample %d: both packed and decoded", i)
				}
			}
			if err := d.ResolveLocations(&p); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(&p, want) {
				t.Errorf("resolved profile differs from Decode's:\n%s\nwant:\n%s", render(&p), render(want))
			}
		})
	}
}

// TestDeferLocationsOnlyReused checks that Decode, whose result must not
// share the Decoder's memory, never leaves stacks packed.
func TestDeferLocationsOnlyReused(t *testing.T) {
	d := Decoder{DeferLocations: true}
	p, err := d.Decode(handStacks(1, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range p.Samples {
		if s.PackedLocations != nil {
			t.Errorf("sample %d left packed by Decode", i)
		}
	}
}

func TestResolveLocationsRejectsUnknownIDs(t *testing.T) {
	for _, id := range []int64{0, 4, 1 << 20} {
		data := pb{}.
			msg(fieldSampleType, handSampleType()).
			msg(fieldLocation, pb{}.uint(1, 1).uint(3, 0x1001)).
			msg(fieldLocation, pb{}.uint(1, 2).uint(3, 0x1002)).
			msg(fieldLocation, pb{}.uint(1, 3).uint(3, 0x1003)).
			msg(fieldSample, pb{}.packed(1, 1, id).packed(2, 5)).
			strings(handStrings...)
		d := Decoder{DeferLocations: true}
		var p Profile
		if err := d.DecodeInto(&p, data); err != nil {
			t.Fatalf("id %d: DecodeInto: %v (ids of packed stacks are checked when resolved)", id, err)
		}
		if err := d.ResolveLocations(&p); err == nil {
			t.Errorf("id %d: ResolveLocations accepted a location the profile does not have", id)
		}
	}
}
