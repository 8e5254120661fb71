package gzipmem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
)

// ErrLimit is returned by [Decompressor.AppendGunzip] when the decompressed
// data would exceed the caller's limit.
var ErrLimit = errors.New("gzipmem: decompressed data exceeds limit")

// The errors are sentinels so that failing calls allocate nothing either.
var (
	errTruncated = fmt.Errorf("gzipmem: truncated input: %w", io.ErrUnexpectedEOF)
	errHeader    = errors.New("gzipmem: invalid gzip header")
	errChecksum  = errors.New("gzipmem: gzip checksum or size mismatch")
	errBlockType = errors.New("gzipmem: invalid block type")
	errStored    = errors.New("gzipmem: stored block length mismatch")
	errCodes     = errors.New("gzipmem: invalid Huffman code lengths")
	errSymbol    = errors.New("gzipmem: invalid Huffman code")
	errDistance  = errors.New("gzipmem: match distance before start of output")
)

// Decompressor decompresses gzip streams held in memory. The zero value is
// ready to use; it keeps its tables between calls so that steady-state use
// allocates nothing. Not safe for concurrent use.
type Decompressor struct {
	lit  [litTableSize]uint32  // literal/length table of the current dynamic block
	dist [distTableSize]uint32 // distance table of the current dynamic block
	clen [1 << clenBits]uint32 // code length code table
	lens [numLitLen + numDist]uint8
}

// growSlack is how far past limit the output buffer may grow, so that the
// eight-byte match copies still have room near the limit.
const growSlack = 512

// AppendGunzip decompresses src, a gzip stream of one or more members
// (RFC 1952), appends the result to dst and returns the extended slice.
//
// If the decompressed data would make the result longer than limit bytes in
// total (len(dst) included), it returns ErrLimit as soon as that is known,
// without decoding the rest. Corrupt or truncated input returns an error;
// CRC-32 and ISIZE of every member are verified. On error the returned slice
// is dst extended by whatever was decoded before the error was detected; its
// contents past len(dst) are not meaningful.
//
// The accepted input is the same as for compress/gzip's multistream Reader
// read to the end: empty input is an error, reserved header flag bits are
// ignored, FNAME and FCOMMENT (including their NUL) may be at most 512 bytes
// long, and anything after the last member that is not a complete, valid gzip
// member (zero padding included) is an error. Matches may not reach back
// before the start of their member's output.
//
// When dst lacks capacity, the output is grown geometrically, first to about
// four times len(src), never far beyond limit. When the capacity suffices,
// AppendGunzip allocates nothing.
func (d *Decompressor) AppendGunzip(dst, src []byte, limit int) ([]byte, error) {
	st := state{
		out:   dst[:cap(dst)],
		o:     len(dst),
		limit: limit,
		guess: len(dst) + 4*len(src),
	}
	if len(src) == 0 {
		return dst, errTruncated
	}
	p := 0
	for p < len(src) {
		n, err := parseHeader(src[p:])
		if err != nil {
			return st.out[:st.o], err
		}
		p += n
		start := st.o
		n, err = d.inflate(&st, src[p:])
		if err != nil {
			return st.out[:st.o], err
		}
		p += n
		if len(src)-p < 8 {
			return st.out[:st.o], errTruncated
		}
		sum := binary.LittleEndian.Uint32(src[p:])
		size := binary.LittleEndian.Uint32(src[p+4:])
		p += 8
		if sum != crc32.ChecksumIEEE(st.out[start:st.o]) || size != uint32(st.o-start) {
			return st.out[:st.o], errChecksum
		}
	}
	return st.out[:st.o], nil
}

// Header flags (RFC 1952 section 2.3.1).
const (
	flagHCRC    = 1 << 1
	flagExtra   = 1 << 2
	flagName    = 1 << 3
	flagComment = 1 << 4
)

