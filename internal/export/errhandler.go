package export

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel"
)

// DefaultErrorHandler reports whether otel's error handler is still its
// default, which prints with the log package, in another format than the
// profiler's logger. The default is the one handler of otel's internal
// type ErrDelegator; a handler set by otel.SetErrorHandler replaces it.
// Should otel rename the type, every handler reads as the application's,
// and errors go to otel.Handle.
func DefaultErrorHandler() bool {
	return strings.HasSuffix(fmt.Sprintf("%T", otel.GetErrorHandler()), ".ErrDelegator")
}

// ReportError sends err where the application looks for errors: to
// otel.Handle when it has set an OpenTelemetry error handler, else to
// logger (nil: slog.Default()) at level error.
func ReportError(logger *slog.Logger, err error) {
	if !DefaultErrorHandler() {
		otel.Handle(err)
		return
	}
	if logger == nil {
		logger = slog.Default()
	}
	logger.Error(err.Error())
}

type loggerKey struct{}

// ContextWithLogger returns ctx carrying logger, for an exporter that the
// profiler builds from the environment to log through the profiler's.
func ContextWithLogger(ctx context.Context, logger *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, logger)
}

// LoggerFromContext returns the logger ctx carries, or nil.
func LoggerFromContext(ctx context.Context) *slog.Logger {
	l, _ := ctx.Value(loggerKey{}).(*slog.Logger)
	return l
}
