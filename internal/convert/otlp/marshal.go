package otlp

import (
	"math"
	"math/bits"
	"slices"
	"unicode/utf8"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// AppendRequest appends the protobuf wire encoding of req to b and returns
// the extended slice. The bytes are exactly those of
// proto.MarshalOptions{}.MarshalAppend(b, req), unknown fields included. A
// string field holding invalid UTF-8, which proto3 forbids, fails as it
// does in protobuf-go, with an error wrapping proto.Error; b is then
// returned unextended.
//
// It exists for speed. protobuf-go walks the request twice through its
// generic tables, once to size every message and once to write it.
// AppendRequest walks the generated structs directly, once, and
// allocates nothing when b has room: a submessage's length is reserved
// before its body is written and filled in after, the body moving only
// when the length needs a different number of bytes than was reserved.
//
// It must stay in step with the generated code of the OTLP modules: a field
// that a new version adds to a message would be dropped here without a
// word. TestAppendRequestRandom fills every field the descriptors list and
// compares the encoding with protobuf-go's, so it fails when that happens;
// FuzzAppendRequest does the same for arbitrary decodable input.
func AppendRequest(b []byte, req *collectorpb.ExportProfilesServiceRequest) ([]byte, error) {
	if req == nil {
		return b, nil
	}
	n := len(b)
	var e encoder
	b = e.request(b, req)
	if e.invalidUTF8 {
		return b[:n], invalidUTF8Error{}
	}
	return b, nil
}

// invalidUTF8Error is what protobuf-go reports for a string field that is
// not valid UTF-8, which proto3 requires of every string.
type invalidUTF8Error struct{}

func (invalidUTF8Error) Error() string     { return "string field contains invalid UTF-8" }
func (invalidUTF8Error) InvalidUTF8() bool { return true }
func (invalidUTF8Error) Unwrap() error     { return proto.Error }

// Wire types, and the bytes reserved for the length of a submessage. Most
// messages are short and take one byte; the containers of a request's
// samples and dictionary commonly run from 16 KiB to 2 MiB, whose lengths
// take three, so that their bodies, megabytes long, are not moved.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2

	reserveSmall = 1
	reserveLarge = 3
)

// encoder carries what the append functions cannot return alongside the
// slice: whether a string was not valid UTF-8. protobuf-go writes such a
// string all the same and reports the error at the end.
type encoder struct {
	invalidUTF8 bool
}

// Field numbers are those of the .proto files; every message is written in
// ascending field number, then its unknown fields, as protobuf-go does.

func (e *encoder) request(b []byte, m *collectorpb.ExportProfilesServiceRequest) []byte {
	for _, rp := range m.ResourceProfiles {
		b = openMessage(b, 1<<3|wireBytes, reserveLarge)
		start := len(b)
		b = e.resourceProfiles(b, rp)
		b = closeMessage(b, start, reserveLarge)
	}
	if m.Dictionary != nil {
		b = openMessage(b, 2<<3|wireBytes, reserveLarge)
		start := len(b)
		b = e.dictionary(b, m.Dictionary)
		b = closeMessage(b, start, reserveLarge)
	}
	return appendUnknown(b, m)
}

func (e *encoder) resourceProfiles(b []byte, m *profilespb.ResourceProfiles) []byte {
	if m == nil {
		return b
	}
	if m.Resource != nil {
		b = openMessage(b, 1<<3|wireBytes, reserveSmall)
		start := len(b)
		b = e.resource(b, m.Resource)
		b = closeMessage(b, start, reserveSmall)
	}
	for _, sp := range m.ScopeProfiles {
		b = openMessage(b, 2<<3|wireBytes, reserveLarge)
		start := len(b)
		b = e.scopeProfiles(b, sp)
		b = closeMessage(b, start, reserveLarge)
	}
	b = e.appendString(b, 3<<3|wireBytes, m.SchemaUrl)
	return appendUnknown(b, m)
}

func (e *encoder) resource(b []byte, m *resourcepb.Resource) []byte {
	b = e.keyValues(b, 1<<3|wireBytes, m.Attributes)
	b = appendUint(b, 2<<3|wireVarint, uint64(m.DroppedAttributesCount))
	for _, er := range m.EntityRefs {
		b = openMessage(b, 3<<3|wireBytes, reserveSmall)
		start := len(b)
		b = e.entityRef(b, er)
		b = closeMessage(b, start, reserveSmall)
	}
	return appendUnknown(b, m)
}

