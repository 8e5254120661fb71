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
	"time"

	"go.opentelemetry.io/otel"

	"github.com/pprofotel/profiler/exporters/otlpprofilefile"
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

// TestStartLogsOneLine checks the one info line of Start: through the
// default logger (which shows no other progress) and WithLogger's, it
// says what is profiled and where the windows go, once; a profiler
// switched off says which setting did it.
func TestStartLogsOneLine(t *testing.T) {
	dir := t.TempDir()
	fileExp, err := otlpprofilefile.New(context.Background(), otlpprofilefile.WithDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		env       map[string]string
		opts      []Option
		ownLogger bool
		want      []string
	}{
		{"default logger, OTLP from the environment", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
			[]Option{WithProfileTypes(CPUProfile, GoroutineProfile)}, false,
			[]string{"INFO " + startMessage, "profiles=cpu,goroutine", "window=1m0s", "cpu_duty_cycle=17%",
				`exporter="otlpprofilehttp: http/protobuf to http://127.0.0.1:1/v1development/profiles"`}},
		{"WithLogger, gRPC", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			[]Option{WithProfileTypes(GoroutineProfile), WithWindow(30 * time.Second)}, true,
			[]string{"level=INFO msg=\"" + startMessage + "\"", "profiles=goroutine", "window=30s", `exporter="otlpprofilegrpc: grpc to 127.0.0.1:1"`}},
		{"file exporter", nil, []Option{WithProfileTypes(GoroutineProfile), WithExporter(fileExp)}, false,
			[]string{startMessage, `exporter="otlpprofilefile: files in ` + dir + `"`}},
		{"none", map[string]string{"OTEL_PROFILES_EXPORTER": "none"}, []Option{WithProfileTypes(GoroutineProfile)}, false,
			[]string{startMessage, `exporter="none: the windows are discarded"`}},
		{"switched off", map[string]string{"OTEL_SDK_DISABLED": "true"}, nil, false,
			[]string{"INFO " + disabledMessage + " by=OTEL_SDK_DISABLED"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			defaultLogger := slog.Default()
			t.Cleanup(func() { slog.SetDefault(defaultLogger) })
			var logs syncBuffer
			log.SetOutput(&logs)
			t.Cleanup(func() { log.SetOutput(os.Stderr) })
			opts := append([]Option{WithProcessContext(false)}, tt.opts...)
			if tt.ownLogger {
				opts = append(opts, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			}
			p, err := Start(opts...)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(logs.String(), "\n")
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			_ = p.Stop(ctx)
			var found []string
			for _, l := range lines {
				if strings.Contains(l, "pprofotel: profiling") {
					found = append(found, l)
				}
			}
			if len(found) != 1 {
				t.Fatalf("%d start lines, want 1:\n%s", len(found), logs.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(found[0], w) {
					t.Errorf("the start line lacks %q:\n%s", w, found[0])
				}
			}
		})
	}
}

// TestDefaultLoggerShowsNoProgress checks that the default logger's
// handler passes warnings, errors and Start's lines, and no other info.
func TestDefaultLoggerShowsNoProgress(t *testing.T) {
	tests := []struct {
		level slog.Level
		msg   string
		shown bool
	}{
		{slog.LevelInfo, startMessage, true},
		{slog.LevelInfo, disabledMessage, true},
		{slog.LevelInfo, "pprofotel: CPU profiling resumed", false},
		{slog.LevelDebug, "pprofotel: no process context on this platform", false},
		{slog.LevelWarn, "pprofotel: environment", true},
		{slog.LevelError, "pprofotel: profile window not delivered", true},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		l := slog.New(minLevelHandler{min: slog.LevelWarn, next: slog.NewTextHandler(&out, nil)})
		l.Log(context.Background(), tt.level, tt.msg)
		if got := strings.Contains(out.String(), tt.msg); got != tt.shown {
			t.Errorf("%v %q shown = %v, want %v", tt.level, tt.msg, got, tt.shown)
		}
	}
}
