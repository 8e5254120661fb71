package labels

import (
	"context"
	"encoding/hex"
	"runtime/pprof"
	rtrace "runtime/trace"
	"sync/atomic"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/pprofotel/profiler/internal/collect/requests"
)

// labeledSpan is a span whose start installed labels on a goroutine. Every
// method but End and TracerProvider is the wrapped span's; SetName and
// SetAttributes also tell the span's request, for a local root.
//
// It is also the context Start returns: the context carrying the span's
// labels, with this span as the current span. Being both saves an
// allocation per span; see spanContextKey.
type labeledSpan struct {
	trace.Span

	// Context carries the labels and, as its current span, the wrapped one.
	context.Context

	provider *tracerProvider

	// ids is the span's trace id and span id in hex, and rootID its local
	// root's span id ("" when unknown): the values of its labels.
	ids, rootID string
	// request is the request the span is, for a local root span while a
	// request tracker is installed; nil otherwise. root is the labelled
	// span that is the span's request, found through its parent; nil when
	// there is none.
	request *requests.Request
	root    *labeledSpan

	// previous is the starting goroutine's label set before Start, and
	// installed the one Start put in its place. Both are opaque runtime
	// values, only compared and stored back.
	previous  unsafe.Pointer
	installed unsafe.Pointer
	// relabelled is the label set that relabel put in installed's place,
	// with the request's route; nil until then.
	relabelled atomic.Pointer[byte]

	// parent is the labelled span whose labels previous is, when the span
	// was started under it on a goroutine carrying them; nil otherwise.
	parent *labeledSpan

	ended atomic.Bool
}

// End gives the goroutine back its labels from before Start if it still
// carries the ones Start installed and this is the first End, then ends the
// wrapped span. Labels of enclosing spans that have already ended are
// skipped, so that a parent ended before its child is not named by the
// samples taken after both.
func (s *labeledSpan) End(opts ...trace.SpanEndOption) {
	first := s.ended.CompareAndSwap(false, true)
	if first && s.carries(goroutineLabelSet()) {
		if rtrace.IsEnabled() {
			if route, renamed := s.request.Renamed(); renamed {
				// The waits traced in the request take the route it
				// ends with, which its labels do not carry.
				logSpanSwitch(s, s, route)
			}
		}
		restore := s.previous
		p := s.parent
		for ; p != nil && p.ended.Load(); p = p.parent {
			restore = p.previous
		}
		setGoroutineLabelSet(restore)
		if rtrace.IsEnabled() {
			logSpanSwitch(p, s, p.logRoute())
		}
	}

	// With "defer span.End()", a panicking function reaches this End, and
	// the wrapped span's End cannot recover the panic to record it (recover
	// works only in the deferred function itself). Raise the panic again
	// with the wrapped End deferred directly, so it sees exactly what it
	// would have seen without the wrapper; the panic then continues.
	if r := recover(); r != nil {
		func() {
			if first {
				defer s.endRequest(opts)
			}
			defer s.Span.End(opts...)
			panic(r)
		}()
		return
	}
	s.Span.End(opts...)
	if first {
		s.endRequest(opts)
	}
}

// endRequest ends the span's request, if it is one, when the wrapped span
// ended: the SDK's end time, read from the span rather than the clock when
// the span tells it, so that the request lasts as long as the span.
func (s *labeledSpan) endRequest(opts []trace.SpanEndOption) {
	if s.request == nil {
		return
	}
	if e, ok := s.Span.(interface{ EndTime() time.Time }); ok {
		if end := e.EndTime(); !end.IsZero() {
			s.request.End(end)
			return
		}
	}
	s.request.End(endTime(opts))
}

// endTime returns the end time opts give a span, or now.
func endTime(opts []trace.SpanEndOption) time.Time {
	if len(opts) > 0 {
		if cfg := trace.NewSpanEndConfig(opts...); !cfg.Timestamp().IsZero() {
			return cfg.Timestamp()
		}
	}
	return time.Now()
}

// SetName renames the wrapped span and, for a local root, its request:
// HTTP middleware often names the span only once it knows the route.
func (s *labeledSpan) SetName(name string) {
	s.Span.SetName(name)
	s.request.SetName(name)
}

// SetAttributes sets the wrapped span's attributes and, for a local root,
// its request's route from http.route, which relabel puts in the labels.
func (s *labeledSpan) SetAttributes(kv ...attribute.KeyValue) {
	s.Span.SetAttributes(kv...)
	if s.request != nil && setHTTPRoute(s.request, kv) {
		s.relabel()
	}
}

// routedRoute returns the route relabel gave the span's request,
// and false if it gave none.
func (s *labeledSpan) routedRoute() (string, bool) {
	if s == nil || s.root == nil || s.root.relabelled.Load() == nil {
		return "", false
	}
	return s.root.request.Route(), true
}

