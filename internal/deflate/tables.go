package deflate

import "math/bits"

// Tables of RFC 1951 section 3.2.5, indexed for the encoder: lengthCode by
// the match length less 3, with lengthBase and lengthExtra by the code
// (less 257); distBase and distExtra by the distance code. Bases are
// stored less 3 (lengths) and less 1 (distances), as tokens hold them.
var (
	lengthCode  [256]uint8
	lengthBase  [29]uint8
	lengthExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase    [numDist]uint16
	distExtra   = [numDist]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}

	// clOrder is the order in which code length code lengths are sent.
	clOrder = [numCodeLen]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}
	// clExtraBits gives the repeat count's bits of code length symbols.
	clExtraBits = [numCodeLen]uint8{16: 2, 17: 3, 18: 7}
)

func init() {
	l := 0
	for code := range 28 {
		lengthBase[code] = uint8(l)
		for range 1 << lengthExtra[code] {
			lengthCode[l] = uint8(code)
			l++
		}
	}
	// Length 258 has a code of its own, although 257 + 1<<5 of the code
	// before would reach it.
	lengthBase[28] = 255
	lengthCode[255] = 28
	d := 0
	for code := range numDist {
		distBase[code] = uint16(d)
		d += 1 << distExtra[code]
	}
}

// distCode returns the code of a distance less one, d < 32,768.
func distCode(d int) int {
	if d < 4 {
		return d
	}
	n := bits.Len(uint(d)) // d's highest bit is n-1, and the code's extra bits are n-2
	return 2*(n-1) + (d>>(n-2))&1
}
