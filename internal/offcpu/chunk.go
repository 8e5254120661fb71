package offcpu

import (
	"bytes"
	"encoding/binary"
)

// The batch types of the execution trace's wire format that a chunk needs
// to tell apart (internal/trace/tracev2, unchanged since Go 1.22 apart from
// the end-of-generation marker of Go 1.25).
const (
	evEventBatch        = 1
	evExperimentalBatch = 49
	evEndOfGeneration   = 52
)

// traceHeaderLen is the length of the trace's header ("go 1.26 trace" and
// padding), the first write of every FlightRecorder.WriteTo.
const traceHeaderLen = 16

// chunkWriter receives one FlightRecorder.WriteTo: the header, then one
// batch per Write, oldest generation first. It keeps the generations newer
// than after, so that successive reads of one flight recorder, whose ring
// still holds generations read before, hand the parser each generation
// once; and it keeps at most limit bytes, dropping the generation that
// would cross it and everything after it, so that what is read, and the
// parser's work, stay within a budget whatever the event rate.
type chunkWriter struct {
	buf   *bytes.Buffer
	after uint64
	limit int

	// header is set once the header is in buf.
	header bool
	// keep is the decision taken for the generation under way; gen is
	// that generation and genStart where it begins in buf.
	keep     bool
	gen      uint64
	genStart int
	// first and last are the first and last generations kept, 0 for
	// none; before is the one kept before gen. full is set when the
	// limit dropped a generation.
	first, last, before uint64
	full                bool
	// offered counts the bytes of the generations newer than after,
	// kept or not: what the runtime produced since the last read.
	offered int
}

func (c *chunkWriter) Write(b []byte) (int, error) {
	if !c.header {
		c.header = true
		c.buf.Write(b)
		return len(b), nil
	}
	if gen, ok := batchGeneration(b); ok && gen != c.gen {
		c.gen, c.genStart, c.keep = gen, c.buf.Len(), gen > c.after
		c.before = c.last
	}
	if !c.keep {
		return len(b), nil
	}
	c.offered += len(b)
	if c.full {
		return len(b), nil
	}
	if c.buf.Len()+len(b) > c.limit {
		// A generation is read whole or not at all: the parser cannot
		// use part of one.
		c.buf.Truncate(c.genStart)
		c.last = c.before
		if c.first == c.gen {
			c.first = 0
		}
		c.full = true
		return len(b), nil
	}
	c.buf.Write(b)
	if c.first == 0 {
		c.first = c.gen
	}
	c.last = c.gen
	return len(b), nil
}

// kept reports whether a generation was kept, and so whether the chunk
// holds anything to parse.
func (c *chunkWriter) kept() bool { return c.buf.Len() > traceHeaderLen }

// batchGeneration returns the generation of a batch, false for the
// end-of-generation marker, which carries none and belongs to the batches
// before it.
func batchGeneration(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	switch b[0] {
	case evEventBatch:
		b = b[1:]
	case evExperimentalBatch:
		if len(b) < 2 {
			return 0, false
		}
		b = b[2:] // the experiment's id comes first
	default:
		return 0, false
	}
	gen, n := binary.Uvarint(b)
	return gen, n > 0
}
