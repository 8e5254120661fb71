package gzipmem

import (
	"math/bits"
	"sync"
)

// Decoding tables.
//
// A table is a flat []uint32. Its first 1<<primaryBits entries form the
// primary table, indexed by the next primaryBits bits of input (DEFLATE packs
// Huffman codes starting with their most significant bit, so the low bits of
// the bit buffer hold the code bit-reversed; the tables are built for that
// reversed form). A code of length l <= primaryBits owns every primary entry
// whose low l bits equal the reversed code. Codes longer than primaryBits are
// grouped by their first primaryBits bits; each group gets a subtable after the
// primary table, indexed by the bits that follow, and the primary entry for
// the group is a link to it.
//
// Entry layout (bit ranges inclusive):
//
//	0-7    n: number of bits to consume for the symbol: the code length plus
//	       the number of extra bits that follow it (length and distance
//	       codes); zero for a link
//	8-11   the code length (also in subtable entries, so consuming is the
//	       same at both levels), or for a link the number of index bits of
//	       the subtable
//	12-15  flags: one of flagLiteral, flagBase, flagEnd, flagLink; zero
//	       marks an invalid symbol or an unused bit pattern
//	16-31  value: the literal byte, the length or distance base, or for a link
//	       the offset of the subtable in the table
//
// Packing the base and the extra-bit count into the entry avoids a second
// lookup in the RFC's length and distance tables on the hot path, and
// counting the extra bits in n lets the decoder consume code and extra bits
// with one shift: the extra value is then the bits between the code length
// and n of the bit buffer as it was before.
const (
	flagLiteral = 1 << 12 // literal byte in value
	flagBase    = 1 << 13 // length or distance: value + extra bits
	flagEnd     = 1 << 14 // end of block
	flagLink    = 1 << 15 // subtable link

	litBits  = 10       // primary index bits of literal/length tables
	distBits = 8        // primary index bits of distance tables
	clenBits = maxCLLen // code length codes are short enough to need no subtables

	// Table sizes: primary table plus room for subtables. A complete code of
	// at most 288 symbols with at most 15 bits needs far fewer subtable
	// entries than this (each subtable of 1<<k entries needs at least k+1
	// symbols, so 288/6 subtables of 32 entries is a loose bound);
	// buildTable still checks the bound and reports failure rather than
	// writing out of range.
	litTableSize  = 1<<litBits + 288/6*32 + 32
	distTableSize = 1<<distBits + 32/4*128
)

// litInfo, distInfo and clenInfo give the entry bits for every symbol of
// each alphabet, except that the low byte holds only the number of extra
// bits: buildTable adds the code length. Reserved symbols are zero, which
// makes them invalid when decoded.
var (
	litInfo  [288]uint32
	distInfo [32]uint32
	clenInfo [19]uint32
)

func init() {
	for i := range 256 {
		litInfo[i] = flagLiteral | uint32(i)<<16
	}
	litInfo[endBlock] = flagEnd
	for c, extra := range lengthExtra {
		litInfo[257+c] = flagBase | uint32(extra) | uint32(lengthBase[c])<<16
	}
	for c, extra := range distExtra {
		distInfo[c] = flagBase | uint32(extra) | uint32(distBase[c])<<16
	}
	for sym := range clenInfo {
		clenInfo[sym] = flagLiteral | uint32(sym)<<16
	}
}

// Fixed Huffman tables (RFC 1951 section 3.2.6), built on first use and then
// only read, so they are shared by all Decompressors.
var (
	fixedOnce sync.Once
	fixedLit  [litTableSize]uint32
	fixedDist [distTableSize]uint32
)

func initFixed() {
	var lens [288]uint8
	for i := range lens {
		switch {
		case i < 144:
			lens[i] = 8
		case i < 256:
			lens[i] = 9
		case i < 280:
			lens[i] = 7
		default:
			lens[i] = 8
		}
	}
	var dlens [32]uint8
	for i := range dlens {
		dlens[i] = 5
	}
	if !buildTable(fixedLit[:], litBits, lens[:], litInfo[:]) ||
		!buildTable(fixedDist[:], distBits, dlens[:], distInfo[:]) {
		panic("gzipmem: cannot build fixed Huffman tables")
	}
}

// buildTable fills table with the decoding table for the canonical Huffman
// code whose code lengths are lens (lens[sym] == 0: sym is unused); info[sym]
// holds the entry bits for sym. It reports whether the code is acceptable.
//
// Acceptance follows compress/flate exactly: the code must be complete
// (Kraft sum 1), except that a code with a single symbol of length 1 is
// accepted (zlib emits those for one-distance blocks) and an empty code is
// accepted (decoding any symbol with it is then an error).
func buildTable(table []uint32, primaryBits uint, lens []uint8, info []uint32) bool {
	var count [maxCodeLen + 1]int
	for _, l := range lens {
		count[l]++
	}
	count[0] = 0
	left, maxLen := 1, 0
	for l := 1; l <= maxCodeLen; l++ {
		left = left<<1 - count[l]
		if left < 0 {
			return false // over-subscribed
		}
		if count[l] > 0 {
			maxLen = l
		}
	}
	primarySize := 1 << primaryBits
	primary := table[:primarySize]
	if left > 0 {
		if maxLen > 1 || count[1] > 1 {
			return false // incomplete
		}
		// An empty or single-code table: every entry not claimed below
		// must read as invalid. A complete code claims every entry of
		// the primary table and of its subtables, so they need no
		// clearing.
		clear(primary)
		if maxLen == 0 {
			return true
		}
	}

	next := firstCodes(&count)

	if maxLen > int(primaryBits) {
		// Size each subtable for the longest code sharing its prefix, then
		// lay the subtables out after the primary table.
		// The prefixes are listed as they are met, which saves a scan of
		// the whole primary table.
		var subLen [1 << litBits]uint8
		var prefixes [288]uint16
		np := 0
		nx := next
		for _, l := range lens {
			if int(l) <= int(primaryBits) {
				continue
			}
			r := reverse(nx[l], l)
			nx[l]++
			p := r & (primarySize - 1)
			if subLen[p] == 0 {
				prefixes[np] = uint16(p)
				np++
			}
			subLen[p] = max(subLen[p], l)
		}
		off := primarySize
		for _, p := range prefixes[:np] {
			k := uint32(subLen[p]) - uint32(primaryBits)
			if off+1<<k > len(table) {
				return false
			}
			primary[p] = flagLink | k<<8 | uint32(off)<<16
			off += 1 << k
		}
	}

	for sym, l := range lens {
		if l == 0 {
			continue
		}
		r := reverse(next[l], l)
		next[l]++
		e := info[sym] + uint32(l) | uint32(l)<<8
		if int(l) <= int(primaryBits) {
			for i := r; i < primarySize; i += 1 << l {
				primary[i] = e
			}
			continue
		}
		link := primary[r&(primarySize-1)]
		sub := table[link>>16 : link>>16+1<<(link>>8&15)]
		for i := r >> primaryBits; i < len(sub); i += 1 << (int(l) - int(primaryBits)) {
			sub[i] = e
		}
	}
	return true
}

// reverse returns the low n bits of code in reverse order.
func reverse(code int, n uint8) int {
	return int(bits.Reverse16(uint16(code)) >> (16 - n))
}
