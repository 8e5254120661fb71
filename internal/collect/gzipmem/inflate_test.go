package gzipmem

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"
)

// stdGunzip decompresses src with compress/gzip's multistream Reader,
// reading at most limit+1 bytes.
func stdGunzip(src []byte, limit int) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(src))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(zr, int64(limit)+1))
}

// gz compresses data at level; flushEvery > 0 calls Flush after every
// flushEvery bytes, which emits empty stored blocks.
func gz(t testing.TB, data []byte, level, flushEvery int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, level)
	if err != nil {
		t.Fatal(err)
	}
	for len(data) > 0 {
		n := len(data)
		if flushEvery > 0 {
			n = min(n, flushEvery)
		}
		if _, err := zw.Write(data[:n]); err != nil {
			t.Fatal(err)
		}
		data = data[n:]
		if flushEvery > 0 {
			if err := zw.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// makeData returns n bytes of the given kind.
func makeData(kind string, n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	switch kind {
	case "random":
		for i := range b {
			b[i] = byte(r.Uint32())
		}
	case "text":
		words := []string{"the ", "profile ", "sample ", "runtime.", "mallocgc ", "func", "(", ") ", "\n", "github.com/", "location ", "0x4a3f2", "value "}
		i := 0
		for i < n {
			i += copy(b[i:], words[r.IntN(len(words))])
		}
	case "repetitive":
		pat := []byte("abcabcabdabcab")
		for i := range b {
			b[i] = pat[i%len(pat)]
		}
	case "runs":
		// Long runs of one byte: distance-1 matches.
		for i := 0; i < n; {
			c, l := byte(r.Uint32()), 1+r.IntN(2000)
			for ; l > 0 && i < n; l, i = l-1, i+1 {
				b[i] = c
			}
		}
	case "far":
		// A random block of 32 KiB repeated: matches at distance 32768.
		for i := range b {
			if i < 32768 {
				b[i] = byte(r.Uint32())
			} else {
				b[i] = b[i-32768]
			}
		}
	case "mixed":
		// Short-distance structure with noise: matches of all distances 1..8.
		for i := range b {
			if d := 1 + r.IntN(12); i >= d && r.IntN(8) != 0 {
				b[i] = b[i-d]
			} else {
				b[i] = byte(r.IntN(4))
			}
		}
	default:
		panic(kind)
	}
	return b
}

// check decompresses src with both decoders (also with a non-empty dst and
// exact capacity) and compares.
func check(t *testing.T, d *Decompressor, src, want []byte) {
	t.Helper()
	got, err := d.AppendGunzip(nil, src, 1<<30)
	if err != nil {
		t.Fatalf("AppendGunzip: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("output differs: got %d bytes, want %d", len(got), len(want))
	}
	std, err := stdGunzip(src, 1<<30)
	if err != nil || !bytes.Equal(std, want) {
		t.Fatalf("compress/gzip disagrees: %v", err)
	}
	prefix := []byte("prefix")
	dst := make([]byte, len(prefix), len(prefix)+len(want))
	copy(dst, prefix)
	got, err = d.AppendGunzip(dst, src, len(prefix)+len(want))
	if err != nil || !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):], want) {
		t.Fatalf("append with exact capacity and limit: err %v", err)
	}
}

var levels = []int{gzip.HuffmanOnly, gzip.NoCompression, 1, 2, 3, 4, 5, 6, 7, 8, 9, gzip.DefaultCompression}

func TestDifferential(t *testing.T) {
	var d Decompressor
	kinds := []string{"random", "text", "repetitive", "runs", "far", "mixed"}
	sizes := []int{0, 1, 2, 3, 4, 9, 100, 258, 1000, 4096, 32768 + 300, 70000, 300 << 10}
	n := 0
	for _, kind := range kinds {
		for _, size := range sizes {
			data := makeData(kind, size, uint64(size))
			for _, level := range levels {
				// Under the race detector, run every eleventh case:
				// eleven is prime to the number of levels, so every
				// kind, size and level is still exercised.
				if n++; raceEnabled && n%11 != 0 {
					continue
				}
				t.Run(fmt.Sprintf("%s/%d/level%d", kind, size, level), func(t *testing.T) {
					check(t, &d, gz(t, data, level, 0), data)
				})
			}
		}
	}
}

