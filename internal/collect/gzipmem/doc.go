// Package gzipmem is a fast gzip (RFC 1952) and DEFLATE (RFC 1951)
// decompressor for data held entirely in memory.
//
// compress/gzip reads its input through an io.ByteReader one byte at a time
// and streams its output through a 32 KiB window, which makes it spend most of
// its time on bookkeeping rather than on decoding. When the whole compressed
// stream is already in memory and the output goes into a single growing slice,
// a decoder can do much better:
//
//   - The bit buffer is 64 bits wide and is refilled eight bytes at a time with
//     a single unaligned load while at least eight input bytes remain, so one
//     refill covers a whole literal/length code, its extra bits, a distance
//     code and its extra bits (at most 15+5+15+13 = 48 bits).
//   - Huffman codes are decoded with a table lookup on the low bits of the bit
//     buffer: a primary table indexed by the next 10 (literal/length) or 8
//     (distance) bits, plus second-level subtables for the rare longer codes.
//     Each table entry is a packed uint32 holding everything needed to act on
//     the symbol (see the entry layout in table.go).
//   - The output slice is the window: matches copy from earlier output
//     directly, eight bytes at a time when the source does not overlap the
//     next eight destination bytes and the slice has room for the overshoot.
//
// The package accepts exactly the streams compress/gzip's multistream Reader
// accepts and produces identical output for them (the fuzz test checks this);
// see [Decompressor.AppendGunzip] for the details.
package gzipmem
