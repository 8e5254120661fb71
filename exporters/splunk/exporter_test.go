package splunk

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/pprofotel/profiler/internal/convert/splunk/splunktest"
	"github.com/pprofotel/profiler/internal/export"
	"github.com/pprofotel/profiler/internal/export/registry"
	"github.com/pprofotel/profiler/internal/export/report"
)

// noRetry makes every failure final, so that a test sees the receiver's
// answer.
var noRetry = WithRetry(RetryConfig{Enabled: false})

// TestExportArrives sends a window with headers, gzip or not, and checks
// what the receiver got: the records of the window, the metadata, and the
// bytes reported to the profiler.
func TestExportArrives(t *testing.T) {
	for _, compression := range []string{"none", "gzip"} {
		t.Run(compression, func(t *testing.T) {
			srv := &logsServer{}
			e := newTest(t, nil, WithEndpoint(startLogsServer(t, srv)), WithInsecure(),
				WithHeaders(map[string]string{"X-SF-Token": "secret"}), WithCompressor(compression))
			var rep report.Report
			if err := e.Export(report.NewContext(context.Background(), &rep), handRequest()); err != nil {
				t.Fatal(err)
			}
			reqs, mds := srv.received()
			if len(reqs) != 1 {
				t.Fatalf("received %d requests, want 1", len(reqs))
			}
			if got := mds[0].Get("x-sf-token"); len(got) != 1 || got[0] != "secret" {
				t.Errorf("x-sf-token = %v", got)
			}
			if got := mds[0].Get("user-agent"); len(got) != 1 || !strings.HasPrefix(got[0], "pprofotel-go/") {
				t.Errorf("user-agent = %v", got)
			}
			if !proto.Equal(reqs[0].ResourceLogs[0].Resource, testResource()) {
				t.Errorf("resource %v", reqs[0].ResourceLogs[0].Resource)
			}
			recs := splunktest.Records(t, reqs[0])
			if len(recs) != 1 {
				t.Fatalf("records %v, want cpu only", recs)
			}
			cpu := splunktest.DecodeBody(t, recs["cpu"])
			var traced int
			for _, s := range cpu.Sample {
				if splunktest.SampleLabel(s, "trace_id") == "0af7651916cd43dd8448eb211c80319c" {
					traced++
				}
			}
			if len(cpu.Sample) != 4 || traced != 3 {
				t.Errorf("%d cpu samples arrived, %d in the span; want 4 and 3", len(cpu.Sample), traced)
			}
			if got, want := rep.BytesSent(), int64(proto.Size(reqs[0])); got != want || rep.Retries() != 0 {
				t.Errorf("reported %d bytes, %d retries; want %d and 0", got, rep.Retries(), want)
			}
		})
	}
}

