package gzipmem

// RFC 1951's alphabets and tables.
const (
	numLitLen  = 286 // valid literal/length symbols (286 and 287 are reserved)
	numDist    = 30  // valid distance symbols (30 and 31 are reserved)
	numCodeLen = 19  // code length symbols
	endBlock   = 256 // the literal/length symbol that ends a block
	maxCodeLen = 15  // longest literal/length or distance code
	maxCLLen   = 7   // longest code length code
)

var (
	// codeOrder is the order of the code length code lengths (section
	// 3.2.7).
	codeOrder = [numCodeLen]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}

	// Length code c (symbol 257+c) stands for lengths lengthBase[c] to
	// lengthBase[c] + 1<<lengthExtra[c] - 1, distance code c for
	// distances distBase[c] and on likewise (section 3.2.5).
	lengthExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distExtra   = [numDist]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
	lengthBase  = bases(lengthExtra[:], 3)
	distBase    = bases(distExtra[:], 1)
)

// bases returns the first value of each code whose extra bits are extra,
// counting from first.
func bases(extra []uint8, first int) []uint16 {
	b := make([]uint16, len(extra))
	v := first
	for c, e := range extra {
		b[c] = uint16(v)
		v += 1 << e
	}
	if len(extra) == len(lengthExtra) {
		// Length 258 has a code of its own (285), although the code
		// before reaches it with its extra bits.
		b[len(b)-1] = 258
	}
	return b
}

// firstCodes returns the first canonical code of each length for a code
// with count[l] codes of length l (section 3.2.2); count[0], the unused
// symbols, does not count.
func firstCodes(count *[maxCodeLen + 1]int) [maxCodeLen + 1]int {
	var next [maxCodeLen + 1]int
	code := 0
	for l := 2; l <= maxCodeLen; l++ {
		code = (code + count[l-1]) << 1
		next[l] = code
	}
	return next
}