func TestLarge(t *testing.T) {
	var d Decompressor
	size, levels := 3<<20, []int{1, 6}
	if raceEnabled {
		size, levels = 1<<20, []int{1}
	}
	for _, kind := range []string{"text", "mixed", "far"} {
		data := makeData(kind, size, 1)
		for _, level := range levels {
			t.Run(fmt.Sprintf("%s/level%d", kind, level), func(t *testing.T) {
				check(t, &d, gz(t, data, level, 0), data)
			})
		}
	}
}

func TestFlush(t *testing.T) {
	var d Decompressor
	size := 50000
	if raceEnabled {
		size = 10000
	}
	data := makeData("text", size, 3)
	for _, level := range []int{gzip.NoCompression, 1, 6, gzip.HuffmanOnly} {
		for _, every := range []int{1, 10, 1000, 40000} {
			t.Run(fmt.Sprintf("level%d/every%d", level, every), func(t *testing.T) {
				check(t, &d, gz(t, data, level, every), data)
			})
		}
	}
}

func TestMultiMember(t *testing.T) {
	var d Decompressor
	a, b := makeData("text", 1000, 1), makeData("random", 70000, 2)
	tests := []struct {
		name string
		src  []byte
		want []byte
	}{
		{"two", append(gz(t, a, 6, 0), gz(t, b, 1, 0)...), append(append([]byte{}, a...), b...)},
		{"empty-first", append(gz(t, nil, 6, 0), gz(t, a, 1, 0)...), a},
		{"empty-both", append(gz(t, nil, 6, 0), gz(t, nil, 0, 0)...), nil},
		{"three", append(append(gz(t, a, 9, 0), gz(t, a, 0, 0)...), gz(t, a, 1, 0)...), bytes.Repeat(a, 3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, &d, tt.src, tt.want) })
	}
}

// rawDeflate compresses data without a container.
func rawDeflate(t *testing.T, data []byte) []byte {
	var buf bytes.Buffer
	fw, _ := flate.NewWriter(&buf, 6)
	fw.Write(data)
	fw.Close()
	return buf.Bytes()
}

// wrap builds a gzip member by hand around raw DEFLATE data, with the
// trailer computed from want.
func wrap(hdr, deflate, want []byte) []byte {
	b := append(append([]byte{}, hdr...), deflate...)
	b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(want))
	return binary.LittleEndian.AppendUint32(b, uint32(len(want)))
}

func TestHeaderFields(t *testing.T) {
	var d Decompressor
	data := []byte("hello, header fields")
	withHCRC := func(flags byte, extra ...byte) []byte {
		h := append([]byte{0x1f, 0x8b, 8, flags | flagHCRC, 1, 2, 3, 4, 0, 255}, extra...)
		return binary.LittleEndian.AppendUint16(h, uint16(crc32.ChecksumIEEE(h)))
	}
	tests := []struct {
		name string
		src  []byte
	}{
		{"name-comment-extra", func() []byte {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			zw.Name, zw.Comment, zw.Extra = "file.pb", "a comment", []byte{'A', 'B', 3, 0, 1, 2, 3}
			zw.Write(data)
			zw.Close()
			return buf.Bytes()
		}()},
		{"hcrc", wrap(withHCRC(0), rawDeflate(t, data), data)},
		{"hcrc-name-extra", wrap(withHCRC(flagName|flagExtra|flagComment, 2, 0, 'x', 'y', 'n', 0, 'c', 0), rawDeflate(t, data), data)},
		{"reserved-flags", wrap([]byte{0x1f, 0x8b, 8, 0xe0, 0, 0, 0, 0, 0, 0}, rawDeflate(t, data), data)},
		{"name-511", wrap(append(append([]byte{0x1f, 0x8b, 8, flagName, 0, 0, 0, 0, 0, 0}, bytes.Repeat([]byte{'n'}, 511)...), 0), rawDeflate(t, data), data)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, &d, tt.src, data) })
	}
}

