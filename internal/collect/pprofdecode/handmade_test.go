package pprofdecode

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// String table indices used by the hand-made profiles below.
const (
	sSamples = 1 + iota
	sCount
	sFunc
	sFile
	sKey
	sValue
	sBinary
	sBuildID
	sBytes
	sComment
)

var handStrings = []string{"", "samples", "count", "main.work", "work.go", "worker", "w1", "/bin/app", "abc123", "bytes", "hello"}

func handSampleType() pb { return pb{}.int(1, sSamples).int(2, sCount) }

func handMapping(id uint64) pb {
	return pb{}.uint(1, id).uint(2, 0x400000).uint(3, 0x800000).uint(4, 0x1000).
		int(5, sBinary).int(6, sBuildID).uint(7, 1).uint(10, 1)
}

func handFunction(id uint64) pb {
	return pb{}.uint(1, id).int(2, sFunc).int(3, sFunc).int(4, sFile).int(5, 10)
}

func handLine(functionID uint64, line, column int64) pb {
	return pb{}.uint(1, functionID).int(2, line).int(3, column)
}

func handLocation(id, mappingID, functionID uint64) pb {
	return pb{}.uint(1, id).uint(2, mappingID).uint(3, 0x401234).
		msg(4, handLine(functionID, 12, 3)).msg(4, handLine(functionID, 20, 0))
}

func handLabels() pb {
	return pb{}.
		msg(3, pb{}.int(1, sKey).int(2, sValue)).
		msg(3, pb{}.int(1, sBytes).int(3, 512).int(4, sBytes)).
		msg(3, pb{}.int(1, sCount).int(3, -7)).
		msg(3, pb{}.int(1, sCount).int(4, sCount)) // numeric zero, known only by its unit
}

// handProfile is a small valid profile: one sample type and two samples
// without stacks.
func handProfile() pb {
	return pb{}.
		msg(fieldSampleType, handSampleType()).
		msg(fieldSample, pb{}.packed(2, 42)).
		msg(fieldSample, pb{}.packed(2, 42)).
		strings(handStrings...)
}

