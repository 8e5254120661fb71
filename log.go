package profiler

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel"

	"github.com/pprofotel/profiler/internal/export"
)

// reportingHandler sends the profiler's errors (windows not delivered or
// dropped, windows that could not be converted, rejections in a partial
// success: the records at slog.LevelError) where the application looks
// for them, and everything else to the logger. When the application has
// set an OpenTelemetry error handler (otel.SetErrorHandler), errors go to
// it, as the OpenTelemetry SDK's components send theirs, and to the
// logger as well only when the application gave its logger (WithLogger).
// Otherwise they go to the logger alone: otel's default handler would
// print them with the log package, in another format than the logger's
// warnings.
type reportingHandler struct {
	next slog.Handler
	// logErrors passes error records on to next too when they go to the
	// application's error handler.
	logErrors bool
	// attrs are those added by WithAttrs, for the error's text.
	attrs []slog.Attr
}

func (h reportingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelError || h.next.Enabled(ctx, l)
}

func (h reportingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelError {
		return h.next.Handle(ctx, r)
	}
	toLogger := h.logErrors
	if export.DefaultErrorHandler() {
		toLogger = true
	} else {
		otel.Handle(newReportedError(r, h.attrs))
	}
	if toLogger && h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h reportingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h.attrs = append(h.attrs[:len(h.attrs):len(h.attrs)], attrs...)
	h.next = h.next.WithAttrs(attrs)
	return h
}

func (h reportingHandler) WithGroup(name string) slog.Handler {
	h.next = h.next.WithGroup(name)
	return h
}

// reportedError is a record handed to otel.Handle: its message and
// attributes as text, and the error among its attributes, if any, for
// errors.Is and errors.As.
type reportedError struct {
	text string
	err  error
}

func newReportedError(r slog.Record, attrs []slog.Attr) *reportedError {
	var b strings.Builder
	b.WriteString(r.Message)
	e := &reportedError{}
	add := func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && e.err == nil {
			e.err = err
		}
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range attrs {
		add(a)
	}
	r.Attrs(add)
	e.text = b.String()
	return e
}

func (e *reportedError) Error() string { return e.text }
func (e *reportedError) Unwrap() error { return e.err }

// The info records that the default logger shows: the one line at Start
// that says the profiler works, or that it is switched off.
const (
	startMessage    = "pprofotel: profiling"
	disabledMessage = "pprofotel: profiling is switched off"
)

// minLevelHandler passes on records at min or above, and the info records
// of Start (startMessage, disabledMessage). It makes the default logger
// quiet: warnings, errors and the start line reach the application's
// handler, progress reports do not.
type minLevelHandler struct {
	min  slog.Level
	next slog.Handler
}

func (h minLevelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return (l >= h.min || l == slog.LevelInfo) && h.next.Enabled(ctx, l)
}

func (h minLevelHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < h.min && r.Message != startMessage && r.Message != disabledMessage {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h minLevelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevelHandler{h.min, h.next.WithAttrs(attrs)}
}

func (h minLevelHandler) WithGroup(name string) slog.Handler {
	return minLevelHandler{h.min, h.next.WithGroup(name)}
}
