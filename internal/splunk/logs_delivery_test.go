package splunk

// These tests send Splunk-encoded requests through export.NewLogsGRPC, the
// transport the profiler uses in Splunk mode, to an in-process logs
// receiver: encoding and delivery together.

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/export"
)

// logsServer is an in-process OTLP/gRPC logs receiver.
type logsServer struct {
	collogspb.UnimplementedLogsServiceServer

	mu       sync.Mutex
	requests []*collogspb.ExportLogsServiceRequest
	metadata []metadata.MD
	// respond, if set, decides the answer to each call.
	respond func(ctx context.Context) (*collogspb.ExportLogsServiceResponse, error)
}

func (s *logsServer) Export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (*collogspb.ExportLogsServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	s.requests = append(s.requests, proto.Clone(req).(*collogspb.ExportLogsServiceRequest))
	s.metadata = append(s.metadata, md)
	respond := s.respond
	s.mu.Unlock()
	if respond != nil {
		return respond(ctx)
	}
	return &collogspb.ExportLogsServiceResponse{}, nil
}

func (s *logsServer) received() ([]*collogspb.ExportLogsServiceRequest, []metadata.MD) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests, s.metadata
}

// startLogsServer serves s on a loopback port and returns its address.
func startLogsServer(t *testing.T, s *logsServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	collogspb.RegisterLogsServiceServer(srv, s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return lis.Addr().String()
}

func newTestExporter(t *testing.T, cfg export.OTLPConfig) export.Sender[*collogspb.ExportLogsServiceRequest] {
	t.Helper()
	e, err := export.NewLogsGRPC(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return e
}

func handRequest(t *testing.T) *collogspb.ExportLogsServiceRequest {
	t.Helper()
	req, err := encodeWindow(handWindow(collect.Profile{Name: collect.CPU, Data: handCPU()}), EncodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestLogsDeliveryArrives sends the hand-built request with headers,
// gzip and a user agent, and checks what the receiver got.
func TestLogsDeliveryArrives(t *testing.T) {
	for _, compression := range []string{"none", "gzip"} {
		t.Run(compression, func(t *testing.T) {
			srv := &logsServer{}
			addr := startLogsServer(t, srv)
			e := newTestExporter(t, export.OTLPConfig{
				Protocol: export.ProtocolGRPC, Endpoint: addr, Insecure: true,
				Headers:     map[string]string{"X-SF-Token": "secret"},
				Compression: compression, Timeout: 10 * time.Second, UserAgent: "pprofotel-go/test",
			})
			req := handRequest(t)
			if err := e.Export(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			reqs, mds := srv.received()
			if len(reqs) != 1 {
				t.Fatalf("received %d requests, want 1", len(reqs))
			}
			if !proto.Equal(reqs[0], req) {
				t.Error("received request differs from the one sent")
			}
			if got := mds[0].Get("x-sf-token"); len(got) != 1 || got[0] != "secret" {
				t.Errorf("x-sf-token = %v", got)
			}
			if got := mds[0].Get("user-agent"); len(got) != 1 || !strings.HasPrefix(got[0], "pprofotel-go/test") {
				t.Errorf("user-agent = %v", got)
			}
			cpu := decodeBody(t, records(t, reqs[0])["cpu"])
			if len(cpu.Sample) != 7 {
				t.Errorf("%d cpu samples arrived, want 7", len(cpu.Sample))
			}
		})
	}
}

// TestLogsDeliveryErrors checks that the receiver's answers are classified
// by export.Retryable as for the profiles exporter, so the same retry
// policy applies.
func TestLogsDeliveryErrors(t *testing.T) {
	withRetryInfo := func(code codes.Code, d time.Duration) error {
		st, err := status.New(code, "slow down").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(d)})
		if err != nil {
			t.Fatal(err)
		}
		return st.Err()
	}
	tests := []struct {
		name      string
		answer    error
		code      codes.Code
		retryable bool
		delay     time.Duration
	}{
		{"unavailable", status.Error(codes.Unavailable, "restarting"), codes.Unavailable, true, 0},
		{"invalid argument", status.Error(codes.InvalidArgument, "bad"), codes.InvalidArgument, false, 0},
		{"resource exhausted with RetryInfo", withRetryInfo(codes.ResourceExhausted, 3*time.Second), codes.ResourceExhausted, true, 3 * time.Second},
		{"resource exhausted without RetryInfo", status.Error(codes.ResourceExhausted, "too big"), codes.ResourceExhausted, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &logsServer{respond: func(context.Context) (*collogspb.ExportLogsServiceResponse, error) {
				return nil, tt.answer
			}}
			e := newTestExporter(t, export.OTLPConfig{Endpoint: startLogsServer(t, srv), Insecure: true})
			err := e.Export(context.Background(), handRequest(t))
			var ee *export.ExportError
			if !errors.As(err, &ee) {
				t.Fatalf("err = %v (%T), want an *export.ExportError", err, err)
			}
			if ee.Protocol != export.ProtocolGRPC || ee.Status.Code() != tt.code {
				t.Errorf("protocol %q code %v, want grpc %v", ee.Protocol, ee.Status.Code(), tt.code)
			}
			retry, delay := export.Retryable(err)
			if retry != tt.retryable || delay != tt.delay {
				t.Errorf("Retryable = %v, %v; want %v, %v", retry, delay, tt.retryable, tt.delay)
			}
		})
	}
}

func TestLogsDeliveryTimeout(t *testing.T) {
	srv := &logsServer{respond: func(ctx context.Context) (*collogspb.ExportLogsServiceResponse, error) {
		<-ctx.Done() // never answers
		return nil, ctx.Err()
	}}
	e := newTestExporter(t, export.OTLPConfig{Endpoint: startLogsServer(t, srv), Insecure: true, Timeout: 50 * time.Millisecond})
	err := e.Export(context.Background(), handRequest(t))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want one that is context.DeadlineExceeded", err)
	}
	if retry, _ := export.Retryable(err); !retry {
		t.Errorf("a timed-out attempt is not retryable: %v", err)
	}
}

func TestLogsDeliveryPartialSuccess(t *testing.T) {
	srv := &logsServer{respond: func(context.Context) (*collogspb.ExportLogsServiceResponse, error) {
		return &collogspb.ExportLogsServiceResponse{PartialSuccess: &collogspb.ExportLogsPartialSuccess{
			RejectedLogRecords: 1, ErrorMessage: "allocation record too large",
		}}, nil
	}}
	var rejected int64
	var message string
	e := newTestExporter(t, export.OTLPConfig{
		Endpoint: startLogsServer(t, srv), Insecure: true,
		OnPartialSuccess: func(n int64, msg string) { rejected, message = n, msg },
	})
	if err := e.Export(context.Background(), handRequest(t)); err != nil {
		t.Fatalf("a partial success is not an error: %v", err)
	}
	if rejected != 1 || message != "allocation record too large" {
		t.Errorf("OnPartialSuccess got %d %q", rejected, message)
	}
}

func TestLogsDeliveryShutdown(t *testing.T) {
	e := newTestExporter(t, export.OTLPConfig{Endpoint: "127.0.0.1:1", Insecure: true})
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	if err := e.Export(context.Background(), handRequest(t)); !errors.Is(err, export.ErrShutdown) {
		t.Fatalf("Export after Shutdown = %v, want export.ErrShutdown", err)
	}
}

func TestNewLogsGRPCInvalid(t *testing.T) {
	tests := []struct {
		name string
		cfg  export.OTLPConfig
		want string
	}{
		{"http protocol", export.OTLPConfig{Protocol: export.ProtocolHTTPProtobuf, Endpoint: "localhost:4317"}, `protocol "http/protobuf"`},
		{"no port", export.OTLPConfig{Endpoint: "localhost"}, `endpoint "localhost"`},
		{"port zero", export.OTLPConfig{Endpoint: "localhost:0"}, `port "0"`},
		{"empty endpoint", export.OTLPConfig{}, `endpoint ""`},
		{"compression", export.OTLPConfig{Endpoint: "localhost:4317", Compression: "br"}, `compression "br"`},
		{"negative timeout", export.OTLPConfig{Endpoint: "localhost:4317", Timeout: -time.Second}, "timeout -1s"},
		{"header key", export.OTLPConfig{Endpoint: "localhost:4317", Headers: map[string]string{"bad key": "v"}}, `header "bad key"`},
		{"header value", export.OTLPConfig{Endpoint: "localhost:4317", Headers: map[string]string{"k": "tab\there"}}, `header "k"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := export.NewLogsGRPC(tt.cfg)
			if err == nil {
				_ = e.Shutdown(context.Background())
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to name %s", err, tt.want)
			}
		})
	}
}