func (e *encoder) entityRef(b []byte, m *commonpb.EntityRef) []byte {
	if m == nil {
		return b
	}
	b = e.appendString(b, 1<<3|wireBytes, m.SchemaUrl)
	b = e.appendString(b, 2<<3|wireBytes, m.Type)
	for _, s := range m.IdKeys {
		b = e.appendStringAlways(b, 3<<3|wireBytes, s)
	}
	for _, s := range m.DescriptionKeys {
		b = e.appendStringAlways(b, 4<<3|wireBytes, s)
	}
	return appendUnknown(b, m)
}

func (e *encoder) scopeProfiles(b []byte, m *profilespb.ScopeProfiles) []byte {
	if m == nil {
		return b
	}
	if m.Scope != nil {
		b = openMessage(b, 1<<3|wireBytes, reserveSmall)
		start := len(b)
		b = e.scope(b, m.Scope)
		b = closeMessage(b, start, reserveSmall)
	}
	for _, p := range m.Profiles {
		b = openMessage(b, 2<<3|wireBytes, reserveLarge)
		start := len(b)
		b = e.profile(b, p)
		b = closeMessage(b, start, reserveLarge)
	}
	b = e.appendString(b, 3<<3|wireBytes, m.SchemaUrl)
	return appendUnknown(b, m)
}

func (e *encoder) scope(b []byte, m *commonpb.InstrumentationScope) []byte {
	b = e.appendString(b, 1<<3|wireBytes, m.Name)
	b = e.appendString(b, 2<<3|wireBytes, m.Version)
	b = e.keyValues(b, 3<<3|wireBytes, m.Attributes)
	b = appendUint(b, 4<<3|wireVarint, uint64(m.DroppedAttributesCount))
	return appendUnknown(b, m)
}

// keyValues writes kvs as the repeated field tag.
func (e *encoder) keyValues(b []byte, tag byte, kvs []*commonpb.KeyValue) []byte {
	for _, kv := range kvs {
		b = openMessage(b, tag, reserveSmall)
		start := len(b)
		b = e.keyValue(b, kv)
		b = closeMessage(b, start, reserveSmall)
	}
	return b
}

func (e *encoder) keyValue(b []byte, m *commonpb.KeyValue) []byte {
	if m == nil {
		return b
	}
	b = e.appendString(b, 1<<3|wireBytes, m.Key)
	if m.Value != nil {
		b = openMessage(b, 2<<3|wireBytes, reserveSmall)
		start := len(b)
		b = e.anyValue(b, m.Value)
		b = closeMessage(b, start, reserveSmall)
	}
	b = appendInt32(b, 3<<3|wireVarint, m.KeyStrindex)
	return appendUnknown(b, m)
}

// anyValue writes the oneof. A set oneof field is written even when it holds
// its zero value; a nil message in it is written as an empty one.
func (e *encoder) anyValue(b []byte, m *commonpb.AnyValue) []byte {
	if m == nil {
		return b
	}
	switch v := m.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		if v != nil {
			b = e.appendStringAlways(b, 1<<3|wireBytes, v.StringValue)
		}
	case *commonpb.AnyValue_BoolValue:
		if v != nil {
			var x byte
			if v.BoolValue {
				x = 1
			}
			b = append(b, 2<<3|wireVarint, x)
		}
	case *commonpb.AnyValue_IntValue:
		if v != nil {
			b = append(b, 3<<3|wireVarint)
			b = appendVarint(b, uint64(v.IntValue))
		}
	case *commonpb.AnyValue_DoubleValue:
		if v != nil {
			b = append(b, 4<<3|wireFixed64)
			b = appendFixed64(b, math.Float64bits(v.DoubleValue))
		}
	case *commonpb.AnyValue_ArrayValue:
		if v != nil {
			b = openMessage(b, 5<<3|wireBytes, reserveSmall)
			start := len(b)
			if a := v.ArrayValue; a != nil {
				for _, av := range a.Values {
					b = openMessage(b, 1<<3|wireBytes, reserveSmall)
					start := len(b)
					b = e.anyValue(b, av)
					b = closeMessage(b, start, reserveSmall)
				}
				b = appendUnknown(b, a)
			}
			b = closeMessage(b, start, reserveSmall)
		}
	case *commonpb.AnyValue_KvlistValue:
		if v != nil {
			b = openMessage(b, 6<<3|wireBytes, reserveSmall)
			start := len(b)
			if l := v.KvlistValue; l != nil {
				b = e.keyValues(b, 1<<3|wireBytes, l.Values)
				b = appendUnknown(b, l)
			}
			b = closeMessage(b, start, reserveSmall)
		}
	case *commonpb.AnyValue_BytesValue:
		if v != nil {
			b = appendBytesAlways(b, 7<<3|wireBytes, v.BytesValue)
		}
	case *commonpb.AnyValue_StringValueStrindex:
		if v != nil {
			b = append(b, 8<<3|wireVarint)
			b = appendVarint(b, uint64(int64(v.StringValueStrindex)))
		}
	}
	return appendUnknown(b, m)
}

