package pprofdecode

import (
	"encoding/binary"
	"testing"
)

func TestUvarintAtAgreesWithReader(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
	}{
		{"one byte", []byte{0x05}},
		{"two bytes", binary.AppendUvarint(nil, 300)},
		{"two bytes, largest", binary.AppendUvarint(nil, 1<<14-1)},
		{"three bytes", binary.AppendUvarint(nil, 1<<14)},
		{"heap byte count", binary.AppendUvarint(nil, 123456789)},
		{"largest", binary.AppendUvarint(nil, 1<<64-1)},
		{"overlong zero", []byte{0x80, 0x00}},
		{"overflow", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}},
		{"eleven bytes", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x81, 0x00}},
		{"truncated after one", []byte{0x80}},
		{"truncated after two", []byte{0x80, 0x80}},
		{"empty", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A leading byte checks that positions are absolute.
			b := append([]byte{0x7f}, tt.b...)
			r := reader{b: b, pos: 1, end: len(b)}
			want, wantErr := r.varintSlow()
			got, pos, err := uvarintAt(b, 1, len(b))
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("error %v, want %v", err, wantErr)
			}
			if err != nil {
				if err.Error() != wantErr.Error() {
					t.Errorf("error %q, want %q", err, wantErr)
				}
				return
			}
			if got != want || pos != r.pos {
				t.Errorf("got %d ending at %d, want %d ending at %d", got, pos, want, r.pos)
			}
		})
	}
}