// TestExportNothingToSend exports windows without CPU or heap samples:
// nothing reaches the receiver, and it is not an error.
func TestExportNothingToSend(t *testing.T) {
	srv := &logsServer{}
	e := newTest(t, nil, WithEndpoint(startLogsServer(t, srv)), WithInsecure())
	empty := handRequest()
	empty.ResourceProfiles[0].ScopeProfiles = nil
	for _, req := range []*collectorpb.ExportProfilesServiceRequest{empty, {}} {
		if err := e.Export(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if reqs, _ := srv.received(); len(reqs) != 0 {
		t.Errorf("received %d requests, want none", len(reqs))
	}
	if err := e.Export(context.Background(), nil); err == nil {
		t.Error("Export(nil) succeeded")
	}
}

// TestExportRetries checks that an UNAVAILABLE answer is retried and the
// retry reported to the profiler, and that permanent and throttling
// answers come back classified as the profiles exporters' are.
func TestExportRetries(t *testing.T) {
	srv := &logsServer{respond: func(_ context.Context, call int) (*collogspb.ExportLogsServiceResponse, error) {
		if call == 0 {
			return nil, status.Error(codes.Unavailable, "restarting")
		}
		return &collogspb.ExportLogsServiceResponse{}, nil
	}}
	e := newTest(t, nil, WithEndpoint(startLogsServer(t, srv)), WithInsecure(),
		WithRetry(RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond, MaxInterval: 100 * time.Millisecond}))
	var rep report.Report
	if err := e.Export(report.NewContext(context.Background(), &rep), handRequest()); err != nil {
		t.Fatal(err)
	}
	reqs, _ := srv.received()
	if len(reqs) != 2 || rep.Retries() != 1 || rep.BytesSent() != int64(proto.Size(reqs[1])) {
		t.Errorf("%d calls, %d retries, %d bytes reported; want 2, 1 and %d", len(reqs), rep.Retries(), rep.BytesSent(), proto.Size(reqs[1]))
	}

	withRetryInfo := func(code codes.Code, d time.Duration) error {
		st, err := status.New(code, "slow down").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(d)})
		if err != nil {
			t.Fatal(err)
		}
		return st.Err()
	}
	for _, tt := range []struct {
		name      string
		answer    error
		code      codes.Code
		retryable bool
		delay     time.Duration
	}{
		{"invalid argument", status.Error(codes.InvalidArgument, "bad"), codes.InvalidArgument, false, 0},
		{"resource exhausted with RetryInfo", withRetryInfo(codes.ResourceExhausted, 3*time.Second), codes.ResourceExhausted, true, 3 * time.Second},
		{"resource exhausted without RetryInfo", status.Error(codes.ResourceExhausted, "too big"), codes.ResourceExhausted, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := &logsServer{respond: func(context.Context, int) (*collogspb.ExportLogsServiceResponse, error) {
				return nil, tt.answer
			}}
			e := newTest(t, nil, WithEndpoint(startLogsServer(t, srv)), WithInsecure(), noRetry)
			err := e.Export(context.Background(), handRequest())
			var ee *export.ExportError
			if !errors.As(err, &ee) || ee.Status.Code() != tt.code {
				t.Fatalf("err = %v, want an *export.ExportError of code %v", err, tt.code)
			}
			if retry, delay := export.Retryable(err); retry != tt.retryable || delay != tt.delay {
				t.Errorf("Retryable = %v, %v; want %v, %v", retry, delay, tt.retryable, tt.delay)
			}
		})
	}
}

func TestExportTimeout(t *testing.T) {
	srv := &logsServer{respond: func(ctx context.Context, _ int) (*collogspb.ExportLogsServiceResponse, error) {
		<-ctx.Done() // never answers
		return nil, ctx.Err()
	}}
	e := newTest(t, nil, WithEndpoint(startLogsServer(t, srv)), WithInsecure(), WithTimeout(50*time.Millisecond), noRetry)
	err := e.Export(context.Background(), handRequest())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want one that is context.DeadlineExceeded", err)
	}
}

// errorHandler records what reaches otel.Handle.
type errorHandler struct{ errs []error }

func (h *errorHandler) Handle(err error) { h.errs = append(h.errs, err) }

func TestExportPartialSuccess(t *testing.T) {
	h := &errorHandler{}
	otel.SetErrorHandler(h)
	t.Cleanup(func() { otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {})) })
	srv := &logsServer{respond: func(context.Context, int) (*collogspb.ExportLogsServiceResponse, error) {
		return &collogspb.ExportLogsServiceResponse{PartialSuccess: &collogspb.ExportLogsPartialSuccess{
			RejectedLogRecords: 1, ErrorMessage: "allocation record too large",
		}}, nil
	}}
	e := newTest(t, nil, WithEndpoint(startLogsServer(t, srv)), WithInsecure())
	if err := e.Export(context.Background(), handRequest()); err != nil {
		t.Fatalf("a partial success is not an error: %v", err)
	}
	if len(h.errs) != 1 || !strings.Contains(h.errs[0].Error(), "1 log records rejected: allocation record too large") {
		t.Errorf("otel.Handle got %v", h.errs)
	}
}

func TestShutdown(t *testing.T) {
	e := newTest(t, nil, WithEndpoint("127.0.0.1:1"), WithInsecure())
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	for _, req := range []*collectorpb.ExportProfilesServiceRequest{handRequest(), {}} {
		if err := e.Export(context.Background(), req); !errors.Is(err, export.ErrShutdown) {
			t.Fatalf("Export after Shutdown = %v, want export.ErrShutdown", err)
		}
	}
}