// profileFiles returns real runtime pprof outputs: the repository's test
// data and a heap profile written now.
func profileFiles(t testing.TB) map[string][]byte {
	files := map[string][]byte{}
	for _, pattern := range []string{"../pprofdecode/testdata/*.pb.gz", "../../../benchmark/testdata/*.pb.gz"} {
		names, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			files[name] = b
		}
	}
	if len(files) < 6 {
		t.Fatalf("found only %d profile files", len(files))
	}
	var buf bytes.Buffer
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(&buf, 0); err != nil {
		t.Fatal(err)
	}
	files["runtime-heap"] = buf.Bytes()
	return files
}

func TestProfiles(t *testing.T) {
	var d Decompressor
	for name, src := range profileFiles(t) {
		t.Run(filepath.Base(name), func(t *testing.T) {
			want, err := stdGunzip(src, 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			check(t, &d, src, want)
		})
	}
}

// blockWriter writes hand-made DEFLATE blocks, packing bits least
// significant first as DEFLATE does.
type blockWriter struct {
	out   []byte
	acc   uint64
	nbits uint
}

// bits writes the low n bits of v, least significant first.
func (w *blockWriter) bits(v uint64, n uint) {
	w.acc |= v << w.nbits
	w.nbits += n
	for w.nbits >= 8 {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
		w.nbits -= 8
	}
}

// code writes an n-bit Huffman code, most significant bit first.
func (w *blockWriter) code(c uint64, n uint) { w.bits(uint64(reverse(int(c), uint8(n))), n) }

// flush pads the last byte with zero bits and returns the output.
func (w *blockWriter) flush() []byte {
	if w.nbits > 0 {
		w.out = append(w.out, byte(w.acc))
		w.acc, w.nbits = 0, 0
	}
	return w.out
}

// dynamicBlock writes a final dynamic block with 257 literal/length and one
// distance code lengths given by litLens (symbol -> length, others 0), using
// the code length code {0: "0", 1: "10", 2: "11"}, then the body.
func dynamicBlock(litLens map[int]int, body func(w *blockWriter)) []byte {
	w := &blockWriter{}
	w.bits(1, 1)  // BFINAL
	w.bits(2, 2)  // dynamic
	w.bits(0, 5)  // HLIT: 257
	w.bits(0, 5)  // HDIST: 1
	w.bits(15, 4) // HCLEN: 19
	clen := map[int]uint64{0: 1, 1: 2, 2: 2}
	for _, sym := range codeOrder {
		w.bits(clen[int(sym)], 3)
	}
	put := func(l int) {
		switch l {
		case 0:
			w.code(0, 1)
		case 1:
			w.code(2, 2)
		case 2:
			w.code(3, 2)
		default:
			panic(l)
		}
	}
	for sym := range 257 {
		put(litLens[sym])
	}
	put(1) // one distance code of length 1
	body(w)
	return w.flush()
}

// fixedBlock writes a final fixed Huffman block with the given body.
func fixedBlock(body func(w *blockWriter)) []byte {
	w := &blockWriter{}
	w.bits(1, 1)
	w.bits(1, 2)
	body(w)
	return w.flush()
}

// Fixed code helpers (RFC 1951 section 3.2.6).
func fixedLiteral(w *blockWriter, c byte) { w.code(0x30+uint64(c), 8) } // c < 144
func fixedEnd(w *blockWriter)             { w.code(0, 7) }

var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}

