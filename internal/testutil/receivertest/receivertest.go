// Package receivertest is a test helper of the OTLP exporter packages:
// OTLP profiles receivers over HTTP and gRPC on loopback that record what
// they receive and answer as a test scripts them, and requests large enough
// to be split.
package receivertest

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/protobuf/proto"
)

// Request returns a request of one CPU profile with n samples, each on a
// stack of its own function, sample i of value i+1: a request of n samples
// is about 60*n bytes of protobuf, and every part of a split needs its own
// share of the dictionary.
func Request(n int) *collectorpb.ExportProfilesServiceRequest {
	d := &profilespb.ProfilesDictionary{
		MappingTable:   []*profilespb.Mapping{{}},
		LocationTable:  []*profilespb.Location{{}},
		FunctionTable:  []*profilespb.Function{{}},
		LinkTable:      []*profilespb.Link{{}},
		StringTable:    []string{"", "cpu", "nanoseconds"},
		AttributeTable: []*profilespb.KeyValueAndUnit{{}},
		StackTable:     []*profilespb.Stack{{}},
	}
	prof := &profilespb.Profile{
		SampleType:   &profilespb.ValueType{TypeStrindex: 1, UnitStrindex: 2},
		PeriodType:   &profilespb.ValueType{TypeStrindex: 1, UnitStrindex: 2},
		Period:       10_000_000,
		TimeUnixNano: 1_763_769_600_000_000_000,
		DurationNano: 60_000_000_000,
		ProfileId:    []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
	}
	for i := range n {
		d.StringTable = append(d.StringTable, fmt.Sprintf("example.com/app.handler%06d", i))
		d.FunctionTable = append(d.FunctionTable, &profilespb.Function{NameStrindex: int32(len(d.StringTable) - 1)})
		d.LocationTable = append(d.LocationTable, &profilespb.Location{
			Address: 0x401000 + uint64(i)*16,
			Lines:   []*profilespb.Line{{FunctionIndex: int32(len(d.FunctionTable) - 1), Line: int64(i)}},
		})
		d.StackTable = append(d.StackTable, &profilespb.Stack{LocationIndices: []int32{int32(len(d.LocationTable) - 1)}})
		prof.Samples = append(prof.Samples, &profilespb.Sample{
			StackIndex: int32(len(d.StackTable) - 1),
			Values:     []int64{int64(i + 1)},
		})
	}
	return &collectorpb.ExportProfilesServiceRequest{
		Dictionary: d,
		ResourceProfiles: []*profilespb.ResourceProfiles{{
			Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{
				Key:   "service.name",
				Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "receivertest"}},
			}}},
			ScopeProfiles: []*profilespb.ScopeProfiles{{
				Scope:    &commonpb.InstrumentationScope{Name: "github.com/pprofotel/profiler"},
				Profiles: []*profilespb.Profile{prof},
			}},
		}},
	}
}

// Totals returns, over reqs, the sum of the sample values of each leaf
// function, resolved through each request's own dictionary.
func Totals(reqs ...*collectorpb.ExportProfilesServiceRequest) map[string]int64 {
	out := make(map[string]int64)
	for _, req := range reqs {
		d := req.GetDictionary()
		for _, rp := range req.GetResourceProfiles() {
			for _, sp := range rp.GetScopeProfiles() {
				for _, p := range sp.GetProfiles() {
					for _, s := range p.GetSamples() {
						st := d.GetStackTable()[s.GetStackIndex()]
						loc := d.GetLocationTable()[st.GetLocationIndices()[0]]
						fn := d.GetFunctionTable()[loc.GetLines()[0].GetFunctionIndex()]
						for _, v := range s.GetValues() {
							out[d.GetStringTable()[fn.GetNameStrindex()]] += v
						}
					}
				}
			}
		}
	}
	return out
}

// HTTPCall is what an HTTPReceiver saw of one request.
type HTTPCall struct {
	Path   string
	Header http.Header
	// Body is the body as sent, BodyRaw decompressed.
	Body, BodyRaw []byte
}