// parseHeader checks the gzip member header at the start of src and returns
// its length.
func parseHeader(src []byte) (int, error) {
	if len(src) < 10 {
		return 0, errTruncated
	}
	if src[0] != 0x1f || src[1] != 0x8b || src[2] != 8 {
		return 0, errHeader
	}
	flg := src[3]
	p := 10
	if flg&flagExtra != 0 {
		if len(src)-p < 2 {
			return 0, errTruncated
		}
		n := int(binary.LittleEndian.Uint16(src[p:]))
		p += 2
		if len(src)-p < n {
			return 0, errTruncated
		}
		p += n
	}
	for _, f := range [...]byte{flagName, flagComment} {
		if flg&f == 0 {
			continue
		}
		// compress/gzip reads these strings into a 512-byte buffer and
		// rejects longer ones; do the same so both accept the same input.
		s := src[p:]
		if len(s) > 512 {
			s = s[:512]
		}
		i := slices.Index(s, 0)
		if i < 0 {
			if len(s) == 512 {
				return 0, errHeader
			}
			return 0, errTruncated
		}
		p += i + 1
	}
	if flg&flagHCRC != 0 {
		if len(src)-p < 2 {
			return 0, errTruncated
		}
		if binary.LittleEndian.Uint16(src[p:]) != uint16(crc32.ChecksumIEEE(src[:p])) {
			return 0, errHeader
		}
		p += 2
	}
	return p, nil
}

// state is the output side of a decompression: out[:o] is the data so far,
// out[o:] spare capacity.
type state struct {
	out   []byte
	o     int
	limit int
	guess int // first capacity to grow to
}

// grow makes room for at least need more bytes after o. The caller has
// checked that o+need <= limit.
func (st *state) grow(need int) {
	want := max(st.o+need+8, 2*cap(st.out), st.guess)
	if st.limit <= math.MaxInt-growSlack {
		want = min(want, st.limit+growSlack)
	}
	want = max(want, st.o+need)
	// Not slices.Grow: append's growth policy could round far past limit.
	out := make([]byte, want)
	copy(out, st.out[:st.o])
	st.out = out
}

// bitReader reads the DEFLATE bit stream, least significant bit first.
type bitReader struct {
	src []byte
	// pos is the next byte of src to load into bits. Past the end of src
	// the reader loads zero bytes, which still advance pos; that keeps the
	// decoding loop free of end-of-input checks, and reading too far is
	// detected by overrun.
	pos   int
	bits  uint64
	nbits uint // number of valid bits in bits; higher bits may hold copies of src[pos:] and must be masked off
}

// refill makes at least 56 bits available.
func (br *bitReader) refill() {
	if br.pos+8 <= len(br.src) {
		br.bits |= binary.LittleEndian.Uint64(br.src[br.pos:]) << (br.nbits & 63)
		br.pos += int((63 - br.nbits) >> 3)
		br.nbits |= 56
		return
	}
	for br.nbits <= 56 {
		if br.pos < len(br.src) {
			br.bits |= uint64(br.src[br.pos]) << (br.nbits & 63)
		}
		br.pos++
		br.nbits += 8
	}
}

// overrun reports whether more bits were consumed than src holds.
func (br *bitReader) overrun() bool {
	return (br.pos-len(br.src))*8 > int(br.nbits)
}

// take consumes and returns n <= 56 bits; refill must have been called.
func (br *bitReader) take(n uint) uint64 {
	v := br.bits & (1<<(n&63) - 1)
	br.bits >>= n & 63
	br.nbits -= n
	return v
}

// alignedPos discards the bits up to the next byte boundary and returns the
// offset in src of the next unread byte. The caller checks overrun first.
func (br *bitReader) alignedPos() int {
	return br.pos - int(br.nbits/8)
}

// inflate decodes the DEFLATE stream at the start of src into st and returns
// the number of bytes of src it used.
func (d *Decompressor) inflate(st *state, src []byte) (int, error) {
	br := bitReader{src: src}
	wstart := st.o
	for {
		br.refill()
		if br.overrun() {
			return 0, errTruncated
		}
		hdr := br.take(3)
		var err error
		switch hdr >> 1 {
		case 0:
			err = d.storedBlock(st, &br)
		case 1:
			fixedOnce.Do(initFixed)
			err = huffmanBlock(st, &br, wstart, &fixedLit, &fixedDist)
		case 2:
			if err = d.readCodes(&br); err == nil {
				err = huffmanBlock(st, &br, wstart, &d.lit, &d.dist)
			}
		default:
			err = errBlockType
		}
		if err != nil {
			return 0, err
		}
		if br.overrun() {
			return 0, errTruncated
		}
		if hdr&1 != 0 {
			return br.alignedPos(), nil
		}
	}
}