func TestCorrupt(t *testing.T) {
	valid := gz(t, []byte("corrupt me, corrupt me, corrupt me please"), 6, 0)
	validWant := []byte("corrupt me, corrupt me, corrupt me please")
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte{}, valid...)) }
	// Over-subscribed: three codes of length 1. Incomplete: 1 + 2 bits.
	// Complete: 1 + 2 + 2 bits, literal 0 then end of block ("0", "11").
	complete := dynamicBlock(map[int]int{0: 1, 1: 2, 256: 2}, func(w *blockWriter) { w.code(0, 1); w.code(3, 2) })
	tests := []struct {
		name string
		src  []byte
		want []byte // nil: must fail
	}{
		{"empty", nil, nil},
		{"bad-magic", mod(func(b []byte) []byte { b[1] = 0; return b }), nil},
		{"bad-method", mod(func(b []byte) []byte { b[2] = 7; return b }), nil},
		{"bad-crc", mod(func(b []byte) []byte { b[len(b)-8]++; return b }), nil},
		{"bad-isize", mod(func(b []byte) []byte { b[len(b)-4]++; return b }), nil},
		{"bad-hcrc", wrap([]byte{0x1f, 0x8b, 8, flagHCRC, 0, 0, 0, 0, 0, 0, 1, 2}, rawDeflate(t, validWant), validWant), nil},
		{"block-type-3", wrap(gzipHeader, []byte{0x07, 0, 0}, nil), nil},
		{"stored-nlen", wrap(gzipHeader, []byte{1, 2, 0, 0xfd, 0xfe, 'a', 'b'}, []byte("ab")), nil},
		{"stored-ok", wrap(gzipHeader, []byte{1, 2, 0, 0xfd, 0xff, 'a', 'b'}, []byte("ab")), []byte("ab")},
		{"dynamic-complete", wrap(gzipHeader, complete, []byte{0}), []byte{0}},
		{"dynamic-oversubscribed", wrap(gzipHeader, dynamicBlock(map[int]int{0: 1, 1: 1, 256: 1}, func(w *blockWriter) {}), nil), nil},
		{"dynamic-incomplete", wrap(gzipHeader, dynamicBlock(map[int]int{0: 1, 256: 2}, func(w *blockWriter) { w.code(0, 1); w.code(2, 2) }), []byte{0}), nil},
		{"clen-oversubscribed", wrap(gzipHeader, func() []byte {
			w := &blockWriter{}
			w.bits(5, 3)
			w.bits(0, 14)
			for range 19 {
				w.bits(1, 3)
			}
			return w.flush()
		}(), nil), nil},
		{"distance-too-far", wrap(gzipHeader, fixedBlock(func(w *blockWriter) {
			fixedLiteral(w, 'a')
			w.code(1, 7) // length 3
			w.code(1, 5) // distance 2
			fixedEnd(w)
		}), []byte("aaaa")), nil},
		{"distance-ok", wrap(gzipHeader, fixedBlock(func(w *blockWriter) {
			fixedLiteral(w, 'a')
			w.code(1, 7) // length 3
			w.code(0, 5) // distance 1
			fixedEnd(w)
		}), []byte("aaaa")), []byte("aaaa")},
		{"distance-into-previous-member", append(gz(t, []byte("abc"), 6, 0), wrap(gzipHeader, fixedBlock(func(w *blockWriter) {
			w.code(1, 7) // length 3
			w.code(2, 5) // distance 3
			fixedEnd(w)
		}), []byte("abc"))...), nil},
		{"fixed-reserved-length", wrap(gzipHeader, fixedBlock(func(w *blockWriter) {
			fixedLiteral(w, 'a')
			w.code(0xc6, 8) // symbol 286
			w.code(0, 5)
			fixedEnd(w)
		}), []byte("aaaa")), nil},
		{"fixed-reserved-distance", wrap(gzipHeader, fixedBlock(func(w *blockWriter) {
			fixedLiteral(w, 'a')
			w.code(1, 7)
			w.code(30, 5) // distance symbol 30
			fixedEnd(w)
		}), []byte("aaaa")), nil},
		{"trailing-zeros", append(append([]byte{}, valid...), 0, 0, 0, 0), nil},
		{"trailing-zeros-10", append(append([]byte{}, valid...), make([]byte, 10)...), nil},
		{"trailing-garbage", append(append([]byte{}, valid...), "garbage garbage"...), nil},
		{"trailing-magic", append(append([]byte{}, valid...), 0x1f, 0x8b), nil},
	}
	var d Decompressor
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := d.AppendGunzip(nil, tt.src, 1<<20)
			std, stdErr := stdGunzip(tt.src, 1<<20)
			if tt.want == nil {
				if err == nil {
					t.Fatalf("AppendGunzip succeeded, want error")
				}
				if stdErr == nil {
					t.Fatalf("compress/gzip succeeded: test input is wrong")
				}
				return
			}
			if err != nil || !bytes.Equal(got, tt.want) {
				t.Fatalf("AppendGunzip = %q, %v; want %q", got, err, tt.want)
			}
			if stdErr != nil || !bytes.Equal(std, tt.want) {
				t.Fatalf("compress/gzip = %q, %v; test input is wrong", std, stdErr)
			}
		})
	}
}