func (e *encoder) profile(b []byte, m *profilespb.Profile) []byte {
	if m == nil {
		return b
	}
	if m.SampleType != nil {
		b = appendValueType(b, 1<<3|wireBytes, m.SampleType)
	}
	for _, s := range m.Samples {
		b = openMessage(b, 2<<3|wireBytes, reserveSmall)
		start := len(b)
		b = appendSample(b, s)
		b = closeMessage(b, start, reserveSmall)
	}
	if m.TimeUnixNano != 0 {
		b = append(b, 3<<3|wireFixed64)
		b = appendFixed64(b, m.TimeUnixNano)
	}
	b = appendUint(b, 4<<3|wireVarint, m.DurationNano)
	if m.PeriodType != nil {
		b = appendValueType(b, 5<<3|wireBytes, m.PeriodType)
	}
	b = appendUint(b, 6<<3|wireVarint, uint64(m.Period))
	b = appendBytes(b, 7<<3|wireBytes, m.ProfileId)
	b = appendUint(b, 8<<3|wireVarint, uint64(m.DroppedAttributesCount))
	b = e.appendString(b, 9<<3|wireBytes, m.OriginalPayloadFormat)
	b = appendBytes(b, 10<<3|wireBytes, m.OriginalPayload)
	b = appendPackedInt32(b, 11<<3|wireBytes, m.AttributeIndices)
	return appendUnknown(b, m)
}

func appendValueType(b []byte, tag byte, m *profilespb.ValueType) []byte {
	b = openMessage(b, tag, reserveSmall)
	start := len(b)
	b = appendInt32(b, 1<<3|wireVarint, m.TypeStrindex)
	b = appendInt32(b, 2<<3|wireVarint, m.UnitStrindex)
	b = appendUnknown(b, m)
	return closeMessage(b, start, reserveSmall)
}

func appendSample(b []byte, m *profilespb.Sample) []byte {
	if m == nil {
		return b
	}
	b = appendInt32(b, 1<<3|wireVarint, m.StackIndex)
	b = appendPackedInt32(b, 2<<3|wireBytes, m.AttributeIndices)
	b = appendInt32(b, 3<<3|wireVarint, m.LinkIndex)
	if len(m.Values) > 0 {
		// Packed, the length reserved as for a submessage.
		b = append(b, 4<<3|wireBytes, 0)
		start := len(b)
		for _, v := range m.Values {
			b = appendVarint(b, uint64(v))
		}
		b = closeMessage(b, start, reserveSmall)
	}
	if len(m.TimestampsUnixNano) > 0 {
		b = append(b, 5<<3|wireBytes)
		b = appendVarint(b, uint64(8*len(m.TimestampsUnixNano)))
		for _, v := range m.TimestampsUnixNano {
			b = appendFixed64(b, v)
		}
	}
	return appendUnknown(b, m)
}

func (e *encoder) dictionary(b []byte, m *profilespb.ProfilesDictionary) []byte {
	for _, x := range m.MappingTable {
		b = appendMapping(b, x)
	}
	for _, x := range m.LocationTable {
		b = appendLocation(b, x)
	}
	for _, x := range m.FunctionTable {
		b = appendFunction(b, x)
	}
	for _, x := range m.LinkTable {
		b = openMessage(b, 4<<3|wireBytes, reserveSmall)
		start := len(b)
		if x != nil {
			b = appendBytes(b, 1<<3|wireBytes, x.TraceId)
			b = appendBytes(b, 2<<3|wireBytes, x.SpanId)
			b = appendUnknown(b, x)
		}
		b = closeMessage(b, start, reserveSmall)
	}
	for _, s := range m.StringTable {
		b = e.appendStringAlways(b, 5<<3|wireBytes, s)
	}
	for _, x := range m.AttributeTable {
		b = e.appendAttribute(b, x)
	}
	for _, x := range m.StackTable {
		b = openMessage(b, 7<<3|wireBytes, reserveSmall)
		start := len(b)
		if x != nil {
			b = appendPackedInt32(b, 1<<3|wireBytes, x.LocationIndices)
			b = appendUnknown(b, x)
		}
		b = closeMessage(b, start, reserveSmall)
	}
	return appendUnknown(b, m)
}

