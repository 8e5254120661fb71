package export

import (
	"compress/gzip"
	"io"
	"sync"
)

// compressLevel is the gzip level of every compressed request. The profiler
// pays the compression every window, in the application's process; on a
// request of 7,000 heap stacks the fastest level took about a fifth of the
// default level's CPU time for an output about 13% larger.
const compressLevel = gzip.BestSpeed

// Gzip compresses request bodies the way the OTLP exporters send them:
// gzip at gzip.BestSpeed, through one writer kept from one request to the
// next, because a new writer allocates close to a megabyte of state.
//
// The zero value is ready to use. A Gzip is not safe for concurrent use.
type Gzip struct {
	zw *gzip.Writer
	// last is the size of the previous output, a capacity hint for the
	// next one.
	last int
}

// Append appends the gzip stream of src to dst and returns the extended
// slice.
func (g *Gzip) Append(dst, src []byte) []byte {
	if cap(dst)-len(dst) < g.last {
		grown := make([]byte, len(dst), len(dst)+g.last+g.last/8)
		copy(grown, dst)
		dst = grown
	}
	w := appendWriter{b: dst}
	if g.zw == nil {
		// The level is a constant the package accepts, so NewWriterLevel
		// cannot fail.
		g.zw, _ = gzip.NewWriterLevel(&w, compressLevel)
	} else {
		g.zw.Reset(&w)
	}
	// appendWriter never fails, so neither can the gzip writer.
	_, _ = g.zw.Write(src)
	_ = g.zw.Close()
	g.zw.Reset(nil) // do not keep the caller's buffer reachable
	g.last = len(w.b) - len(dst)
	return w.b
}

// appendWriter is an io.Writer appending to a slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// grpcGzip compresses gRPC messages at compressLevel for one connection.
//
// gRPC's registered "gzip" compressor runs at the level set by
// google.golang.org/grpc/encoding/gzip.SetLevel, which is process-wide and
// so belongs to the application: changing it would change the compression
// of the application's own gRPC calls. Registering another compressor under
// the name "gzip" would be just as global, and one under another name would
// not be understood by collectors. The one way gRPC offers to set a
// compressor per connection is the older grpc.Compressor interface given to
// grpc.WithCompressor, which gRPC deprecates in favour of the registry but
// supports throughout 1.x. The messages it produces carry the standard
// "gzip" grpc-encoding, so any collector reads them.
type grpcGzip struct {
	// gRPC may call Do from several streams at once; the exporter makes
	// one call at a time, so the lock is never contended.
	mu sync.Mutex
	zw *gzip.Writer
}

// Do writes the gzip stream of p to w.
func (c *grpcGzip) Do(w io.Writer, p []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.zw == nil {
		c.zw, _ = gzip.NewWriterLevel(w, compressLevel)
	} else {
		c.zw.Reset(w)
	}
	defer c.zw.Reset(nil) // do not keep gRPC's buffer reachable
	if _, err := c.zw.Write(p); err != nil {
		return err
	}
	return c.zw.Close()
}

// Type names the encoding, as the grpc-encoding header carries it.
func (c *grpcGzip) Type() string { return compressionGzip }