func TestParseHandMade(t *testing.T) {
	full := pb{}.
		msg(fieldSampleType, handSampleType()).
		msg(fieldMapping, handMapping(1)).
		msg(fieldFunction, handFunction(1)).
		msg(fieldLocation, handLocation(1, 1, 1).uint(5, 1)).
		msg(fieldLocation, pb{}.uint(1, 2).uint(3, 0x99)). // no mapping, no lines
		msg(fieldSample, append(pb{}.packed(1, 1, 2).packed(2, 42), handLabels()...)).
		msg(fieldSample, pb{}.uint(1, 2).uint(1, 1).int(2, -5)). // unpacked
		int(fieldTimeNanos, 1700000000000000000).
		int(fieldDurationNanos, 10e9).
		msg(fieldPeriodType, pb{}.int(1, sSamples)).
		msg(fieldPeriodType, pb{}.int(2, sCount)). // merged with the previous one
		int(fieldPeriod, 100).
		packed(fieldComment, sComment, sFunc).
		int(fieldDefaultSampleType, sSamples).
		uint(99, 12345). // unknown field: skipped
		strings(handStrings...)

	want := &Profile{
		SampleTypes:       []ValueType{{Type: "samples", Unit: "count"}},
		DefaultSampleType: "samples",
		PeriodType:        ValueType{Type: "samples", Unit: "count"},
		Period:            100,
		TimeNanos:         1700000000000000000,
		DurationNanos:     10e9,
		Comments:          []string{"hello", "main.work"},
		Samples: []Sample{
			{
				Locations: []int32{0, 1},
				Values:    []int64{42},
				Labels: []Label{
					{Key: "worker", Str: "w1"},
					{Key: "bytes", Num: 512, NumUnit: "bytes", IsNum: true},
					{Key: "count", Num: -7, IsNum: true},
					{Key: "count", NumUnit: "count", IsNum: true},
				},
			},
			{Locations: []int32{1, 0}, Values: []int64{-5}},
		},
		Locations: []Location{
			{Mapping: 0, Address: 0x401234, IsFolded: true, Lines: []Line{{Function: 0, Line: 12, Column: 3}, {Function: 0, Line: 20}}},
			{Mapping: -1, Address: 0x99},
		},
		Functions: []Function{{Name: "main.work", SystemName: "main.work", Filename: "work.go", StartLine: 10}},
		Mappings: []Mapping{{
			Start: 0x400000, Limit: 0x800000, Offset: 0x1000, File: "/bin/app", BuildID: "abc123",
			HasFunctions: true, HasInlineFrames: true,
		}},
	}

	for _, tt := range []struct {
		name string
		data []byte
	}{
		{"raw", full},
		{"gzip", gzipBytes(t, full)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.data)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Parse =\n%s\nwant\n%s", render(got), render(want))
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	st := func(p pb) pb { return p.strings(handStrings...) }
	bomb := gzipBytes(t, bytes.Repeat([]byte{0}, 1<<20))
	valid := st(pb{}.msg(fieldSampleType, handSampleType()).msg(fieldSample, pb{}.packed(2, 1)))
	validGz := gzipBytes(t, valid)

	tests := []struct {
		name    string
		data    []byte
		maxSize int
		wantErr string
	}{
		{name: "empty", data: nil, wantErr: "profile: empty input"},
		{name: "truncated varint", data: pb{}.int(fieldTimeNanos, 1<<40)[:3], wantErr: "truncated varint at offset 1"},
		{name: "varint overflow", data: append(pb{}.key(fieldPeriod, wireVarint), bytes.Repeat([]byte{0xff}, 10)...), wantErr: "varint at offset 1 overflows 64 bits"},
		{name: "field number zero", data: pb{0x00, 0x01}, wantErr: "invalid field number 0 at offset 0"},
		{name: "length past end", data: append(pb{}.key(fieldSample, wireBytes), 100, 1, 2, 3), wantErr: "length 100 at offset 1 runs past the end of its message (3 bytes left)"},
		{name: "nested length past parent", data: append(pb{}.msg(fieldLocation, append(pb{}.uint(1, 1).key(4, wireBytes), 5, 0x08)), pb{}.int(fieldPeriod, 1).int(fieldPeriod, 1)...), wantErr: "length 5 at offset 5 runs past the end of its message (1 bytes left)"},
		{name: "group wire type", data: pb{}.key(20, wireStart), wantErr: "unsupported group wire type 3"},
		{name: "invalid wire type", data: pb{}.key(20, 7), wantErr: "invalid wire type 7"},
		{name: "truncated fixed64", data: append(pb{}.key(20, wireFixed64), 1, 2), wantErr: "truncated 8-byte fixed field"},
		{name: "wrong wire type", data: pb{}.bytes(fieldTimeNanos, []byte{1}), wantErr: "field Profile.time_nanos at offset 1 has wire type 2, want 0"},
		{name: "message as varint", data: pb{}.uint(fieldSample, 1), wantErr: "field Profile.sample at offset 1 has wire type 0, want 2"},
		{name: "string table entry 0 not empty", data: pb{}.strings("x"), wantErr: `string table entry 0 is "x", want the empty string`},
		{name: "bad function name index", data: st(pb{}.msg(fieldFunction, handFunction(1).int(2, 99))), wantErr: "function 1 name: string index 99 out of range (string table has 11 entries)"},
		{name: "negative string index", data: st(pb{}.msg(fieldMapping, handMapping(3).int(6, -1))), wantErr: "mapping 3 build_id: string index -1 out of range"},
		{name: "bad sample type index", data: st(pb{}.msg(fieldSampleType, pb{}.int(1, 11))), wantErr: "Profile.sample_type.type: string index 11 out of range"},
		{name: "bad comment index", data: st(pb{}.int(fieldComment, 50)), wantErr: "Profile.comment[0]: string index 50 out of range"},
		{name: "bad default sample type", data: st(pb{}.int(fieldDefaultSampleType, 12)), wantErr: "Profile.default_sample_type: string index 12 out of range"},
		{name: "bad drop frames", data: st(pb{}.int(fieldDropFrames, 12)), wantErr: "Profile.drop_frames: string index 12"},
		{name: "bad label key", data: st(pb{}.msg(fieldSample, pb{}.msg(3, pb{}.int(1, 40)))), wantErr: "sample 0 label key: string index 40"},
		{name: "bad label unit", data: st(pb{}.msg(fieldSample, pb{}.msg(3, pb{}.int(1, sBytes).int(3, 1).int(4, 40)))), wantErr: `sample 0 label "bytes" num_unit: string index 40`},
		{name: "unknown location", data: st(pb{}.msg(fieldSampleType, handSampleType()).msg(fieldSample, pb{}.packed(1, 7).packed(2, 1))), wantErr: "sample 0 references unknown location 7"},
		{name: "location id 0 in sample", data: st(pb{}.msg(fieldLocation, pb{}.uint(1, 1)).msg(fieldSample, pb{}.uint(1, 0))), wantErr: "sample 0 references unknown location 0"},
		{name: "unknown function", data: st(pb{}.msg(fieldFunction, handFunction(1)).msg(fieldLocation, pb{}.msg(4, handLine(12, 1, 0)).uint(1, 7))), wantErr: "location 7 references unknown function 12"},
		{name: "unknown mapping", data: st(pb{}.msg(fieldLocation, handLocation(5, 9, 0))), wantErr: "location 5 references unknown mapping 9"},
		{name: "duplicate id", data: st(pb{}.msg(fieldFunction, handFunction(5)).msg(fieldFunction, handFunction(5))), wantErr: "duplicate function id 5"},
		{name: "id zero", data: st(pb{}.msg(fieldMapping, handMapping(0))), wantErr: "mapping at index 0 has id 0, which is reserved"},
		{name: "too few values", data: st(pb{}.msg(fieldSampleType, handSampleType()).msg(fieldSample, pb{})), wantErr: "sample 0 has 0 values, want 1 (one per sample type)"},
		{name: "too many values", data: st(pb{}.msg(fieldSampleType, handSampleType()).msg(fieldSample, pb{}.packed(2, 1, 2))), wantErr: "sample 0 has more than 1 values"},
		{name: "values without sample types", data: st(pb{}.msg(fieldSample, pb{}.uint(2, 3))), wantErr: "sample 0 has more than 0 values"},
		{name: "truncated packed varint", data: st(pb{}.msg(fieldSampleType, handSampleType()).msg(fieldSample, pb{}.bytes(2, []byte{0x80}))), wantErr: "truncated varint"},
		{name: "packed location id 0", data: st(pb{}.msg(fieldSampleType, handSampleType()).msg(fieldLocation, pb{}.uint(1, 1)).msg(fieldSample, pb{}.packed(1, 1, 0).packed(2, 1))), wantErr: "sample 0 references unknown location 0"},
		{name: "two-byte unknown location", data: st(pb{}.msg(fieldSampleType, handSampleType()).msg(fieldLocation, pb{}.uint(1, 1)).msg(fieldSample, pb{}.packed(1, 1, 300).packed(2, 1))), wantErr: "sample 0 references unknown location 300"},
		{name: "truncated packed location id", data: st(pb{}.msg(fieldSampleType, handSampleType()).msg(fieldLocation, pb{}.uint(1, 1)).msg(fieldSample, pb{}.bytes(1, []byte{1, 0x81}).packed(2, 1))), wantErr: "truncated varint"},
		{name: "bad gzip header", data: []byte{0x1f, 0x8b, 0, 0}, wantErr: "profile: decompressing: gzipmem: truncated input"},
		{name: "gzip header of another method", data: []byte{0x1f, 0x8b, 7, 0, 0, 0, 0, 0, 0, 255, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0}, wantErr: "profile: decompressing: gzipmem: invalid gzip header"},
		{name: "truncated gzip", data: validGz[:len(validGz)-6], wantErr: "profile: decompressing: gzipmem: truncated input: unexpected EOF"},
		{name: "gzip bomb", data: bomb, maxSize: 64 << 10, wantErr: "decompressed size exceeds the limit of 65536 bytes"},
		{name: "gzip exactly one byte over", data: gzipBytes(t, bytes.Repeat([]byte{0}, 1025)), maxSize: 1024, wantErr: "exceeds the limit of 1024 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decoder{MaxDecompressedSize: tt.maxSize}
			p, err := d.Decode(tt.data)
			if err == nil {
				t.Fatalf("Decode succeeded, want error containing %q:\n%s", tt.wantErr, render(p))
			}
			if p != nil {
				t.Errorf("Decode returned a profile along with error %v", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Decode error = %q, want it to contain %q", err, tt.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "profile: ") {
				t.Errorf("Decode error = %q, want the profile: prefix", err)
			}
			// The Decoder must stay usable after any failure.
			for _, good := range [][]byte{valid, validGz} {
				if _, err := d.Decode(good); err != nil {
					t.Errorf("Decode of a valid profile after the failure: %v", err)
				}
			}
		})
	}
}

// TestParseGzipWithinLimit checks that the limit is a bound on the
// decompressed size and not on anything smaller.
func TestParseGzipWithinLimit(t *testing.T) {
	data := handProfile()
	d := Decoder{MaxDecompressedSize: len(data)}
	p, err := d.Decode(gzipBytes(t, data))
	if err != nil {
		t.Fatalf("Decode with a limit equal to the decompressed size: %v", err)
	}
	if len(p.Samples) != 2 || p.Samples[1].Values[0] != 42 {
		t.Errorf("samples = %+v, want two with value 42", p.Samples)
	}
}

// TestParseEmptyStringLabel pins the reading of a label whose string index
// is 0, which runtime/pprof writes for pprof.Labels(key, "").
func TestParseEmptyStringLabel(t *testing.T) {
	data := pb{}.msg(fieldSample, pb{}.msg(3, pb{}.int(1, sKey))).strings(handStrings...)
	p, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []Label{{Key: "worker"}}
	if !reflect.DeepEqual(p.Samples[0].Labels, want) {
		t.Errorf("labels = %+v, want %+v", p.Samples[0].Labels, want)
	}
}

// TestParseLocationIDs decodes packed location ids of one, two and three
// bytes, with the runtime's dense numbering and without it.
func TestParseLocationIDs(t *testing.T) {
	ids := []int64{1, 127, 128, 300, 16383, 16384, 20000, 2, 16384, 1}
	for _, tt := range []struct {
		name  string
		idOf  func(index int) uint64
		index func(id uint64) int32
	}{
		{"dense", func(i int) uint64 { return uint64(i + 1) }, func(id uint64) int32 { return int32(id - 1) }},
		{"reversed", func(i int) uint64 { return uint64(20000 - i) }, func(id uint64) int32 { return int32(20000 - id) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := pb{}.msg(fieldSampleType, handSampleType())
			for i := range 20000 {
				p = p.msg(fieldLocation, pb{}.uint(1, tt.idOf(i)))
			}
			p = p.msg(fieldSample, pb{}.packed(1, ids...).packed(2, 1)).
				msg(fieldSample, pb{}.packed(1, 16384).packed(2, 1)).
				strings(handStrings...)
			got, err := Parse(p)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var want []int32
			for _, id := range ids {
				want = append(want, tt.index(uint64(id)))
			}
			if !reflect.DeepEqual(got.Samples[0].Locations, want) {
				t.Errorf("sample 0 locations = %v, want %v", got.Samples[0].Locations, want)
			}
			if w := []int32{tt.index(16384)}; !reflect.DeepEqual(got.Samples[1].Locations, w) {
				t.Errorf("sample 1 locations = %v, want %v", got.Samples[1].Locations, w)
			}
		})
	}
}