// appendMapping appends x as the dictionary's field 1.
func appendMapping(b []byte, x *profilespb.Mapping) []byte {
	b = openMessage(b, 1<<3|wireBytes, reserveSmall)
	start := len(b)
	if x != nil {
		b = appendUint(b, 1<<3|wireVarint, x.MemoryStart)
		b = appendUint(b, 2<<3|wireVarint, x.MemoryLimit)
		b = appendUint(b, 3<<3|wireVarint, x.FileOffset)
		b = appendInt32(b, 4<<3|wireVarint, x.FilenameStrindex)
		b = appendPackedInt32(b, 5<<3|wireBytes, x.AttributeIndices)
		b = appendUnknown(b, x)
	}
	return closeMessage(b, start, reserveSmall)
}

// appendLocation appends x, its lines included, as the dictionary's
// field 2.
func appendLocation(b []byte, x *profilespb.Location) []byte {
	b = openMessage(b, 2<<3|wireBytes, reserveSmall)
	start := len(b)
	if x != nil {
		b = appendInt32(b, 1<<3|wireVarint, x.MappingIndex)
		b = appendUint(b, 2<<3|wireVarint, x.Address)
		for _, l := range x.Lines {
			b = openMessage(b, 3<<3|wireBytes, reserveSmall)
			start := len(b)
			if l != nil {
				b = appendInt32(b, 1<<3|wireVarint, l.FunctionIndex)
				b = appendUint(b, 2<<3|wireVarint, uint64(l.Line))
				b = appendUint(b, 3<<3|wireVarint, uint64(l.Column))
				b = appendUnknown(b, l)
			}
			b = closeMessage(b, start, reserveSmall)
		}
		b = appendPackedInt32(b, 4<<3|wireBytes, x.AttributeIndices)
		b = appendUnknown(b, x)
	}
	return closeMessage(b, start, reserveSmall)
}

// appendFunction appends x as the dictionary's field 3.
func appendFunction(b []byte, x *profilespb.Function) []byte {
	b = openMessage(b, 3<<3|wireBytes, reserveSmall)
	start := len(b)
	if x != nil {
		b = appendInt32(b, 1<<3|wireVarint, x.NameStrindex)
		b = appendInt32(b, 2<<3|wireVarint, x.SystemNameStrindex)
		b = appendInt32(b, 3<<3|wireVarint, x.FilenameStrindex)
		b = appendUint(b, 4<<3|wireVarint, uint64(x.StartLine))
		b = appendUnknown(b, x)
	}
	return closeMessage(b, start, reserveSmall)
}

// appendAttribute appends x as the dictionary's field 6.
func (e *encoder) appendAttribute(b []byte, x *profilespb.KeyValueAndUnit) []byte {
	b = openMessage(b, 6<<3|wireBytes, reserveSmall)
	start := len(b)
	if x != nil {
		b = appendInt32(b, 1<<3|wireVarint, x.KeyStrindex)
		if x.Value != nil {
			b = openMessage(b, 2<<3|wireBytes, reserveSmall)
			start := len(b)
			b = e.anyValue(b, x.Value)
			b = closeMessage(b, start, reserveSmall)
		}
		b = appendInt32(b, 3<<3|wireVarint, x.UnitStrindex)
		b = appendUnknown(b, x)
	}
	return closeMessage(b, start, reserveSmall)
}

// openMessage appends the tag of a submessage and reserve bytes for its
// length; its body starts at the new len(b).
func openMessage(b []byte, tag byte, reserve int) []byte {
	if reserve == reserveSmall {
		return append(b, tag, 0)
	}
	return append(b, tag, 0, 0, 0)
}

// closeMessage writes the length of the body b[start:] into the reserve
// bytes before it.
func closeMessage(b []byte, start, reserve int) []byte {
	if n := len(b) - start; reserve == reserveSmall && n < 0x80 {
		b[start-1] = byte(n)
		return b
	}
	return closeMessageSlow(b, start, reserve)
}