func TestTruncated(t *testing.T) {
	var d Decompressor
	data := makeData("text", 3000, 9)
	for _, level := range []int{gzip.NoCompression, 1, 9, gzip.HuffmanOnly} {
		first := gz(t, data[:20], 6, 0)
		src := append(first, gz(t, data, level, 500)...)
		for n := range len(src) {
			if n == len(first) {
				continue // a complete one-member stream
			}
			if _, err := d.AppendGunzip(nil, src[:n], 1<<20); err == nil {
				t.Fatalf("level %d: truncated to %d of %d bytes: no error", level, n, len(src))
			}
		}
	}
}

func TestBitFlips(t *testing.T) {
	var d Decompressor
	data := makeData("text", 2000, 5)
	for _, level := range []int{0, 1, 9, gzip.HuffmanOnly} {
		src := gz(t, data, level, 0)
		buf := make([]byte, len(src))
		// Under the race detector, flip every eleventh bit: still
		// every bit position within a byte, and every region of the
		// stream.
		step := 1
		if raceEnabled {
			step = 11
		}
		for i := 0; i < len(src)*8; i += step {
			copy(buf, src)
			buf[i/8] ^= 1 << (i % 8)
			got, err := d.AppendGunzip(nil, buf, 1<<20)
			std, stdErr := stdGunzip(buf, 1<<20)
			if (err == nil) != (stdErr == nil) || err == nil && !bytes.Equal(got, std) {
				t.Fatalf("level %d, bit %d flipped: ours %v, compress/gzip %v", level, i, err, stdErr)
			}
		}
	}
}

func TestLimit(t *testing.T) {
	var d Decompressor
	data := makeData("mixed", 100000, 4)
	for _, level := range []int{gzip.NoCompression, 1, 9, gzip.HuffmanOnly} {
		src := gz(t, data, level, 0)
		for _, prefix := range []int{0, 10} {
			dst := make([]byte, prefix)
			if _, err := d.AppendGunzip(dst, src, prefix+len(data)-1); !errors.Is(err, ErrLimit) {
				t.Errorf("level %d: limit len-1: err = %v, want ErrLimit", level, err)
			}
			got, err := d.AppendGunzip(dst, src, prefix+len(data))
			if err != nil || !bytes.Equal(got[prefix:], data) {
				t.Errorf("level %d: limit len: err = %v", level, err)
			}
			if cap(got) > prefix+len(data)+growSlack {
				t.Errorf("level %d: grew to %d for %d bytes", level, cap(got), prefix+len(data))
			}
			if _, err := d.AppendGunzip(dst, src, prefix); !errors.Is(err, ErrLimit) {
				t.Errorf("level %d: limit 0: err = %v, want ErrLimit", level, err)
			}
		}
	}
}

// TestLimitStopsEarly checks that a stream that expands enormously is not
// decoded past the limit.
func TestLimitStopsEarly(t *testing.T) {
	var d Decompressor
	// BestSpeed, and less data under the race detector: compressing is
	// what takes time here, and 16 MiB is still far past the limit and
	// the allocation bound below.
	size := 50 << 20
	if raceEnabled {
		size = 16 << 20
	}
	src := gz(t, make([]byte, size), gzip.BestSpeed, 0)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	out, err := d.AppendGunzip(nil, src, 1<<20)
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("err = %v, want ErrLimit", err)
	}
	runtime.ReadMemStats(&ms)
	if ms.TotalAlloc-before > 8<<20 || cap(out) > 2<<20 {
		t.Fatalf("allocated %d bytes, cap %d, for a 1 MiB limit", ms.TotalAlloc-before, cap(out))
	}
}

