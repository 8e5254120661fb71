package export

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"google.golang.org/protobuf/proto"
)

// gzipXFLFastest is the extra-flags byte of a gzip header written at
// gzip.BestSpeed (RFC 1952: 4, compressor used fastest algorithm).
const gzipXFLFastest = 4

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	if len(b) < 10 {
		t.Fatalf("gzip stream of %d bytes is shorter than its header", len(b))
	}
	if b[8] != gzipXFLFastest {
		t.Errorf("gzip header XFL = %d, want %d (BestSpeed)", b[8], gzipXFLFastest)
	}
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
		if out, err = (proto.MarshalOptions{}).MarshalAppend(out, testRequest(i)); err != nil {
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
