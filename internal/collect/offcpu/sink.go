package offcpu

import (
	"sync"

	"github.com/pprofotel/profiler/internal/collect/requests"
)

// evEndOfGeneration is the execution trace's end-of-generation marker
// (internal/trace/tracev2, since Go 1.25): a batch of its own, one byte
// long, after the last batch of every generation.
const evEndOfGeneration = 52

// traceSink is the io.Writer a stretch subscribes to the execution trace
// with runtime/trace.Start. The runtime/trace package's reader goroutine
// calls Write with the trace's header, then once per batch, with the
// end-of-generation marker after each generation's batches; the same
// goroutine feeds the application's flight recorder, if it runs one, so
// Write never waits for the parser: it appends under a mutex held only
// for appends and hand-overs.
//
// The parser reads whole generations only, so the sink hands over the
// generations completed since the last take, and keeps the one under way.
// It keeps at most limit bytes of trace in all: a generation that would
// cross it is dropped whole, and so is everything after it. Once soft
// bytes are kept, or a generation is dropped, ready tells the recorder
// to end the stretch, which ends the generation under way.
type traceSink struct {
	// ready receives a value, without blocking, when a generation
	// completes and when the stretch should end (full).
	ready chan struct{}
	soft  int
	limit int

	mu     sync.Mutex
	closed bool
	header []byte
	// buf holds the completed generations not yet taken, then the one
	// under way from complete on.
	buf      []byte
	complete int
	// lent is what the last take returned: the caller's until the next
	// take, then the storage the sink fills.
	lent []byte
	// kept counts the bytes kept in the stretch, taken or not; offered
	// every byte written after the header, kept or not.
	kept, offered int
	// dropping is set from the generation that crossed the limit on.
	dropping bool
	full     bool
	// gens counts the generations completed, kept or not.
	gens int
	// stretches, when set, count the stretch as running while the sink
	// keeps what its waits name: until a generation is dropped, or
	// endNaming.
	stretches *requests.Stretches
}

// newTraceSink returns a sink that keeps at most limit bytes and asks to
// end the stretch at soft, in the storage of bufs (emptied).
func newTraceSink(soft, limit int, bufs [2][]byte) *traceSink {
	return &traceSink{ready: make(chan struct{}, 1), soft: soft, limit: limit, buf: bufs[0][:0], lent: bufs[1]}
}

func (s *traceSink) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		// A write after trace.Stop, from a reader goroutine that had
		// not yet seen the subscriber leave.
		return len(b), nil
	}
	if s.header == nil {
		s.header = append([]byte(nil), b...)
		return len(b), nil
	}
	s.offered += len(b)
	if len(b) == 1 && b[0] == evEndOfGeneration {
		s.gens++
		if !s.dropping {
			s.buf = append(s.buf, b...)
			s.kept++
			s.complete = len(s.buf)
			s.signal()
		}
		return len(b), nil
	}
	if s.dropping {
		return len(b), nil
	}
	if s.kept+len(b) > s.limit {
		// A generation is read whole or not at all.
		s.kept -= len(s.buf) - s.complete
		s.buf = s.buf[:s.complete]
		s.dropping, s.full = true, true
		s.endNamingLocked()
		s.signal()
		return len(b), nil
	}
	s.buf = append(s.buf, b...)
	s.kept += len(b)
	if s.kept >= s.soft && !s.full {
		s.full = true
		s.signal()
	}
	return len(b), nil
}

// endNaming tells the stretches, once, that the sink keeps no more of the
// stretch's waits: it ended, it goes on past its length for watched
// requests only, or a generation was dropped.
func (s *traceSink) endNaming() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endNamingLocked()
}

func (s *traceSink) endNamingLocked() {
	if s.stretches != nil {
		s.stretches.End()
		s.stretches = nil
	}
}

func (s *traceSink) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// take returns the header and the generations completed since the last
// take (nil when none). The generations are the caller's until its next
// take, when the sink fills their storage again: two buffers serve the
// whole stretch, one filled while the other is parsed.
func (s *traceSink) take() (header, gens []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.complete == 0 {
		return s.header, nil
	}
	gens = s.buf[:s.complete]
	s.buf = append(s.lent[:0], s.buf[s.complete:]...)
	s.lent = gens
	s.complete = 0
	return s.header, gens
}

// buffers returns the sink's two buffers, for the next stretch's sink;
// the sink must be closed.
func (s *traceSink) buffers() [2][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return [2][]byte{s.buf, s.lent}
}

// close ignores every later write, and reports whether the stretch was
// cut: a generation dropped, or one begun and not completed, and the
// bytes offered in all.
func (s *traceSink) close() (cut bool, offered int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return s.dropping || len(s.buf) > s.complete, s.offered
}

// isFull reports whether the stretch should end.
func (s *traceSink) isFull() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.full
}

// offeredBytes returns the bytes written to the sink so far, kept or not.
func (s *traceSink) offeredBytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offered
}

// generations returns the number of generations completed so far.
func (s *traceSink) generations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gens
}

// renew gives the stretch, which goes on, a new byte budget, from what
// the sink holds now.
func (s *traceSink) renew() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kept = len(s.buf)
}