// storedBlock copies an uncompressed block (RFC 1951 section 3.2.4).
func (d *Decompressor) storedBlock(st *state, br *bitReader) error {
	if br.overrun() {
		return errTruncated
	}
	p := br.alignedPos()
	src := br.src
	if len(src)-p < 4 {
		return errTruncated
	}
	n := int(binary.LittleEndian.Uint16(src[p:]))
	if uint16(n) != ^binary.LittleEndian.Uint16(src[p+2:]) {
		return errStored
	}
	p += 4
	if len(src)-p < n {
		return errTruncated
	}
	if n > 0 && n > st.limit-st.o {
		return ErrLimit
	}
	if n > len(st.out)-st.o {
		st.grow(n)
	}
	st.o += copy(st.out[st.o:], src[p:p+n])
	br.pos, br.bits, br.nbits = p+n, 0, 0
	return nil
}

// readCodes reads a dynamic block header and builds d.lit and d.dist.
func (d *Decompressor) readCodes(br *bitReader) error {
	br.refill()
	nlit := int(br.take(5)) + 257
	ndist := int(br.take(5)) + 1
	nclen := int(br.take(4)) + 4
	if nlit > numLitLen || ndist > numDist {
		return errCodes
	}
	var clens [19]uint8
	for i := range nclen {
		if i%16 == 0 { // 16 codes of 3 bits fit in one refill
			br.refill()
		}
		clens[codeOrder[i]] = uint8(br.take(3))
	}
	if !buildTable(d.clen[:], clenBits, clens[:], clenInfo[:]) {
		return errCodes
	}
	lens := d.lens[:nlit+ndist]
	for i := 0; i < len(lens); {
		// Code length codes are at most 7 bits plus 7 extra bits.
		br.refill()
		if br.overrun() {
			return errTruncated
		}
		e := d.clen[br.bits&(1<<clenBits-1)]
		if e == 0 {
			return errSymbol
		}
		br.take(uint(e & 0xff))
		sym := e >> 16
		if sym < 16 {
			lens[i] = uint8(sym)
			i++
			continue
		}
		var rep int
		var v uint8
		switch sym {
		case 16:
			if i == 0 {
				return errCodes
			}
			rep, v = 3+int(br.take(2)), lens[i-1]
		case 17:
			rep = 3 + int(br.take(3))
		default:
			rep = 11 + int(br.take(7))
		}
		if rep > len(lens)-i {
			return errCodes
		}
		for range rep {
			lens[i] = v
			i++
		}
	}
	if br.overrun() {
		return errTruncated
	}
	if !buildTable(d.lit[:], litBits, lens[:nlit], litInfo[:]) ||
		!buildTable(d.dist[:], distBits, lens[nlit:], distInfo[:]) {
		return errCodes
	}
	return nil
}

// Margins of the fast loop in huffmanBlock: it runs while at least
// fastInput bytes of input remain, so that every refill is a single load,
// and while the output has room for the longest match plus the overshoot of
// the eight-byte copies (at most 15 bytes), so that it needs no room checks.
const (
	fastInput  = 8
	fastOutput = 258 + 16
)

// huffmanBlock decodes the compressed data of a Huffman block up to and
// including its end-of-block symbol. wstart is where the member's output
// starts: matches may not reach before it.
//
// It alternates between fastLoop, which decodes while enough input and
// output room remain to need no checks for either, and a careful step that
// decodes a single symbol anywhere (near the end of input or of the output
// buffer, growing it, enforcing the limit). Keeping them in separate
// functions keeps the fast loop's variables in registers.
func huffmanBlock(st *state, br *bitReader, wstart int, lt *[litTableSize]uint32, dt *[distTableSize]uint32) error {
	for {
		if outFast := min(len(st.out)-fastOutput, st.limit-258); br.pos <= len(br.src)-fastInput && st.o <= outFast {
			o, err := fastLoop(br, st.out, st.o, outFast, wstart, lt, dt)
			st.o = o
			if err != nil {
				return err
			}
		}
		if done, err := carefulStep(st, br, wstart, lt, dt); done || err != nil {
			return err
		}
	}
}

