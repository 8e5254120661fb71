package benchmark

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	kgzip "github.com/klauspost/compress/gzip"

	"github.com/pprofotel/profiler/internal/collect/gzipmem"
	"github.com/pprofotel/profiler/internal/export"
)

// realRequests returns the protobuf encoding of the OTLP request ours builds
// from each recorded runtime profile under testdata/, its first window
// taken against an empty baseline (every stack in it), and of one request
// holding the three: the bodies the exporters compress.
func realRequests(tb testing.TB) []struct {
	name string
	raw  []byte
} {
	names := []string{"heap", "mutex", "block"}
	data := make(map[string][]byte, len(names))
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("testdata", n+".pb.gz"))
		if err != nil {
			tb.Fatal(err)
		}
		data[n] = b
	}
	var out []struct {
		name string
		raw  []byte
	}
	for _, k := range kinds {
		p, err := newOurs(k.names, map[string][]byte{})
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := p.window(data); err != nil {
			tb.Fatal(err)
		}
		out = append(out, struct {
			name string
			raw  []byte
		}{k.name, append([]byte(nil), p.raw...)})
	}
	return out
}

// gzipEncoder is one candidate for the exporters' request compression:
// append returns dst extended by the gzip stream of src, reusing the
// encoder's state from one call to the next as the exporters do.
type gzipEncoder struct {
	name string
	new  func() func(dst, src []byte) []byte
}

// appendWriter collects a stream into a slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// writerEncoder is a gzip Writer reset for every request, writing into
// dst grown first to an eighth more than the previous output, as
// export.Gzip sizes its output.
func writerEncoder(zw interface {
	io.WriteCloser
	Reset(io.Writer)
}, w *appendWriter) func(dst, src []byte) []byte {
	last := 0
	return func(dst, src []byte) []byte {
		w.b = slices.Grow(dst, last+last/8)
		zw.Reset(w)
		_, _ = zw.Write(src)
		_ = zw.Close()
		last = len(w.b) - len(dst)
		return w.b
	}
}

// klauspostLevel is klauspost/compress/gzip at level.
func klauspostLevel(level int) func() func(dst, src []byte) []byte {
	return func() func(dst, src []byte) []byte {
		w := new(appendWriter)
		zw, err := kgzip.NewWriterLevel(w, level)
		if err != nil {
			panic(err)
		}
		return writerEncoder(zw, w)
	}
}

// gzipEncoders are the candidates: the exporters' export.Gzip, the levels
// and stateless mode of klauspost/compress, and compress/gzip at
// BestSpeed, the level the exporters used before either.
var gzipEncoders = []gzipEncoder{
	{"export.Gzip", func() func(dst, src []byte) []byte {
		var g export.Gzip
		return g.Append
	}},
	{"klauspost-stateless", klauspostLevel(kgzip.StatelessCompression)},
	{"klauspost-1", klauspostLevel(1)},
	{"klauspost-2", klauspostLevel(2)},
	{"klauspost-3", klauspostLevel(3)},
	{"klauspost-5", klauspostLevel(5)},
	{"stdlib-1", func() func(dst, src []byte) []byte {
		w := new(appendWriter)
		zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
		return writerEncoder(zw, w)
	}},
}

// BenchmarkRequestGzip compresses the real requests with every candidate,
// all in one run: time and allocations per request into a new body (as the
// HTTP exporter sends it), the compressed size (gz-B) and the heap the
// encoder keeps between requests (retained-B: HeapAlloc after two GCs with
// the warm encoder alive and its output dropped, less HeapAlloc before it
// existed).
func BenchmarkRequestGzip(b *testing.B) {
	for _, req := range realRequests(b) {
		for _, enc := range gzipEncoders {
			b.Run(req.name+"/"+enc.name, func(b *testing.B) {
				retained := retainedBy(func() any {
					appendGzip := enc.new()
					appendGzip(nil, req.raw)
					return appendGzip
				})
				appendGzip := enc.new()
				var out []byte
				b.SetBytes(int64(len(req.raw)))
				b.ReportAllocs()
				for b.Loop() {
					out = appendGzip(nil, req.raw)
				}
				b.ReportMetric(float64(len(out)), "gz-B")
				b.ReportMetric(float64(len(req.raw)), "raw-B")
				b.ReportMetric(float64(retained), "retained-B")
				if got := gunzipStd(b, out); len(got) != len(req.raw) {
					b.Fatalf("read back %d bytes, want %d", len(got), len(req.raw))
				}
			})
		}
	}
}

// retainedBy returns the heap that what make returns keeps alive.
func retainedBy(make func() any) int64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	kept := make()
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc)
}

// gunzipStd reads a gzip stream with compress/gzip.
func gunzipStd(tb testing.TB, gz []byte) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		tb.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// BenchmarkProfileGunzip decompresses the recorded runtime profiles, as
// the collector does every window, with internal/gzipmem's Decompressor,
// klauspost/compress/gzip's Reader and compress/gzip's Reader, each reused
// from one profile to the next and reading into a reused buffer.
func BenchmarkProfileGunzip(b *testing.B) {
	for _, name := range []string{"heap", "mutex", "block"} {
		gz, err := os.ReadFile(filepath.Join("testdata", name+".pb.gz"))
		if err != nil {
			b.Fatal(err)
		}
		want := gunzipStd(b, gz)
		b.Run(name+"/gzipmem", func(b *testing.B) {
			var d gzipmem.Decompressor
			var out []byte
			b.SetBytes(int64(len(want)))
			b.ReportAllocs()
			for b.Loop() {
				if out, err = d.AppendGunzip(out[:0], gz, 1<<30); err != nil {
					b.Fatal(err)
				}
			}
			if !bytes.Equal(out, want) {
				b.Fatal("output differs from compress/gzip's")
			}
		})
		for _, r := range []struct {
			name string
			new  func(io.Reader) (gzipReader, error)
		}{
			{"klauspost", func(r io.Reader) (gzipReader, error) { return kgzip.NewReader(r) }},
			{"stdlib", func(r io.Reader) (gzipReader, error) { return gzip.NewReader(r) }},
		} {
			b.Run(name+"/"+r.name, func(b *testing.B) {
				zr, err := r.new(bytes.NewReader(gz))
				if err != nil {
					b.Fatal(err)
				}
				var out bytes.Buffer
				b.SetBytes(int64(len(want)))
				b.ReportAllocs()
				for b.Loop() {
					out.Reset()
					if err := zr.Reset(bytes.NewReader(gz)); err != nil {
						b.Fatal(err)
					}
					if _, err := out.ReadFrom(zr); err != nil {
						b.Fatal(err)
					}
				}
				if !bytes.Equal(out.Bytes(), want) {
					b.Fatal("output differs from compress/gzip's")
				}
			})
		}
	}
}

// gzipReader is what klauspost's and the standard library's gzip Readers
// share.
type gzipReader interface {
	io.Reader
	Reset(io.Reader) error
}
