// Package deflate compresses into the gzip format (RFC 1952 around
// RFC 1951's DEFLATE) from memory, for the exporters' request bodies.
//
// compress/gzip at its fastest level spends most of its time on a small
// request in building each block's Huffman codes (a 23 KB OTLP request took
// it about 300 µs); this encoder finds matches the same way but builds the
// codes with an in-place algorithm and writes 32 bits at a time, and it
// keeps no state between calls but its tables. Any gzip reader decodes its
// output; the tests check that compress/gzip does, on every kind of input.
package deflate
