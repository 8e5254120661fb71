package gzipmem

import (
	"encoding/binary"
	"hash/crc32"
	"math/bits"
)

const (
	minMatch   = 4 // shorter repeats are left as literals, as in compress/flate's fastest level
	maxMatch   = 258
	windowSize = 1 << 15 // the farthest a match may reach back

	tableBits = 14 // hash table of 16,384 positions: 64 KB, cleared per call

	// blockTokens and blockInput bound the tokens and input of one block,
	// so that its Huffman codes follow the data as it changes. A block
	// ends at the first token boundary past blockInput bytes, at most a
	// match or a step later, which keeps a block that is stored within
	// one stored block's 65,535 bytes.
	blockTokens = 1 << 15
	blockInput  = 0xffff - maxMatch - 33

	// A token is a literal byte (below 1<<8) or a match: matchFlag, the
	// length less 3 in bits 16-23 and the distance less one in bits 0-14.
	matchFlag = 1 << 31
)

// A Compressor writes gzip streams (RFC 1952) of byte slices held in
// memory: an LZ77 pass over the whole input with a hash table of recent
// positions, like compress/flate's fastest level, and blocks with Huffman
// codes made for their own data (RFC 1951 "dynamic" blocks), or stored
// when that is smaller.
//
// It keeps its tables from one call to the next, so that compressing
// allocates nothing but the output once the output's capacity suffices.
// The zero value is ready to use. A Compressor is not safe for concurrent
// use.
type Compressor struct {
	table  [1 << tableBits]uint32 // position+1 of the last 4 bytes of each hash
	tokens []uint32

	litFreq  [numLitLen]int32
	distFreq [numDist]int32
	lit      huffman
	dist     huffman
	cl       huffman

	clSyms []uint8 // code length symbols of the block header, with repeat counts
	w      bitWriter
}

// AppendGzip appends the gzip stream of src to dst and returns the extended
// slice.
func (c *Compressor) AppendGzip(dst, src []byte) []byte {
	// Header: no name, no time; XFL 4 tells the fastest compression; OS
	// 255 is unknown, as compress/gzip writes.
	dst = append(dst, 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255)
	dst = c.appendDeflate(dst, src)
	dst = binary.LittleEndian.AppendUint32(dst, crc32.ChecksumIEEE(src))
	return binary.LittleEndian.AppendUint32(dst, uint32(len(src)))
}

// appendDeflate appends the DEFLATE stream of src to dst.
func (c *Compressor) appendDeflate(dst, src []byte) []byte {
	c.w = bitWriter{out: dst}
	if len(src) == 0 || uint64(len(src)) >= 1<<32-1 {
		// The table holds 32-bit positions: an input of 4 GiB or more,
		// far more than a request, is stored as it is.
		c.storedBlock(src, true)
		return c.w.flush()
	}
	clear(c.table[:])
	c.tokens = c.tokens[:0]
	blockStart := 0 // of the input the pending tokens cover
	litStart := 0   // first byte not yet in a token
	for i := 0; i+minMatch <= len(src); {
		cur := binary.LittleEndian.Uint32(src[i:])
		h := hash4(cur)
		cand := int(c.table[h]) - 1
		c.table[h] = uint32(i + 1)
		if cand < 0 || i-cand > windowSize || binary.LittleEndian.Uint32(src[cand:]) != cur {
			// Step faster through data that does not repeat: one more
			// byte for every 32 since the last match, up to 32, so
			// that data that repeats again after a long stretch that
			// did not is still searched closely.
			i += 1 + min(i-litStart, 1<<10)>>5
			if i-blockStart >= blockInput {
				// A long run of literals ends a block too, which
				// bounds a block's symbol frequencies.
				c.addLiterals(src[litStart:i])
				litStart = i
				c.block(src[blockStart:i], false)
				blockStart = i
			}
			continue
		}
		n := minMatch + matchLen(src[cand+minMatch:], src[i+minMatch:min(len(src), i+maxMatch)])
		c.addLiterals(src[litStart:i])
		c.tokens = append(c.tokens, matchFlag|uint32(n-3)<<16|uint32(i-cand-1))
		c.litFreq[257+int(lengthCode[n-3])]++
		c.distFreq[distCode(i-cand-1)]++
		i += n
		litStart = i
		if i+minMatch <= len(src) {
			// The match's last position, so that a run continues.
			c.table[hash4(binary.LittleEndian.Uint32(src[i-1:]))] = uint32(i)
		}
		if len(c.tokens) >= blockTokens || litStart-blockStart >= blockInput {
			c.block(src[blockStart:litStart], false)
			blockStart = litStart
		}
	}
	c.addLiterals(src[litStart:])
	c.block(src[blockStart:], true)
	return c.w.flush()
}

