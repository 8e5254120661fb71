package export

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/pprofotel/profiler/internal/testutil/otlptest"

	"google.golang.org/protobuf/proto"
)

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	return plain
}

// largeBody returns n test requests marshalled back to back: more than one
// deflate block, and not all alike.
func largeBody(tb testing.TB, n int) []byte {
	var out []byte
	for i := range n {
		var err error
		if out, err = (proto.MarshalOptions{}).MarshalAppend(out, otlptest.Request(i)); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

func TestGzipAppend(t *testing.T) {
	big := largeBody(t, 1000)
	// One Gzip for every case, in order: each call must be independent of
	// what the reused writer compressed before.
	var g Gzip
	for _, tt := range []struct {
		name   string
		prefix []byte
		src    []byte
	}{
		{"empty", nil, nil},
		{"request", nil, big},
		{"after prefix", []byte("prefix"), big},
		{"small after large", nil, []byte("profiles")},
		{"request again", make([]byte, 3, 100), big},
	} {
		t.Run(tt.name, func(t *testing.T) {
			prefix := bytes.Clone(tt.prefix)
			out := g.Append(tt.prefix, tt.src)
			if !bytes.Equal(out[:len(prefix)], prefix) {
				t.Fatalf("Append changed dst's contents: %q, want %q", out[:len(prefix)], prefix)
			}
			if got := gunzip(t, out[len(prefix):]); !bytes.Equal(got, tt.src) {
				t.Fatalf("round trip gave %d bytes, want the %d given", len(got), len(tt.src))
			}
		})
	}
}

// TestGzipAcrossBlockBoundaries compresses inputs of every length around
// the lengths that crashed the hand-written encoder Gzip used before
// (random data of 65,219 to 65,247 bytes, and near 130.5 K, where a step
// of its match search crossed a block's end), and reads them back with
// compress/gzip.
func TestGzipAcrossBlockBoundaries(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 131_000)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	protoLike := largeBody(t, 2000)
	var g Gzip
	for _, src := range [][]byte{random, protoLike} {
		for _, span := range [][2]int{{65_200, 65_560}, {130_400, 130_600}} {
			for n := span[0]; n <= span[1] && n <= len(src); n++ {
				if got := gunzip(t, g.Append(nil, src[:n])); !bytes.Equal(got, src[:n]) {
					t.Fatalf("length %d: round trip gave %d bytes", n, len(got))
				}
			}
		}
	}
}

func TestGRPCGzipDo(t *testing.T) {
	big := largeBody(t, 1000)
	var c grpcGzip
	if c.Type() != "gzip" {
		t.Fatalf("Type() = %q, want the standard gzip encoding", c.Type())
	}
	for i, src := range [][]byte{big, []byte("profiles"), big} {
		var buf bytes.Buffer
		if err := c.Do(&buf, src); err != nil {
			t.Fatalf("message %d: Do: %v", i, err)
		}
		if got := gunzip(t, buf.Bytes()); !bytes.Equal(got, src) {
			t.Fatalf("message %d: round trip gave %d bytes, want %d", i, len(got), len(src))
		}
	}
}

func BenchmarkGzipAppend(b *testing.B) {
	src := largeBody(b, 2000)
	var g Gzip
	var out []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		out = g.Append(out[:0], src)
	}
}