// TestEndpointFromEnvironment checks that the receiver is found through
// SPLUNK_PROFILER_LOGS_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT, an
// invalid one giving way to the next with a warning.
func TestEndpointFromEnvironment(t *testing.T) {
	for _, tt := range []struct {
		name    string
		env     func(addr string) map[string]string
		warning string
	}{
		{"SPLUNK_PROFILER_LOGS_ENDPOINT", func(addr string) map[string]string {
			return map[string]string{envLogsEndpoint: "http://" + addr, envOTLPEndpoint: "http://127.0.0.1:1"}
		}, ""},
		{"OTEL_EXPORTER_OTLP_ENDPOINT after an invalid one", func(addr string) map[string]string {
			return map[string]string{envLogsEndpoint: "ftp://x:1", envOTLPEndpoint: addr, "OTEL_EXPORTER_OTLP_INSECURE": "true"}
		}, `splunk: SPLUNK_PROFILER_LOGS_ENDPOINT="ftp://x:1"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := &logsServer{}
			env := tt.env(startLogsServer(t, srv))
			var logs bytes.Buffer
			e, err := newExporter(func(k string) string { return env[k] }, slog.New(slog.NewTextHandler(&logs, nil)), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Shutdown(context.Background())
			if err := e.Export(context.Background(), handRequest()); err != nil {
				t.Fatal(err)
			}
			if reqs, _ := srv.received(); len(reqs) != 1 {
				t.Errorf("received %d requests, want 1", len(reqs))
			}
			if got := logs.String(); tt.warning == "" && got != "" || !strings.Contains(got, strings.ReplaceAll(tt.warning, `"`, `\"`)) {
				t.Errorf("logged %q, want a warning containing %q", got, tt.warning)
			}
		})
	}
}

func TestCollectionDefaults(t *testing.T) {
	for _, tt := range []struct {
		name     string
		env      map[string]string
		profiles []string
		window   time.Duration
		warning  string
	}{
		{"defaults", nil, []string{"cpu"}, 10 * time.Second, ""},
		{"memory and interval", map[string]string{envMemoryEnabled: "true", envCallStackInterval: "2500"},
			[]string{"cpu", "heap"}, 2500 * time.Millisecond, ""},
		{"interval below the floor", map[string]string{envCallStackInterval: "10"},
			[]string{"cpu"}, 10 * time.Second, `SPLUNK_PROFILER_CALL_STACK_INTERVAL=\"10\": the call stack interval must be at least 1000 milliseconds; ignored`},
		{"memory not a boolean", map[string]string{envMemoryEnabled: "yes"},
			[]string{"cpu"}, 10 * time.Second, `SPLUNK_PROFILER_MEMORY_ENABLED=\"yes\"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			e, err := newExporter(func(k string) string { return tt.env[k] }, slog.New(slog.NewTextHandler(&logs, nil)), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Shutdown(context.Background())
			profiles, window := e.CollectionDefaults()
			if !slices.Equal(profiles, tt.profiles) || window != tt.window {
				t.Errorf("CollectionDefaults = %v, %v; want %v, %v", profiles, window, tt.profiles, tt.window)
			}
			if got := logs.String(); tt.warning == "" && got != "" || !strings.Contains(got, tt.warning) {
				t.Errorf("logged %q, want a warning containing %q", got, tt.warning)
			}
		})
	}
}

// TestOptionErrors checks that a bad option makes New fail with an error
// naming the option and its value.
func TestOptionErrors(t *testing.T) {
	for _, tt := range []struct {
		opt  Option
		want string
	}{
		{WithEndpoint("http://c:4317"), `splunk: WithEndpoint("http://c:4317")`},
		{WithEndpoint("localhost"), `splunk: WithEndpoint("localhost")`},
		{WithEndpointURL("ftp://c:1"), `splunk: WithEndpointURL("ftp://c:1")`},
		{WithCompressor("br"), `splunk: WithCompressor("br")`},
		{WithTimeout(-time.Second), "splunk: WithTimeout(-1s)"},
		{WithHeaders(map[string]string{"bad key": "v"}), `splunk: WithHeaders(header "bad key")`},
		{WithMaxRequestBytes(1000), "splunk: WithMaxRequestBytes(1000)"},
		{WithRetry(RetryConfig{InitialInterval: -1}), "splunk: WithRetry("},
	} {
		_, err := newExporter(func(string) string { return "" }, nil, []Option{tt.opt})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New = %v, want an error containing %q", err, tt.want)
		}
	}
}

func TestRegistered(t *testing.T) {
	f, ok := registry.Lookup("splunk")
	if !ok {
		t.Fatal(`"splunk" is not registered`)
	}
	e, err := f(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	if _, ok := e.(*Exporter); !ok {
		t.Fatalf("the factory built a %T", e)
	}
}
