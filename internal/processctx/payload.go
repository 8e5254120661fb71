package processctx

import (
	"cmp"
	"slices"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// MaxPayloadSize is the largest payload the eBPF profiler's reader accepts;
// it ignores a context whose payload is larger.
const MaxPayloadSize = 64 << 10

// Field numbers of ProcessContext.
const (
	resourceField   = 1
	attributesField = 2
)

// Thread-local reference data of OTEP 4947, published in the process
// context's attributes. Goroutines move between threads, so a Go program
// has no thread-local record for a reader to find; the OTEP's alternative
// for Go is that readers take the context from the goroutine's pprof
// labels, which the labels package sets (trace_id and span_id, see its
// documentation). The schema version tells a reader so; the attribute key
// map stays out, as the OTEP asks for Go.
const (
	SchemaVersionKey = "threadlocal.schema_version"
	SchemaVersionGo  = "go_pprof_labels_v1"
)

// threadLocalAttributes is ProcessContext.attributes, encoded once: the
// same for every process this package publishes.
var threadLocalAttributes = func() []byte {
	kv, err := proto.Marshal(&commonpb.KeyValue{
		Key:   SchemaVersionKey,
		Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: SchemaVersionGo}},
	})
	if err != nil {
		panic(err) // a constant message: cannot fail
	}
	return protowire.AppendBytes(protowire.AppendTag(nil, attributesField, protowire.BytesType), kv)
}()

// encode returns the payload for res: ProcessContext{resource: res,
// attributes: the thread-local reference data}. When
// that exceeds MaxPayloadSize, it leaves out attributes, the largest first,
// until the rest fits, adds their number to dropped_attributes_count, and
// returns their keys. A huge resource is almost always one or two huge
// values (a long command line, a blob set by the application); dropping
// those keeps service.name and the other short attributes that identify
// the process, which is what a reader needs the context for.
func encode(res *resourcepb.Resource) (payload []byte, dropped []string, err error) {
	kept := &resourcepb.Resource{
		Attributes:             res.GetAttributes(),
		DroppedAttributesCount: res.GetDroppedAttributesCount(),
		EntityRefs:             res.GetEntityRefs(),
	}
	if payloadSize(proto.Size(kept)) > MaxPayloadSize {
		kept, dropped = fit(kept)
	}
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(kept)
	if err != nil {
		return nil, nil, err
	}
	payload = protowire.AppendTag(make([]byte, 0, payloadSize(len(body))), resourceField, protowire.BytesType)
	payload = protowire.AppendBytes(payload, body)
	return append(payload, threadLocalAttributes...), dropped, nil
}

// payloadSize is the size of the payload for a resource of resourceSize
// bytes.
func payloadSize(resourceSize int) int {
	return protowire.SizeTag(resourceField) + protowire.SizeBytes(resourceSize) + len(threadLocalAttributes)
}

// fit drops the largest attributes of res until its payload fits
// MaxPayloadSize. A Resource's size is the sum of its fields' sizes, so the
// sizes are added up once rather than measured again after every drop.
func fit(res *resourcepb.Resource) (*resourcepb.Resource, []string) {
	type attr struct{ index, size int }
	attrs := make([]attr, len(res.Attributes))
	total := 0
	for i, kv := range res.Attributes {
		size := protowire.SizeTag(1) + protowire.SizeBytes(proto.Size(kv))
		attrs[i] = attr{i, size}
		total += size
	}
	slices.SortStableFunc(attrs, func(a, b attr) int { return cmp.Compare(b.size, a.size) })

	rest := &resourcepb.Resource{EntityRefs: res.EntityRefs, DroppedAttributesCount: res.DroppedAttributesCount}
	drop := make(map[int]bool)
	for _, a := range attrs {
		if payloadSize(total+proto.Size(rest)) <= MaxPayloadSize {
			break
		}
		drop[a.index] = true
		total -= a.size
		rest.DroppedAttributesCount++
	}
	if payloadSize(total+proto.Size(rest)) > MaxPayloadSize {
		// Entity references name attributes, which are all gone.
		rest.EntityRefs = nil
	}
	var dropped []string
	for i, kv := range res.Attributes {
		if drop[i] {
			dropped = append(dropped, kv.GetKey())
		} else {
			rest.Attributes = append(rest.Attributes, kv)
		}
	}
	return rest, dropped
}
