package profiler

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel"
)

// reportingHandler hands the profiler's errors to otel.Handle, the
// process's OpenTelemetry error handler, as the OpenTelemetry SDK's own
// components do: windows not delivered or dropped, windows that could not
// be converted, rejections in a partial success. Those are the records at
// slog.LevelError. They reach the slog handler as well only when the
// application gave its logger (WithLogger): otel's default error handler
// already prints them, and the default logger printing them again would
// log every error twice. Warnings and progress go to slog alone.
type reportingHandler struct {
	next slog.Handler
	// logErrors passes error records on to next too.
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
	otel.Handle(newReportedError(r, h.attrs))
	if h.logErrors && h.next.Enabled(ctx, r.Level) {
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

// minLevelHandler passes on records at min or above. It makes the default
// logger quiet: warnings and errors reach the application's handler,
// progress reports do not.
type minLevelHandler struct {
	min  slog.Level
	next slog.Handler
}

func (h minLevelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.next.Enabled(ctx, l)
}

func (h minLevelHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.next.Handle(ctx, r)
}

func (h minLevelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevelHandler{h.min, h.next.WithAttrs(attrs)}
}

func (h minLevelHandler) WithGroup(name string) slog.Handler {
	return minLevelHandler{h.min, h.next.WithGroup(name)}
}