// carries reports whether ls, a goroutine's label set, is one the span
// installed: at Start, or by relabel.
func (s *labeledSpan) carries(ls unsafe.Pointer) bool {
	return ls == s.installed || ls == unsafe.Pointer(s.relabelled.Load())
}

// relabel puts the request's route, now its route, in the labels of
// the calling goroutine when it carries the span's and the span runs:
// the samples taken there from then on name the route, and so do the
// spans started under it afterwards (routedRoute). Spans and
// goroutines started before keep the route the root started with; the
// window's end gives those samples the request's last route when it
// remembers the root, which it does first for a relabelled one, up to
// its bound.
func (s *labeledSpan) relabel() {
	if s.ended.Load() || !s.carries(goroutineLabelSet()) {
		return
	}
	route := s.request.Labelled()
	ctx := pprof.WithLabels(s.Context, pprof.Labels(RouteKey, route))
	pprof.SetGoroutineLabels(ctx)
	s.relabelled.Store((*byte)(goroutineLabelSet()))
	if rtrace.IsEnabled() {
		logSpanSwitch(s, s, route)
	}
}

// TracerProvider returns the wrapping provider, so spans started from it are
// labelled too.
func (s *labeledSpan) TracerProvider() trace.TracerProvider {
	return s.provider
}

// Value returns the span itself as the current span and is Context's Value
// for every other key.
func (s *labeledSpan) Value(key any) any {
	if key == spanContextKey {
		return trace.Span(s)
	}
	return s.Context.Value(key)
}

// spanContextKey is the key under which package trace stores the current
// span in a context, found by watching trace.SpanFromContext look it up.
// It is nil if that did not give a key that works, and then Start wraps
// contexts with trace.ContextWithSpan instead.
var spanContextKey = findSpanContextKey()

// keyProbe is a context recording the keys it is asked for.
type keyProbe struct {
	context.Context
	keys []any
}

func (p *keyProbe) Value(key any) any {
	p.keys = append(p.keys, key)
	return nil
}

func findSpanContextKey() any {
	probe := &keyProbe{Context: context.Background()}
	trace.SpanFromContext(probe)
	if len(probe.keys) != 1 {
		return nil
	}
	key := probe.keys[0]

	// Check that a context answering to that key is seen as holding a span.
	want := &labeledSpan{}
	answer := keyAnswer{Context: context.Background(), key: key, span: want}
	if got, ok := trace.SpanFromContext(answer).(*labeledSpan); !ok || got != want {
		return nil
	}
	return key
}

// keyAnswer is a context holding span under key.
type keyAnswer struct {
	context.Context
	key  any
	span trace.Span
}

func (a keyAnswer) Value(key any) any {
	if key == a.key {
		return a.span
	}
	return a.Context.Value(key)
}

// logSpanSwitch tells the execution trace that the goroutine's labels
// changed from those of span before to those of span now (nil for none, or
// for labels that are not a span's), and route, that of now's request ("",
// none; logRoute): see TraceLogCategory. The message is built in one
// buffer, so that a record costs one allocation (two for a route longer
// than logRouteLen).
func logSpanSwitch(now, before *labeledSpan, route string) {
	var buf [2*logSpanLen + 2 + logRouteLen]byte
	msg := appendLogSpan(buf[:0], now)
	msg = append(msg, ';')
	msg = appendLogSpan(msg, before)
	if route != "" {
		msg = append(append(msg, ';'), route...)
	}
	rtrace.Log(context.Background(), TraceLogCategory, string(msg))
}

// logRouteLen is the longest route logSpanSwitch's buffer holds.
const logRouteLen = 64

// logRoute returns the route of s's request now, "" when s is nil or in
// no request the tracker follows.
func (s *labeledSpan) logRoute() string {
	if s == nil || s.root == nil {
		return ""
	}
	return s.root.request.Route()
}

// idsLen is the length of a span's ids in hex, and logSpanLen that of its
// spelling in the trace's records.
const (
	idsLen     = 2*len(trace.TraceID{}) + 2*len(trace.SpanID{})
	logSpanLen = idsLen + 2*len(trace.SpanID{})
)

// appendLogSpan appends s's trace id, span id and local root span id in
// hex, one after the other; nothing for nil. An unknown root is spelled as
// zeros, which no span id is.
func appendLogSpan(dst []byte, s *labeledSpan) []byte {
	if s == nil {
		return dst
	}
	dst = append(dst, s.ids...)
	if s.rootID == "" {
		return append(dst, unknownRoot...)
	}
	return append(dst, s.rootID...)
}

// unknownRoot spells the local root of a span whose root is not known.
const unknownRoot = "0000000000000000"

// appendIDs appends sc's trace id and span id in hex, one after the other:
// the labels' values.
func appendIDs(dst []byte, sc trace.SpanContext) []byte {
	tid, sid := sc.TraceID(), sc.SpanID()
	dst = hex.AppendEncode(dst, tid[:])
	return hex.AppendEncode(dst, sid[:])
}
