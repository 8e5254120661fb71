package profiler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"

	"github.com/pprofotel/profiler/exporters/otlpprofilehttp"
	"github.com/pprofotel/profiler/internal/export"
)

// errorsSeen collects what reaches otel.Handle.
type errorsSeen struct {
	mu   sync.Mutex
	errs []error
}

func (e *errorsSeen) Handle(err error) {
	e.mu.Lock()
	e.errs = append(e.errs, err)
	e.mu.Unlock()
}

func (e *errorsSeen) about(what string) []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []error
	for _, err := range e.errs {
		if strings.Contains(err.Error(), what) {
			out = append(out, err)
		}
	}
	return out
}

// TestErrorsReachOTelHandle checks that a window that could not be
// delivered reaches the process's OpenTelemetry error handler once, and
// slog only when the application gave its logger, so that nothing is
// logged twice.
func TestErrorsReachOTelHandle(t *testing.T) {
	before := otel.GetErrorHandler()
	t.Cleanup(func() { otel.SetErrorHandler(before) })
	defaultLogger := slog.Default()
	t.Cleanup(func() { slog.SetDefault(defaultLogger) })

	// Nobody listens on port 1: the export fails at once, and without
	// retries the window is given up.
	unreachable := WithExporter(httpExporter(t, "http://127.0.0.1:1/v1development/profiles",
		otlpprofilehttp.WithRetry(otlpprofilehttp.RetryConfig{Enabled: false})))
	const failure = "pprofotel: profile window not delivered"
	for _, ownLogger := range []bool{false, true} {
		name := map[bool]string{false: "default logger", true: "WithLogger"}[ownLogger]
		t.Run(name, func(t *testing.T) {
			seen := new(errorsSeen)
			otel.SetErrorHandler(seen)
			var defaultLogs, ownLogs bytes.Buffer
			slog.SetDefault(slog.New(slog.NewTextHandler(&defaultLogs, nil)))
			opts := []Option{unreachable}
			if ownLogger {
				// A second profiler: the first one shut its exporter down.
				opts = []Option{WithExporter(httpExporter(t, "http://127.0.0.1:1/v1development/profiles",
					otlpprofilehttp.WithRetry(otlpprofilehttp.RetryConfig{Enabled: false})))}
			}
			if ownLogger {
				opts = append(opts, WithLogger(slog.New(slog.NewTextHandler(&ownLogs, nil))))
			}
			if _, failed := startForOneWindow(t, opts...); failed != 1 {
				t.Fatalf("%d windows failed, want 1", failed)
			}

			got := seen.about(failure)
			if len(got) != 1 {
				t.Fatalf("otel.Handle got %d errors about the failure, want 1: %v", len(got), seen.errs)
			}
			var exportErr *export.ExportError
			if !errors.As(got[0], &exportErr) {
				t.Errorf("the error %q does not carry the export's *ExportError", got[0])
			}
			if n := strings.Count(defaultLogs.String(), failure); n != 0 {
				t.Errorf("the default logger logged the failure %d times, want 0: otel.Handle has it", n)
			}
			want := 0
			if ownLogger {
				want = 1
			}
			if n := strings.Count(ownLogs.String(), failure); n != want {
				t.Errorf("the application's logger logged the failure %d times, want %d", n, want)
			}
		})
	}
}

// startForOneWindow starts a profiler of goroutines only with opts, stops
// it, which exports the one window, and returns Stop's error and the
// windows that failed. A window whose export fails before Stop begins its
// shutdown is counted as failed but is not in Stop's error.
func startForOneWindow(t *testing.T, opts ...Option) (stopErr error, failed int64) {
	t.Helper()
	opts = append([]Option{WithProfileTypes(GoroutineProfile), WithProcessContext(false)}, opts...)
	p, err := Start(opts...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	stopErr = p.Stop(context.Background())
	return stopErr, p.Stats().WindowsFailed
}

// childVariable makes the test binary, run again by
// TestErrorsWithoutAnErrorHandlerGoToTheLogger, run one case in a fresh
// process, whose otel error handler is still the default.
const childVariable = "LOGTEST_CHILD_CASE"

// TestErrorsWithoutAnErrorHandlerGoToTheLogger checks that, while otel's
// error handler is its default, a window that could not be delivered is
// logged once, by the logger, in its format, at level ERROR, and not by
// otel's default handler through the log package. Each case runs in a
// child process: otel.SetErrorHandler, which other tests call, cannot be
// undone.
func TestErrorsWithoutAnErrorHandlerGoToTheLogger(t *testing.T) {
	const failure = "pprofotel: profile window not delivered"
	tests := []struct {
		name string
		// want is what the line of the failure holds, in the output of
		// the log package (the default logger) or of the given logger.
		want string
	}{
		{"default logger", "ERROR " + failure},
		{"WithLogger", `"level":"ERROR","msg":"` + failure + `"`},
	}
	if name := os.Getenv(childVariable); name != "" {
		var logPackage, own bytes.Buffer
		log.SetOutput(&logPackage)
		opts := []Option{WithExporter(httpExporter(t, "http://127.0.0.1:1/v1development/profiles",
			otlpprofilehttp.WithRetry(otlpprofilehttp.RetryConfig{Enabled: false})))}
		if name == "WithLogger" {
			opts = append(opts, WithLogger(slog.New(slog.NewJSONHandler(&own, nil))))
		}
		if _, failed := startForOneWindow(t, opts...); failed != 1 {
			t.Fatalf("%d windows failed, want 1", failed)
		}
		fmt.Printf("log package:\n%s\nlogger:\n%s\n", logPackage.String(), own.String())
		return
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestErrorsWithoutAnErrorHandlerGoToTheLogger$", "-test.count=1")
			cmd.Env = append(os.Environ(), childVariable+"="+tt.name)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			if n := strings.Count(string(out), failure); n != 1 {
				t.Errorf("the failure is logged %d times, want once:\n%s", n, out)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Errorf("the failure is not logged as %q:\n%s", tt.want, out)
			}
		})
	}
}

// TestExporterFromTheEnvironmentLogsThroughTheProfilersLogger checks that
// the exporter the environment names logs through the profiler's logger,
// not slog's default: its warning about a receiver without a profiles
// pipeline (HTTP 404) reaches WithLogger's logger, once, and nothing
// reaches the default logger.
func TestExporterFromTheEnvironmentLogsThroughTheProfilersLogger(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	tests := []struct{ protocol string }{{"http/protobuf"}, {"http/json"}}
	for _, tt := range tests {
		t.Run(tt.protocol, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", tt.protocol)
			defaultLogger := slog.Default()
			t.Cleanup(func() { slog.SetDefault(defaultLogger) })
			var defaultLogs, own syncBuffer
			slog.SetDefault(slog.New(slog.NewTextHandler(&defaultLogs, nil)))
			startForOneWindow(t, WithLogger(slog.New(slog.NewTextHandler(&own, nil))))
			want := "takes no profiles"
			if n := strings.Count(own.String(), want); n != 1 {
				t.Errorf("the profiler's logger has %d warnings about the pipeline, want 1:\n%s", n, own.String())
			}
			if !strings.Contains(own.String(), srv.URL+"/v1development/profiles") {
				t.Errorf("the warning does not name the URL:\n%s", own.String())
			}
			if defaultLogs.String() != "" {
				t.Errorf("the default logger has:\n%s", defaultLogs.String())
			}
		})
	}
}
