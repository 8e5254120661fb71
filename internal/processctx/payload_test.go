package processctx

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

func str(key, value string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: key, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: value}}}
}

// decodePayload undoes encode: one ProcessContext.resource field, then
// the attributes, which must be the thread-local reference data of a Go
// program and nothing else.
func decodePayload(t *testing.T, payload []byte) *resourcepb.Resource {
	t.Helper()
	num, typ, n := protowire.ConsumeTag(payload)
	if n < 0 || num != 1 || typ != protowire.BytesType {
		t.Fatalf("payload starts with field %d type %d, want ProcessContext.resource", num, typ)
	}
	body, m := protowire.ConsumeBytes(payload[n:])
	if m < 0 {
		t.Fatalf("payload's resource field is truncated")
	}
	res := new(resourcepb.Resource)
	if err := proto.Unmarshal(body, res); err != nil {
		t.Fatal(err)
	}
	var attrs []string
	for rest := payload[n+m:]; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 || num != 2 || typ != protowire.BytesType {
			t.Fatalf("after the resource: field %d type %d, want ProcessContext.attributes", num, typ)
		}
		field, m := protowire.ConsumeBytes(rest[n:])
		if m < 0 {
			t.Fatalf("attribute field is truncated")
		}
		kv := new(commonpb.KeyValue)
		if err := proto.Unmarshal(field, kv); err != nil {
			t.Fatal(err)
		}
		attrs = append(attrs, kv.GetKey()+"="+kv.GetValue().GetStringValue())
		rest = rest[n+m:]
	}
	if want := []string{"threadlocal.schema_version=go_pprof_labels_v1"}; !slices.Equal(attrs, want) {
		t.Errorf("process context attributes %q, want %q", attrs, want)
	}
	return res
}

// valueFilling returns the length of a value that, next to service.name,
// makes the payload exactly size bytes.
func valueFilling(size int) int {
	for l := size - 64 - len(threadLocalAttributes); ; l++ {
		res := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "svc"), str("big", strings.Repeat("v", l))}}
		if payloadSize(proto.Size(res)) >= size {
			return l
		}
	}
}

func TestEncodeWithinTheReadersLimit(t *testing.T) {
	exact := valueFilling(MaxPayloadSize)
	medium := make([]*commonpb.KeyValue, 100)
	for i := range medium {
		// Sizes 1000..1099 bytes, so that the largest go first.
		medium[i] = str(fmt.Sprintf("k%03d", i), strings.Repeat("m", 1000+i))
	}

	tests := []struct {
		name        string
		res         *resourcepb.Resource
		wantDropped []string
	}{
		{
			name: "small resource as is",
			res:  &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "svc"), str("host.name", "h")}},
		},
		{
			name: "empty resource",
			res:  &resourcepb.Resource{},
		},
		{
			name: "exactly at the limit",
			res:  &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "svc"), str("big", strings.Repeat("v", exact))}},
		},
		{
			name:        "one byte over the limit drops the largest",
			res:         &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "svc"), str("big", strings.Repeat("v", exact+1))}},
			wantDropped: []string{"big"},
		},
		{
			name: "a huge value goes, the identity stays",
			res: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
				str("process.command_args", strings.Repeat("a", 200<<10)),
				str("service.name", "checkout"),
				str("service.version", "1.2.3"),
			}, DroppedAttributesCount: 2},
			wantDropped: []string{"process.command_args"},
		},
		{
			name: "many medium values: the largest go until the rest fits",
			res:  &resourcepb.Resource{Attributes: medium},
			// Each takes 15 bytes besides its value: the 62 smallest
			// take 62*1015 + 61*62/2 = 64821 bytes, 63 would take 65898.
			wantDropped: keysOf(medium[62:]),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			payload, dropped, err := encode(tt.res)
			if err != nil {
				t.Fatal(err)
			}
			if len(payload) > MaxPayloadSize || len(payload) == 0 {
				t.Errorf("payload of %d bytes, want 1..%d", len(payload), MaxPayloadSize)
			}
			if !slices.Equal(dropped, tt.wantDropped) {
				t.Errorf("dropped %v, want %v", dropped, tt.wantDropped)
			}
			got := decodePayload(t, payload)
			if want := tt.res.DroppedAttributesCount + uint32(len(tt.wantDropped)); got.DroppedAttributesCount != want {
				t.Errorf("dropped_attributes_count %d, want %d", got.DroppedAttributesCount, want)
			}
			var want []*commonpb.KeyValue
			for _, kv := range tt.res.Attributes {
				if !slices.Contains(tt.wantDropped, kv.Key) {
					want = append(want, kv)
				}
			}
			if !slices.EqualFunc(got.Attributes, want, func(a, b *commonpb.KeyValue) bool { return proto.Equal(a, b) }) {
				t.Errorf("kept %v, want %v", keysOf(got.Attributes), keysOf(want))
			}
			// No more than needed is dropped: putting the smallest dropped
			// attribute back would overflow.
			if len(dropped) > 0 {
				var smallest *commonpb.KeyValue
				for _, kv := range tt.res.Attributes {
					if slices.Contains(dropped, kv.Key) && (smallest == nil || proto.Size(kv) < proto.Size(smallest)) {
						smallest = kv
					}
				}
				back := proto.Clone(got).(*resourcepb.Resource)
				back.Attributes = append(back.Attributes, smallest)
				back.DroppedAttributesCount--
				if payloadSize(proto.Size(back)) <= MaxPayloadSize {
					t.Errorf("%s was dropped but fits", smallest.Key)
				}
			}
		})
	}
}

func keysOf(kvs []*commonpb.KeyValue) []string {
	out := make([]string, len(kvs))
	for i, kv := range kvs {
		out[i] = kv.Key
	}
	return out
}
