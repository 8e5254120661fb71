package labels

import (
	"sync/atomic"
	"unsafe"

	"go.opentelemetry.io/otel/trace"
)

// labeledSpan is a span whose start installed labels on a goroutine. Every
// method but End and TracerProvider is the wrapped span's.
type labeledSpan struct {
	trace.Span

	provider *tracerProvider

	// previous is the starting goroutine's label set before Start, and
	// installed the one Start put in its place. Both are opaque runtime
	// values, only compared and stored back.
	previous  unsafe.Pointer
	installed unsafe.Pointer

	ended atomic.Bool
}

// End gives the goroutine back its labels from before Start if it still
// carries the ones Start installed and this is the first End, then ends the
// wrapped span.
func (s *labeledSpan) End(opts ...trace.SpanEndOption) {
	if s.ended.CompareAndSwap(false, true) && goroutineLabelSet() == s.installed {
		setGoroutineLabelSet(s.previous)
	}

	// With "defer span.End()", a panicking function reaches this End, and
	// the wrapped span's End cannot recover the panic to record it (recover
	// works only in the deferred function itself). Raise the panic again
	// with the wrapped End deferred directly, so it sees exactly what it
	// would have seen without the wrapper; the panic then continues.
	if r := recover(); r != nil {
		func() {
			defer s.Span.End(opts...)
			panic(r)
		}()
		return
	}
	s.Span.End(opts...)
}

// TracerProvider returns the wrapping provider, so spans started from it are
// labelled too.
func (s *labeledSpan) TracerProvider() trace.TracerProvider {
	return s.provider
}