// fastLoop decodes symbols into out from o on while at least fastInput
// bytes of input remain and o <= outFast, which leaves room for the longest
// match and the overshoot of the eight-byte copies and keeps the output
// within the limit. It returns the new output position; it stops early,
// without consuming it, at a symbol it does not handle (end of block, an
// invalid literal/length code).
//
// This is the hot loop: it keeps the bit reader in local variables,
// refills the bit buffer once per iteration (enough for a whole match), and
// has no checks other than for corrupt input and the loop condition.
func fastLoop(br *bitReader, out []byte, o, outFast, wstart int, lt *[litTableSize]uint32, dt *[distTableSize]uint32) (int, error) {
	src := br.src
	pos, bits, nbits := br.pos, br.bits, br.nbits
	srcFast := len(src) - fastInput
	var err error
	for pos <= srcFast && o <= outFast {
		// Load eight bytes, keep the whole ones that fit: this is
		// at least 56 bits, enough for the longest match (48).
		// Bits above nbits receive copies of the next bytes, which
		// later refills OR in again at the same place.
		bits |= binary.LittleEndian.Uint64(src[pos:]) << (nbits & 63)
		pos += int((63 - nbits) >> 3)
		nbits |= 56

		e := lt[bits&(1<<litBits-1)]
		if e&flagLink != 0 {
			e = lt[e>>16+uint32(bits>>litBits)&(1<<(e>>8&15)-1)]
		}
		if e&flagLiteral != 0 {
			// Literals come in runs. This one used at most 15
			// of the 56 bits refilled, so up to three more
			// literals from the primary table (at most 10 bits
			// each) are already in the buffer; decoding them
			// here saves refills and loop checks.
			n := uint(e & 63)
			bits >>= n
			nbits -= n
			out[o] = byte(e >> 16)
			e = lt[bits&(1<<litBits-1)]
			if e&flagLiteral == 0 {
				o++
				// A run usually ends with a match. If
				// its length code is in the primary
				// table and the buffer still holds the
				// longest match (48 bits), decode it
				// now rather than after a refill.
				if e&flagBase == 0 || nbits < 48 {
					continue
				}
			} else {
				n = uint(e & 63)
				bits >>= n
				nbits -= n
				out[o+1] = byte(e >> 16)
				e = lt[bits&(1<<litBits-1)]
				if e&flagLiteral == 0 {
					o += 2
					continue
				}
				n = uint(e & 63)
				bits >>= n
				nbits -= n
				out[o+2] = byte(e >> 16)
				e = lt[bits&(1<<litBits-1)]
				if e&flagLiteral == 0 {
					o += 3
					continue
				}
				n = uint(e & 63)
				bits >>= n
				nbits -= n
				out[o+3] = byte(e >> 16)
				o += 4
				continue
			}
		}
		if e&flagBase == 0 {
			// End of block or an invalid code: let the
			// careful step deal with it.
			break
		}
		// One shift consumes the code and its extra bits; the
		// extra value lies above the code in the saved bits.
		saved := bits
		n := uint(e & 63)
		bits >>= n
		nbits -= n
		length := int(e>>16) + int(saved&(1<<n-1)>>(e>>8&15))

		e = dt[bits&(1<<distBits-1)]
		if e&flagLink != 0 {
			e = dt[e>>16+uint32(bits>>distBits)&(1<<(e>>8&15)-1)]
		}
		if e&flagBase == 0 {
			err = errSymbol
			break
		}
		saved = bits
		n = uint(e & 63)
		bits >>= n
		nbits -= n
		dist := int(e>>16) + int(saved&(1<<n-1)>>(e>>8&15))
		if dist > o-wstart {
			err = errDistance
			break
		}
		// Copy eight bytes at a time, overshooting the end by up to
		// 15 bytes. The copy is written out here rather than called:
		// a call would make the compiler spill the loop's variables.
		s := o - dist
		switch {
		case dist >= 8 && length <= 16:
			// Most matches are short: two unconditional chunks.
			// With dist >= 8 every chunk's source lies before
			// its destination.
			binary.LittleEndian.PutUint64(out[o:], binary.LittleEndian.Uint64(out[s:]))
			binary.LittleEndian.PutUint64(out[o+8:], binary.LittleEndian.Uint64(out[s+8:]))
		case dist >= 16:
			// Sixteen bytes per step; sources still lie before
			// their destinations.
			for i := 0; i < length; i += 16 {
				binary.LittleEndian.PutUint64(out[o+i:], binary.LittleEndian.Uint64(out[s+i:]))
				binary.LittleEndian.PutUint64(out[o+i+8:], binary.LittleEndian.Uint64(out[s+i+8:]))
			}
		case dist == 1:
			// A run of one byte.
			v := uint64(out[s]) * 0x0101010101010101
			for i := 0; i < length; i += 8 {
				binary.LittleEndian.PutUint64(out[o+i:], v)
			}
		default:
			// With a short distance, write the first
			// spread[dist] bytes one at a time; after that the
			// data repeats with period spread[dist] >= 8, so
			// chunks can be copied from that far back.
			i := 0
			if dist < 8 {
				dist = spread[dist&7]
				for ; i < dist && i < length; i++ {
					out[o+i] = out[s+i]
				}
				s = o + i - dist
			}
			for ; i < length; i, s = i+8, s+8 {
				binary.LittleEndian.PutUint64(out[o+i:], binary.LittleEndian.Uint64(out[s:]))
			}
		}
		o += length
	}

	br.pos, br.bits, br.nbits = pos, bits, nbits
	return o, err
}