func TestAllocs(t *testing.T) {
	var d Decompressor
	for name, src := range profileFiles(t) {
		want, err := stdGunzip(src, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]byte, 0, len(want))
		allocs := testing.AllocsPerRun(10, func() {
			got, err := d.AppendGunzip(dst[:0], src, 1<<30)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: err %v", name, err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per run, want 0", name, allocs)
		}
	}
}

func BenchmarkAppendGunzip(b *testing.B) {
	inputs := map[string][]byte{}
	names, _ := filepath.Glob("../../../benchmark/testdata/*.pb.gz")
	for _, name := range names {
		src, err := os.ReadFile(name)
		if err != nil {
			b.Fatal(err)
		}
		inputs[filepath.Base(name)] = src
	}
	// A ~1 MB profile-like input compressed as the runtime does.
	inputs["synthetic-1MB"] = gz(b, makeData("text", 1<<20, 1), gzip.BestSpeed, 0)
	for _, name := range []string{"block.pb.gz", "heap.pb.gz", "mutex.pb.gz", "synthetic-1MB"} {
		src := inputs[name]
		if src == nil {
			b.Fatalf("missing %s", name)
		}
		want, err := stdGunzip(src, 1<<30)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name+"/ours", func(b *testing.B) {
			var d Decompressor
			dst := make([]byte, 0, len(want))
			b.SetBytes(int64(len(want)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.AppendGunzip(dst[:0], src, 1<<30); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/stdlib", func(b *testing.B) {
			br := bytes.NewReader(src)
			zr, err := gzip.NewReader(br)
			if err != nil {
				b.Fatal(err)
			}
			buf := bytes.NewBuffer(make([]byte, 0, len(want)+bytes.MinRead))
			b.SetBytes(int64(len(want)))
			b.ReportAllocs()
			for b.Loop() {
				br.Reset(src)
				if err := zr.Reset(br); err != nil {
					b.Fatal(err)
				}
				buf.Reset()
				if _, err := buf.ReadFrom(zr); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestBlockBoundarySweep decodes inputs of every length across deflate
// block boundaries: the natural ones of compress/flate's stored and
// Huffman-only blocks (every 65,535 bytes of input) and the ones a Flush
// makes every 1,000 bytes at every level, so that each end of a block
// meets the fast loop's margins (8 input and 274 output bytes) at every
// offset. compress/gzip's reader is the reference.
func TestBlockBoundarySweep(t *testing.T) {
	data := makeData("mixed", 132_000, 3)
	type sweep struct {
		levels          []int
		from, to        int
		flushEvery      int
		strideUnderRace int
	}
	natural := []int{gzip.NoCompression, gzip.HuffmanOnly}
	sweeps := []sweep{
		{natural, 65_535 - 300, 65_535 + 300, 0, 29},
		{natural, 2*65_535 - 300, 2*65_535 + 300, 0, 29},
		{[]int{gzip.NoCompression, gzip.HuffmanOnly, 1, 6, 9}, 700, 3_300, 1_000, 7},
	}
	var d Decompressor
	for _, s := range sweeps {
		stride := 1
		if raceEnabled {
			stride = s.strideUnderRace
		}
		for _, level := range s.levels {
			for n := s.from; n <= s.to; n += stride {
				src := gz(t, data[:n], level, s.flushEvery)
				got, err := d.AppendGunzip(nil, src, 1<<30)
				if err != nil || !bytes.Equal(got, data[:n]) {
					want, stdErr := stdGunzip(src, 1<<30)
					t.Fatalf("level %d, length %d: AppendGunzip gave %d bytes, %v; compress/gzip %d bytes, %v",
						level, n, len(got), err, len(want), stdErr)
				}
			}
		}
	}
}