// HTTPReceiver is an OTLP/HTTP receiver. Respond, if set, answers the
// n-th call (from 0) instead of an empty 200.
type HTTPReceiver struct {
	Respond func(n int, w http.ResponseWriter)

	mu    sync.Mutex
	calls []HTTPCall
}

// ServeHTTP records the call and answers it.
func (h *HTTPReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	raw := body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err == nil {
			raw, err = io.ReadAll(zr)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	h.mu.Lock()
	n := len(h.calls)
	h.calls = append(h.calls, HTTPCall{Path: r.URL.Path, Header: r.Header.Clone(), Body: body, BodyRaw: raw})
	h.mu.Unlock()
	if h.Respond != nil {
		h.Respond(n, w)
		return
	}
	w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
	w.WriteHeader(http.StatusOK)
}

// Calls returns the calls received so far.
func (h *HTTPReceiver) Calls() []HTTPCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]HTTPCall(nil), h.calls...)
}

// Requests decodes the protobuf bodies received so far.
func (h *HTTPReceiver) Requests(t testing.TB) []*collectorpb.ExportProfilesServiceRequest {
	t.Helper()
	var out []*collectorpb.ExportProfilesServiceRequest
	for i, c := range h.Calls() {
		req := new(collectorpb.ExportProfilesServiceRequest)
		if err := proto.Unmarshal(c.BodyRaw, req); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		out = append(out, req)
	}
	return out
}

// StartHTTP serves h on loopback until the test ends.
func StartHTTP(t testing.TB, h *HTTPReceiver) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

// GRPCReceiver is an OTLP/gRPC ProfilesService. Respond, if set, answers
// the n-th call (from 0) instead of an empty response.
type GRPCReceiver struct {
	collectorpb.UnimplementedProfilesServiceServer
	Respond func(n int) (*collectorpb.ExportProfilesServiceResponse, error)

	mu          sync.Mutex
	requests    []*collectorpb.ExportProfilesServiceRequest
	md          []metadata.MD
	compression []string
}

// The stats.Handler methods record the compression of each incoming call,
// which the server does not expose as metadata.

// TagRPC implements stats.Handler.
func (g *GRPCReceiver) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

// HandleRPC implements stats.Handler.
func (g *GRPCReceiver) HandleRPC(_ context.Context, s stats.RPCStats) {
	if h, ok := s.(*stats.InHeader); ok {
		g.mu.Lock()
		g.compression = append(g.compression, h.Compression)
		g.mu.Unlock()
	}
}

// TagConn implements stats.Handler.
func (g *GRPCReceiver) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

// HandleConn implements stats.Handler.
func (g *GRPCReceiver) HandleConn(context.Context, stats.ConnStats) {}

// Compression returns the grpc-encoding of each call received so far.
func (g *GRPCReceiver) Compression() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.compression...)
}

// Export records the call and answers it.
func (g *GRPCReceiver) Export(ctx context.Context, req *collectorpb.ExportProfilesServiceRequest) (*collectorpb.ExportProfilesServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	g.mu.Lock()
	n := len(g.requests)
	g.requests = append(g.requests, req)
	g.md = append(g.md, md)
	g.mu.Unlock()
	if g.Respond != nil {
		return g.Respond(n)
	}
	return &collectorpb.ExportProfilesServiceResponse{}, nil
}

// Requests returns the requests received so far.
func (g *GRPCReceiver) Requests() []*collectorpb.ExportProfilesServiceRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*collectorpb.ExportProfilesServiceRequest(nil), g.requests...)
}

// Metadata returns the metadata of each call received so far.
func (g *GRPCReceiver) Metadata() []metadata.MD {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]metadata.MD(nil), g.md...)
}

// StartGRPC serves g on a loopback port until the test ends and returns
// its host:port.
func StartGRPC(t testing.TB, g *GRPCReceiver, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(append(opts, grpc.StatsHandler(g))...)
	collectorpb.RegisterProfilesServiceServer(srv, g)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}
