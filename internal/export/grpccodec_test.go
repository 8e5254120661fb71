package export

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/testutil/otlptest"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/protobuf/proto"
)

// bigRequest is otlptest.Request(1) with a string table of about n bytes, to
// reach the sizes gRPC takes buffers from its pool for.
func bigRequest(n int) *collectorpb.ExportProfilesServiceRequest {
	req := otlptest.Request(1)
	req.Dictionary.StringTable = append(req.Dictionary.StringTable, strings.Repeat("s", n))
	return req
}

func TestRequestCodec(t *testing.T) {
	registered := encoding.GetCodecV2(grpcproto.Name)
	c := &requestCodec{proto: registered}
	if c.Name() != "" {
		t.Errorf("Name() = %q, want \"\" (content-type application/grpc)", c.Name())
	}
	// Sizes go from nothing known, through a request larger than the last
	// (which outgrows its pooled buffer) to smaller ones again.
	msgs := []proto.Message{
		otlptest.Request(1),
		bigRequest(4 << 10),
		bigRequest(64 << 10),
		bigRequest(32 << 10),
		otlptest.Request(2),
		&collectorpb.ExportProfilesServiceResponse{PartialSuccess: &collectorpb.ExportProfilesPartialSuccess{RejectedProfiles: 2, ErrorMessage: "old"}},
		&commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "not a request"}},
	}
	for i, m := range msgs {
		got, err := c.Marshal(m)
		if err != nil {
			t.Fatalf("message %d: Marshal: %v", i, err)
		}
		want, err := registered.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Materialize(), want.Materialize()) {
			t.Errorf("message %d (%T): encoding differs from the proto codec's", i, m)
		}
		back := m.ProtoReflect().New().Interface()
		if err := c.Unmarshal(got, back); err != nil {
			t.Fatalf("message %d: Unmarshal: %v", i, err)
		}
		if !proto.Equal(back, m) {
			t.Errorf("message %d: decodes to %v, want %v", i, back, m)
		}
		got.Free()
		want.Free()
	}
}

func TestRequestCodecInvalidUTF8(t *testing.T) {
	c := &requestCodec{proto: encoding.GetCodecV2(grpcproto.Name)}
	for _, n := range []int{0, 1 << 20} {
		req := bigRequest(n)
		req.Dictionary.StringTable[1] = "\xff"
		c.size.last.Store(int64(n)) // a pooled buffer for the large one
		if _, err := c.Marshal(req); err == nil || !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("hint %d: Marshal error = %v, want invalid UTF-8", n, err)
		}
	}
}

// TestGRPCExportCodec checks what the receiver sees of calls encoded by
// requestCodec: the content type of protobuf and the request as sent.
func TestGRPCExportCodec(t *testing.T) {
	c := &fakeCollector{}
	addr := startGRPC(t, c)
	e := newTestGRPC(t, OTLPConfig{Endpoint: addr, Insecure: true, Timeout: 10 * time.Second, Compression: "gzip"})
	sent := []*collectorpb.ExportProfilesServiceRequest{otlptest.Request(1), bigRequest(256 << 10), bigRequest(1 << 20)}
	sent[2].Dictionary.StackTable = append(sent[2].Dictionary.StackTable, &profilespb.Stack{LocationIndices: []int32{1, 1, 1}})
	for _, req := range sent {
		if err := e.Export(context.Background(), req); err != nil {
			t.Fatalf("Export: %v", err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range sent {
		if !proto.Equal(c.requests[i], sent[i]) {
			t.Errorf("request %d differs from what was sent", i)
		}
		if got := c.md[i].Get("content-type"); len(got) != 1 || got[0] != "application/grpc" {
			t.Errorf("request %d content-type = %q, want [application/grpc]", i, got)
		}
		if c.compression[i] != "gzip" {
			t.Errorf("request %d compression = %q, want gzip", i, c.compression[i])
		}
	}
	// The content type is the same either way; the codec's size hint tells
	// that the calls went through it.
	codec := e.(*grpcExporter).callOpts[0].(grpc.ForceCodecV2CallOption).CodecV2.(*requestCodec)
	if got, want := codec.size.last.Load(), int64(proto.Size(sent[len(sent)-1])); got != want {
		t.Errorf("codec size hint = %d, want the last request's size %d", got, want)
	}
}