// carefulStep decodes one symbol with every check, growing the output as
// needed. It reports whether the block has ended.
func carefulStep(st *state, br *bitReader, wstart int, lt *[litTableSize]uint32, dt *[distTableSize]uint32) (bool, error) {
	// Each symbol consumes at least one bit, so checking for an overrun
	// here ends decoding once the input is exhausted.
	br.refill()
	if br.overrun() {
		return true, errTruncated
	}
	bits, nbits := br.bits, br.nbits
	out, o, limit := st.out, st.o, st.limit
	done, err := true, error(nil)
	// A loop of one iteration, so that every exit breaks out of it and
	// stores the state back.
loop:
	for range 1 {
		e := lt[bits&(1<<litBits-1)]
		if e&flagLink != 0 {
			e = lt[e>>16+uint32(bits>>litBits)&(1<<(e>>8&15)-1)]
		}
		saved := bits
		n := uint(e & 63)
		bits >>= n
		nbits -= n

		if e&flagLiteral != 0 {
			if o >= min(len(out), limit) {
				if o >= limit {
					err = ErrLimit
					break loop
				}
				st.o = o
				st.grow(1)
				out = st.out
			}
			out[o] = byte(e >> 16)
			o++
			done = false
			break loop
		}
		if e&flagBase == 0 {
			if e&flagEnd == 0 {
				err = errSymbol
			}
			break loop
		}
		length := int(e>>16) + int(saved&(1<<n-1)>>(e>>8&15))

		e = dt[bits&(1<<distBits-1)]
		if e&flagLink != 0 {
			e = dt[e>>16+uint32(bits>>distBits)&(1<<(e>>8&15)-1)]
		}
		if e&flagBase == 0 {
			err = errSymbol
			break loop
		}
		saved = bits
		n = uint(e & 63)
		bits >>= n
		nbits -= n
		dist := int(e>>16) + int(saved&(1<<n-1)>>(e>>8&15))
		if dist > o-wstart {
			err = errDistance
			break loop
		}
		if length > limit-o {
			err = ErrLimit
			break loop
		}
		if length > len(out)-o {
			st.o = o
			st.grow(length)
			out = st.out
		}
		s := o - dist
		if dist >= length {
			copy(out[o:o+length], out[s:s+length])
		} else {
			for i := range length {
				out[o+i] = out[s+i]
			}
		}
		o += length
		done = false
	}
	br.bits, br.nbits = bits, nbits
	st.out, st.o = out, o
	return done, err
}

// spread[dist] for dist < 8 is the smallest multiple of dist that is at
// least 8: a match with a short distance repeats with that period too, which
// lets it be copied eight bytes at a time once the first period is written.
var spread = [8]int{0, 8, 8, 9, 8, 10, 12, 14}
