package gzipmem

import (
	"slices"
)

// huffman is a length-limited canonical Huffman code for one block.
type huffman struct {
	lens  [numLitLen]uint8  // code length of each symbol, 0 if unused
	codes [numLitLen]uint16 // code of each symbol, bit-reversed for writing

	order []uint32 // scratch: frequency<<9 | symbol of the used symbols
	work  []int32  // scratch: weights, then lengths, in frequency order
}

// build makes the code for the frequencies of len(freq) symbols, no code
// longer than maxBits. Every code has at least two symbols: a single used
// symbol gets a partner, as decoders need complete codes (an unused code of
// length 1 would be rejected by some).
func (h *huffman) build(freq []int32, maxBits int) {
	h.order = h.order[:0]
	for sym, f := range freq {
		if f != 0 {
			h.order = append(h.order, uint32(f)<<9|uint32(sym))
		}
	}
	for sym := 0; len(h.order) < 2; sym++ {
		if freq[sym] == 0 {
			h.order = append(h.order, 1<<9|uint32(sym))
		}
	}
	// By frequency, then symbol. A block has at most blockTokens tokens, so
	// frequencies fit the 23 bits above the symbol.
	slices.Sort(h.order)

	clear(h.lens[:len(freq)])
	h.work = h.work[:0]
	for _, o := range h.order {
		h.work = append(h.work, int32(o>>9))
	}
	minimumRedundancy(h.work)
	limitLengths(h.work, maxBits)
	for i, o := range h.order {
		h.lens[o&0x1ff] = uint8(h.work[i])
	}

	// Canonical codes (RFC 1951 section 3.2.2): by length, then symbol.
	var count [maxCodeLen + 1]int
	for _, l := range h.lens[:len(freq)] {
		count[l]++
	}
	next := firstCodes(&count)
	for sym, l := range h.lens[:len(freq)] {
		if l != 0 {
			h.codes[sym] = uint16(reverse(next[l], l))
			next[l]++
		}
	}
}

// minimumRedundancy replaces the weights of a, sorted in increasing order,
// by the code lengths of an optimal prefix code for them, in place (Moffat
// and Katajainen, "In-Place Calculation of Minimum-Redundancy Codes",
// 1995). len(a) is at least 2.
func minimumRedundancy(a []int32) {
	n := len(a)
	// First pass, left to right: internal nodes' weights, then their
	// parents' indices.
	a[0] += a[1]
	root, leaf := 0, 2
	for next := 1; next < n-1; next++ {
		if leaf >= n || a[root] < a[leaf] {
			a[next] = a[root]
			a[root] = int32(next)
			root++
		} else {
			a[next] = a[leaf]
			leaf++
		}
		if leaf >= n || (root < next && a[root] < a[leaf]) {
			a[next] += a[root]
			a[root] = int32(next)
			root++
		} else {
			a[next] += a[leaf]
			leaf++
		}
	}
	// Second pass, right to left: internal nodes' depths.
	a[n-2] = 0
	for next := n - 3; next >= 0; next-- {
		a[next] = a[a[next]] + 1
	}
	// Third pass, right to left: leaves' depths.
	avail, used, depth := 1, 0, int32(0)
	root, next := n-2, n-1
	for avail > 0 {
		for root >= 0 && a[root] == depth {
			used++
			root--
		}
		for avail > used {
			a[next] = depth
			next--
			avail--
		}
		avail, used, depth = 2*used, 0, depth+1
	}
}

// limitLengths shortens code lengths longer than maxBits, keeping the code
// complete: lengths are counted per length, the excess is moved to maxBits,
// and codes are lengthened from the longest ones below maxBits until the
// Kraft sum is one again (the method of miniz's tdefl). The lengths, of
// symbols in increasing order of frequency, are then assigned again from
// the longest to the shortest, so that frequent symbols keep short codes.
func limitLengths(lens []int32, maxBits int) {
	longest := int32(0)
	for _, l := range lens {
		longest = max(longest, l)
	}
	if int(longest) <= maxBits {
		return
	}
	var count [64]int
	for _, l := range lens {
		count[min(int(l), maxBits)]++
	}
	total := 0
	for l := 1; l <= maxBits; l++ {
		total += count[l] << (maxBits - l)
	}
	for ; total > 1<<maxBits; total-- {
		count[maxBits]--
		for l := maxBits - 1; l > 0; l-- {
			if count[l] != 0 {
				count[l]--
				count[l+1] += 2
				break
			}
		}
	}
	i := 0
	for l := maxBits; l > 0; l-- {
		for range count[l] {
			lens[i] = int32(l)
			i++
		}
	}
}