func (c *Compressor) addLiterals(lits []byte) {
	for _, b := range lits {
		c.tokens = append(c.tokens, uint32(b))
		c.litFreq[b]++
	}
}

// hash4 spreads four bytes over the table's index bits.
func hash4(u uint32) uint32 {
	return (u * 0x1e35a7bd) >> (32 - tableBits)
}

// matchLen returns how many leading bytes a and b share, b being the
// shorter or as long.
func matchLen(a, b []byte) int {
	n := 0
	for len(b)-n >= 8 {
		if x := binary.LittleEndian.Uint64(a[n:]) ^ binary.LittleEndian.Uint64(b[n:]); x != 0 {
			return n + bits.TrailingZeros64(x)>>3
		}
		n += 8
	}
	for n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// block writes the pending tokens, which encode data, as one block, and
// resets the frequencies for the next.
func (c *Compressor) block(data []byte, final bool) {
	c.litFreq[endBlock] = 1
	c.lit.build(c.litFreq[:], maxCodeLen)
	c.dist.build(c.distFreq[:], maxCodeLen)
	nlit, ndist := trimZeros(c.lit.lens[:numLitLen], 257), trimZeros(c.dist.lens[:numDist], 1)
	c.codeLengthSymbols(nlit, ndist)
	ncl := numCodeLen
	for ncl > 4 && c.cl.lens[codeOrder[ncl-1]] == 0 {
		ncl--
	}

	// Bits of the dynamic block, to compare with storing data as it is.
	size := 3 + 5 + 5 + 4 + 3*ncl
	for i := 0; i < len(c.clSyms); i++ {
		s := c.clSyms[i]
		size += int(c.cl.lens[s]) + int(clExtraBits[s])
		if s >= 16 {
			i++ // the repeat count
		}
	}
	for sym, f := range c.litFreq {
		if f != 0 {
			extra := 0
			if sym > 256 {
				extra = int(lengthExtra[sym-257])
			}
			size += int(f) * (int(c.lit.lens[sym]) + extra)
		}
	}
	for sym, f := range c.distFreq {
		if f != 0 {
			size += int(f) * (int(c.dist.lens[sym]) + int(distExtra[sym]))
		}
	}
	stored := (len(data)/0xffff + 1) * (5 * 8) // headers, with the alignment at most
	stored += len(data) * 8
	if stored < size {
		c.storedBlock(data, final)
	} else {
		c.dynamicBlock(nlit, ndist, ncl, final)
	}
	c.tokens = c.tokens[:0]
	clear(c.litFreq[:])
	clear(c.distFreq[:])
}

// trimZeros returns the number of lengths to send: up to the last code
// used, and at least least.
func trimZeros(lens []uint8, least int) int {
	n := len(lens)
	for n > least && lens[n-1] == 0 {
		n--
	}
	return n
}

func (c *Compressor) dynamicBlock(nlit, ndist, ncl int, final bool) {
	w := &c.w
	w.write(b2u(final)|2<<1, 3)
	w.write(uint64(nlit-257), 5)
	w.write(uint64(ndist-1), 5)
	w.write(uint64(ncl-4), 4)
	for _, s := range codeOrder[:ncl] {
		w.write(uint64(c.cl.lens[s]), 3)
	}
	for i := 0; i < len(c.clSyms); i++ {
		s := c.clSyms[i]
		w.write(uint64(c.cl.codes[s]), uint(c.cl.lens[s]))
		if s >= 16 {
			i++
			w.write(uint64(c.clSyms[i]), uint(clExtraBits[s]))
		}
	}

	litCodes, litLens := &c.lit.codes, &c.lit.lens
	distCodes, distLens := &c.dist.codes, &c.dist.lens
	for _, t := range c.tokens {
		if t&matchFlag == 0 {
			w.write(uint64(litCodes[t]), uint(litLens[t]))
			continue
		}
		l := int(t>>16) & 0xff
		lc := lengthCode[l]
		sym := 257 + int(lc)
		// The code, then its extra bits, in one write of at most
		// 15 + 5 bits.
		n := uint(litLens[sym])
		w.write(uint64(litCodes[sym])|uint64(l+3-int(lengthBase[lc]))<<n, n+uint(lengthExtra[lc]))
		d := int(t & 0x7fff)
		dc := distCode(d)
		n = uint(distLens[dc])
		w.write(uint64(distCodes[dc])|uint64(d+1-int(distBase[dc]))<<n, n+uint(distExtra[dc]))
	}
	w.write(uint64(litCodes[endBlock]), uint(litLens[endBlock]))
}

// storedBlock writes data uncompressed, in blocks of at most 65,535 bytes.
func (c *Compressor) storedBlock(data []byte, final bool) {
	w := &c.w
	for {
		n := min(len(data), 0xffff)
		last := final && n == len(data)
		w.write(b2u(last), 3)
		w.align()
		w.out = binary.LittleEndian.AppendUint16(w.out, uint16(n))
		w.out = binary.LittleEndian.AppendUint16(w.out, ^uint16(n))
		w.out = append(w.out, data[:n]...)
		data = data[n:]
		if len(data) == 0 {
			return
		}
	}
}

// codeLengthSymbols builds c.clSyms, the literal/length and distance code
// lengths as code length symbols (RFC 1951 section 3.2.7, runs of zeros and
// repeats shortened), and the code length code c.cl for them.
func (c *Compressor) codeLengthSymbols(nlit, ndist int) {
	var freq [numCodeLen]int32
	c.clSyms = c.clSyms[:0]
	add := func(sym, extra uint8) {
		freq[sym]++
		c.clSyms = append(c.clSyms, sym)
		if sym >= 16 {
			c.clSyms = append(c.clSyms, extra)
		}
	}
	// The two lists are sent as one sequence: runs may cross from one
	// into the other.
	lens := func(i int) uint8 {
		if i < nlit {
			return c.lit.lens[i]
		}
		return c.dist.lens[i-nlit]
	}
	total := nlit + ndist
	for i := 0; i < total; {
		l := lens(i)
		run := 1
		for i+run < total && lens(i+run) == l {
			run++
		}
		i += run
		if l == 0 {
			for run >= 11 {
				n := min(run, 138)
				add(18, uint8(n-11))
				run -= n
			}
			if run >= 3 {
				add(17, uint8(run-3))
				run = 0
			}
		} else {
			add(l, 0)
			run--
			for run >= 3 {
				n := min(run, 6)
				add(16, uint8(n-3))
				run -= n
			}
		}
		for ; run > 0; run-- {
			add(l, 0)
		}
	}
	c.cl.build(freq[:], maxCLLen)
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// bitWriter appends bits least significant first, as DEFLATE packs them.
type bitWriter struct {
	out   []byte
	bits  uint64
	nbits uint
}

// write appends the n low bits of v; n is at most 32 and v has no bits
// above them.
func (w *bitWriter) write(v uint64, n uint) {
	w.bits |= v << (w.nbits & 63)
	w.nbits += n
	if w.nbits >= 32 {
		w.out = binary.LittleEndian.AppendUint32(w.out, uint32(w.bits))
		w.bits >>= 32
		w.nbits -= 32
	}
}

// align pads with zero bits to a byte boundary and writes out the whole
// bytes.
func (w *bitWriter) align() {
	w.nbits = (w.nbits + 7) &^ 7
	for w.nbits > 0 {
		w.out = append(w.out, byte(w.bits))
		w.bits >>= 8
		w.nbits -= 8
	}
}

// flush ends the stream at a byte boundary and returns the output.
func (w *bitWriter) flush() []byte {
	w.align()
	out := w.out
	w.out = nil
	return out
}
