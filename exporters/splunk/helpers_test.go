package splunk

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/convert/otlp"
)

// logsServer is an in-process OTLP/gRPC logs receiver.
type logsServer struct {
	collogspb.UnimplementedLogsServiceServer

	mu       sync.Mutex
	requests []*collogspb.ExportLogsServiceRequest
	metadata []metadata.MD
	// respond, if set, decides the answer to each call, numbered from 0.
	respond func(ctx context.Context, call int) (*collogspb.ExportLogsServiceResponse, error)
}

func (s *logsServer) Export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (*collogspb.ExportLogsServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	call := len(s.requests)
	s.requests = append(s.requests, proto.Clone(req).(*collogspb.ExportLogsServiceRequest))
	s.metadata = append(s.metadata, md)
	respond := s.respond
	s.mu.Unlock()
	if respond != nil {
		return respond(ctx, call)
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

// newTest returns an exporter over the environment env, shut down at the
// end of the test.
func newTest(t *testing.T, env map[string]string, opts ...Option) *Exporter {
	t.Helper()
	e, err := newExporter(func(k string) string { return env[k] }, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return e
}

var windowStart = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func testResource() *resourcepb.Resource {
	return &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
		{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "checkout"}}},
	}}
}

// handCPU is a CPU profile of 4 samples over 2 stacks, one of them in a
// span.
func handCPU() *pprofdecode.Profile {
	ms := int64(time.Millisecond)
	return &pprofdecode.Profile{
		SampleTypes: []pprofdecode.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:  pprofdecode.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:      10 * ms,
		Samples: []pprofdecode.Sample{
			{Locations: []int32{0, 1}, Values: []int64{3, 30 * ms}, Labels: []pprofdecode.Label{
				{Key: "span_id", Str: "b7ad6b7169203331"},
				{Key: "trace_id", Str: "0af7651916cd43dd8448eb211c80319c"},
			}},
			{Locations: []int32{1}, Values: []int64{1, 10 * ms}},
		},
		Functions: []pprofdecode.Function{{Name: "main.work"}, {Name: "main.main"}},
		Locations: []pprofdecode.Location{
			{Mapping: -1, Address: 0x401000, Lines: []pprofdecode.Line{{Function: 0, Line: 10}}},
			{Mapping: -1, Address: 0x402000, Lines: []pprofdecode.Line{{Function: 1, Line: 30}}},
		},
	}
}

// request builds the OTLP profiles request of w as the profiler does.
func request(w collect.Window) *collectorpb.ExportProfilesServiceRequest {
	b := otlp.NewBuilder(testResource(), &commonpb.InstrumentationScope{Name: "github.com/pprofotel/profiler"})
	inputs := make([]otlp.Input, len(w.Profiles))
	for i, p := range w.Profiles {
		inputs[i] = otlp.Input{Name: p.Name, Profile: p.Data, Start: p.Start, End: p.End}
	}
	return b.Build(w.Start, w.End, inputs)
}

// handRequest is the request of a 10-second window holding handCPU.
func handRequest() *collectorpb.ExportProfilesServiceRequest {
	return request(collect.Window{Start: windowStart, End: windowStart.Add(10 * time.Second),
		Profiles: []collect.Profile{{Name: collect.CPU, Data: handCPU()}}})
}
