package gzipmem

import (
	"bytes"
	"compress/gzip"
	"errors"
	"testing"
)

// fuzzLimit bounds the output of both decoders so that small inputs that
// expand enormously do not stall the fuzzer.
const fuzzLimit = 1 << 20

// FuzzAppendGunzip checks that AppendGunzip accepts exactly what
// compress/gzip's multistream Reader accepts and produces the same bytes.
func FuzzAppendGunzip(f *testing.F) {
	for _, level := range []int{gzip.HuffmanOnly, gzip.NoCompression, 1, 6, 9} {
		f.Add(gz(f, []byte("hello hello hello, fuzzing world"), level, 0))
		f.Add(gz(f, makeData("mixed", 3000, 1), level, 1000))
	}
	f.Add(append(gz(f, []byte("a"), 1, 0), gz(f, nil, 6, 0)...))
	f.Add(gz(f, makeData("runs", 5000, 2), 1, 0))
	f.Add(wrap(gzipHeader, dynamicBlock(map[int]int{0: 1, 1: 2, 256: 2}, func(w *blockWriter) { w.code(0, 1); w.code(3, 2) }), []byte{0}))
	var d Decompressor
	f.Fuzz(func(t *testing.T, src []byte) {
		got, err := d.AppendGunzip(nil, src, fuzzLimit)
		want, stdErr := stdGunzip(src, fuzzLimit)
		tooLong := stdErr == nil && len(want) > fuzzLimit
		switch {
		case errors.Is(err, ErrLimit):
			// We stop at the limit; compress/gzip must either have
			// produced more than the limit too or have failed
			// (possibly later in the stream than where we stopped).
			if stdErr == nil && !tooLong {
				t.Fatalf("ErrLimit, but compress/gzip gives %d bytes", len(want))
			}
		case err != nil:
			if stdErr == nil {
				t.Fatalf("AppendGunzip: %v; compress/gzip succeeds with %d bytes", err, len(want))
			}
		default:
			if stdErr != nil {
				t.Fatalf("AppendGunzip succeeds with %d bytes; compress/gzip: %v", len(got), stdErr)
			}
			if tooLong || !bytes.Equal(got, want) {
				t.Fatalf("outputs differ: %d vs %d bytes", len(got), len(want))
			}
		}
	})
}
