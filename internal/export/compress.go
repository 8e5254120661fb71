package export

import (
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
)

// Gzip compresses request bodies the way the OTLP exporters send them:
// klauspost/compress's gzip in its stateless mode, one Writer kept from one
// request to the next.
//
// The stateless mode keeps a fraction of the memory of a stateful level 1
// or of compress/gzip's BestSpeed between requests, for output a few
// percent larger.
//
// The zero value is ready to use. A Gzip is not safe for concurrent use.
type Gzip struct {
	zw  *gzip.Writer // made on first use
	out appendWriter
	// last is the size of the previous output, a capacity hint for the
	// next one.
	last int
}

// appendWriter collects what is written to it into a slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// Append appends the gzip stream of src to dst and returns the extended
// slice.
func (g *Gzip) Append(dst, src []byte) []byte {
	g.out.b = slices.Grow(dst, g.last+g.last/8)
	if g.zw == nil {
		// The level is a constant that NewWriterLevel accepts.
		g.zw, _ = gzip.NewWriterLevel(&g.out, gzip.StatelessCompression)
	} else {
		g.zw.Reset(&g.out)
	}
	// Writing to a slice cannot fail.
	_, _ = g.zw.Write(src)
	_ = g.zw.Close()
	out := g.out.b
	g.out.b = nil // the caller owns the output
	g.last = len(out) - len(dst)
	return out
}

// grpcGzip compresses gRPC messages like Gzip, for one connection.
//
// gRPC's registered "gzip" compressor runs at the level set by
// google.golang.org/grpc/encoding/gzip.SetLevel, which is process-wide and
// so belongs to the application: changing it would change the compression
// of the application's own gRPC calls. Registering another compressor under
// the name "gzip" would be just as global, and one under another name would
// not be understood by receivers. The one way gRPC offers to set a
// compressor per connection is the older grpc.Compressor interface given to
// grpc.WithCompressor, which gRPC deprecates in favour of the registry but
// supports throughout 1.x. The messages it produces carry the standard
// "gzip" grpc-encoding, so any collector reads them.
type grpcGzip struct {
	// gRPC may call Do from several streams at once; the exporter makes
	// one call at a time, so the lock is never contended.
	mu  sync.Mutex
	gz  Gzip
	buf []byte
}

// Do writes the gzip stream of p to w.
func (c *grpcGzip) Do(w io.Writer, p []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf = c.gz.Append(c.buf[:0], p)
	_, err := w.Write(c.buf)
	return err
}

// Type names the encoding, as the grpc-encoding header carries it.
func (c *grpcGzip) Type() string { return compressionGzip }
