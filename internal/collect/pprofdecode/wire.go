package pprofdecode

import (
	"encoding/binary"
	"fmt"
)

// Protocol buffer wire types used by profile.proto.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireStart   = 3 // deprecated group start
	wireEnd     = 4 // deprecated group end
	wireFixed32 = 5
)

// span is the byte range [start, end) of one length-delimited field's
// payload inside the buffer being decoded.
type span struct {
	start, end int
}

// reader walks the fields of one protobuf message. Positions are absolute
// offsets into b so that error messages point at the same offset whichever
// nested message the error is found in.
type reader struct {
	b   []byte
	pos int
	end int
}

func newReader(b []byte, s span) reader {
	return reader{b: b, pos: s.start, end: s.end}
}

func (r *reader) more() bool { return r.pos < r.end }

// varint reads one base-128 varint. The one-byte case is handled inline
// because ids, string indices and small values dominate pprof data.
func (r *reader) varint() (uint64, error) {
	if i := r.pos; i < r.end && r.b[i] < 0x80 {
		r.pos = i + 1
		return uint64(r.b[i]), nil
	}
	return r.varintSlow()
}

func (r *reader) varintSlow() (uint64, error) {
	start := r.pos
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if r.pos >= r.end {
			return 0, fmt.Errorf("profile: truncated varint at offset %d", start)
		}
		c := r.b[r.pos]
		r.pos++
		if shift == 63 && c > 1 {
			return 0, fmt.Errorf("profile: varint at offset %d overflows 64 bits", start)
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, nil
		}
	}
}

// uvarintAt is varint for loops that keep their position in a local
// variable, which the compiler can hold in a register.
// One- and two-byte varints (location ids up to 16383) are decoded inline;
// longer ones, such as heap byte counts, by binary.Uvarint, which accepts
// exactly the varints varintSlow does; only errors go through the reader,
// for their message.
func uvarintAt(b []byte, pos, end int) (uint64, int, error) {
	if pos < end {
		c := b[pos]
		if c < 0x80 {
			return uint64(c), pos + 1, nil
		}
		if pos+1 < end && b[pos+1] < 0x80 {
			return uint64(c&0x7f) | uint64(b[pos+1])<<7, pos + 2, nil
		}
		if v, n := binary.Uvarint(b[pos:end]); n > 0 {
			return v, pos + n, nil
		}
	}
	r := reader{b: b, pos: pos, end: end}
	v, err := r.varintSlow()
	return v, r.pos, err
}

// key reads a field key and splits it into field number and wire type.
func (r *reader) key() (field int, wire int, err error) {
	start := r.pos
	k, err := r.varint()
	if err != nil {
		return 0, 0, err
	}
	field = int(k >> 3)
	if field == 0 || k>>3 > 1<<29-1 {
		return 0, 0, fmt.Errorf("profile: invalid field number %d at offset %d", k>>3, start)
	}
	return field, int(k & 7), nil
}

// bytesField reads the length prefix of a length-delimited payload and
// returns its span, rejecting a length that runs past the enclosing message
// before anything is allocated for it.
func (r *reader) bytesField() (span, error) {
	at := r.pos
	n, err := r.varint()
	if err != nil {
		return span{}, err
	}
	if left := uint64(r.end - r.pos); n > left {
		return span{}, fmt.Errorf("profile: length %d at offset %d runs past the end of its message (%d bytes left)", n, at, left)
	}
	s := span{start: r.pos, end: r.pos + int(n)}
	r.pos = s.end
	return s, nil
}

// skip steps over the payload of a field this decoder does not use, as
// protobuf requires for forward compatibility.
func (r *reader) skip(wire int) error {
	switch wire {
	case wireVarint:
		_, err := r.varint()
		return err
	case wireBytes:
		_, err := r.bytesField()
		return err
	case wireFixed64:
		return r.skipFixed(8)
	case wireFixed32:
		return r.skipFixed(4)
	case wireStart, wireEnd:
		return fmt.Errorf("profile: unsupported group wire type %d at offset %d", wire, r.pos)
	default:
		return fmt.Errorf("profile: invalid wire type %d at offset %d", wire, r.pos)
	}
}

func (r *reader) skipFixed(n int) error {
	if r.end-r.pos < n {
		return fmt.Errorf("profile: truncated %d-byte fixed field at offset %d", n, r.pos)
	}
	r.pos += n
	return nil
}

// uvarintField reads the value of a scalar varint field (int64, uint64 or
// bool in profile.proto), rejecting any other wire type.
func (r *reader) uvarintField(wire int, name string) (uint64, error) {
	if wire != wireVarint {
		return 0, r.wireTypeError(name, wire, wireVarint)
	}
	return r.varint()
}

// messageField reads the span of an embedded message or string field.
func (r *reader) messageField(wire int, name string) (span, error) {
	if wire != wireBytes {
		return span{}, r.wireTypeError(name, wire, wireBytes)
	}
	return r.bytesField()
}

func (r *reader) wireTypeError(name string, got, want int) error {
	return fmt.Errorf("profile: field %s at offset %d has wire type %d, want %d", name, r.pos, got, want)
}