// closeMessageSlow is closeMessage when the length does not take exactly
// the reserved bytes: protobuf varints are minimal, so the body moves.
func closeMessageSlow(b []byte, start, reserve int) []byte {
	n := len(b) - start
	need := sizeVarint(uint64(n))
	if d := need - reserve; d > 0 {
		var pad [binaryMaxVarintLen]byte
		b = append(b, pad[:d]...)
		copy(b[start+d:], b[start:start+n])
		start += d
	} else if d < 0 {
		copy(b[start+d:], b[start:])
		start += d
		b = b[:start+n]
	}
	v := uint64(n)
	for i := start - need; i < start-1; i++ {
		b[i] = byte(v) | 0x80
		v >>= 7
	}
	b[start-1] = byte(v)
	return b
}

const binaryMaxVarintLen = 10

// appendUnknown appends the fields m was decoded with but its type does not
// know, which protobuf-go writes after the known ones. The Builder never
// makes any, but a request decoded from a newer schema has them. Looking
// for them costs about a fifth of AppendRequest's time, the price of
// reaching the unexported field through the protoreflect API.
func appendUnknown(b []byte, m protoreflect.ProtoMessage) []byte {
	return append(b, m.ProtoReflect().GetUnknown()...)
}

func sizeVarint(v uint64) int {
	return int(9*uint32(bits.Len64(v))+64) / 64
}

func appendVarint(b []byte, v uint64) []byte {
	switch {
	case v < 1<<7:
		return append(b, byte(v))
	case v < 1<<14:
		return append(b, byte(v)|0x80, byte(v>>7))
	}
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendFixed64(b []byte, v uint64) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24),
		byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56))
}

// appendUint writes a proto3 varint field, omitted when zero. int64 fields
// pass their two's complement.
func appendUint(b []byte, tag byte, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = append(b, tag)
	return appendVarint(b, v)
}

// appendInt32 writes a proto3 int32 field, omitted when zero. Negative
// values are sign-extended to ten bytes, as the wire format requires.
func appendInt32(b []byte, tag byte, v int32) []byte {
	if v == 0 {
		return b
	}
	b = append(b, tag)
	return appendVarint(b, uint64(int64(v)))
}

// appendPackedInt32 writes a packed repeated int32 field, omitted when empty.
// Its length is reserved like a submessage's, so that the values are read
// once, and the buffer is grown once for the longest encoding so that each
// byte is stored without append's capacity check. Stacks make this the
// encoder's inner loop: the values are dictionary indices, almost all of one
// or two bytes, which are written without a data-dependent branch.
func appendPackedInt32(b []byte, tag byte, vs []int32) []byte {
	if len(vs) == 0 {
		return b
	}
	b = append(b, tag, 0)
	start := len(b)
	b = slices.Grow(b, binaryMaxVarintLen*len(vs))
	dst := b[start : start+binaryMaxVarintLen*len(vs)]
	i := 0
	for _, v := range vs {
		if x := uint32(v); x < 1<<14 {
			more := (x + (1<<14 - 1<<7)) >> 14 // 1 when x takes two bytes
			dst[i] = byte(x) | byte(more<<7)
			dst[i+1] = byte(x >> 7)
			i += 1 + int(more)
			continue
		}
		// Negative values are sign-extended to ten bytes.
		x := uint64(int64(v))
		for x >= 0x80 {
			dst[i] = byte(x) | 0x80
			x >>= 7
			i++
		}
		dst[i] = byte(x)
		i++
	}
	return closeMessage(b[:start+i], start, reserveSmall)
}

// appendBytes writes a proto3 bytes field, omitted when empty.
func appendBytes(b []byte, tag byte, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	return appendBytesAlways(b, tag, v)
}

func appendBytesAlways(b []byte, tag byte, v []byte) []byte {
	b = append(b, tag)
	b = appendVarint(b, uint64(len(v)))
	return append(b, v...)
}

// appendString writes a proto3 string field, omitted when empty.
func (e *encoder) appendString(b []byte, tag byte, s string) []byte {
	if s == "" {
		return b
	}
	return e.appendStringAlways(b, tag, s)
}

// appendStringAlways writes a string that is written even when empty: an
// element of a repeated field or a oneof case.
func (e *encoder) appendStringAlways(b []byte, tag byte, s string) []byte {
	if !utf8.ValidString(s) {
		e.invalidUTF8 = true
	}
	b = append(b, tag)
	b = appendVarint(b, uint64(len(s)))
	return append(b, s...)
}
