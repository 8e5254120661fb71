package otlp_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// checkEncoding asserts that AppendRequest and protobuf-go append the same
// bytes to prefix, or both fail, and that the encoding decodes back to req.
// It returns the encoding, nil when both failed.
func checkEncoding(t testing.TB, prefix []byte, req *collectorpb.ExportProfilesServiceRequest) []byte {
	t.Helper()
	want, wantErr := proto.MarshalOptions{}.MarshalAppend(bytes.Clone(prefix), req)
	in := bytes.Clone(prefix)
	got, err := otlp.AppendRequest(in, req)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("AppendRequest error = %v, proto.MarshalAppend error = %v", err, wantErr)
	}
	if err != nil {
		if !errors.Is(err, proto.Error) || err.Error() != wantErr.Error() {
			t.Errorf("AppendRequest error = %q, want %q wrapping proto.Error", err, wantErr)
		}
		if !bytes.Equal(got, prefix) {
			t.Errorf("AppendRequest failed but extended b from %d to %d bytes", len(prefix), len(got))
		}
		return nil
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendRequest differs from proto.MarshalAppend at byte %d of %d (want %d bytes)",
			firstDiff(got, want), len(got), len(want))
	}
	return got[len(prefix):]
}

// checkRoundTrip asserts that data decodes to a message equal to req.
func checkRoundTrip(t testing.TB, data []byte, req *collectorpb.ExportProfilesServiceRequest) {
	t.Helper()
	back := new(collectorpb.ExportProfilesServiceRequest)
	if err := proto.Unmarshal(data, back); err != nil {
		t.Fatalf("proto.Unmarshal of AppendRequest's encoding: %v", err)
	}
	if !proto.Equal(back, req) {
		t.Fatal("proto.Unmarshal of AppendRequest's encoding differs from the request")
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// gen fills messages with random values through their descriptors, so that
// a field added to the schema is filled, and must be encoded, without
// anyone touching the test.
type gen struct {
	r *rand.Rand
	// invalidUTF8 is the chance in 1000 that a string is not valid UTF-8.
	invalidUTF8 int
	// set records the fields given a non-zero value, by full name.
	set map[protoreflect.FullName]bool
}

func (g *gen) chance(n int) bool { return g.r.IntN(n) == 0 }

// message fills m. Below depth 0 messages are left empty.
func (g *gen) message(m protoreflect.Message, depth int) {
	if depth < 0 {
		return
	}
	md := m.Descriptor()
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.ContainingOneof() != nil {
			continue
		}
		switch {
		case fd.IsMap():
			panic(fmt.Sprintf("%s: the generator does not handle maps", fd.FullName()))
		case fd.IsList():
			n := g.listLen(fd, depth)
			if n == 0 {
				continue
			}
			l := m.Mutable(fd).List()
			for range n {
				if fd.Message() != nil {
					g.message(l.AppendMutable().Message(), depth-1)
				} else {
					l.Append(g.scalar(fd))
				}
			}
			g.set[fd.FullName()] = true
		case fd.Message() != nil:
			switch g.r.IntN(4) {
			case 0: // nil
			case 1: // present but empty
				m.Set(fd, m.NewField(fd))
				g.set[fd.FullName()] = true
			default:
				v := m.NewField(fd)
				g.message(v.Message(), depth-1)
				m.Set(fd, v)
				g.set[fd.FullName()] = true
			}
		default:
			v := g.scalar(fd)
			m.Set(fd, v)
			if m.Has(fd) {
				g.set[fd.FullName()] = true
			}
		}
	}
	oneofs := md.Oneofs()
	for i := range oneofs.Len() {
		od := oneofs.Get(i)
		k := g.r.IntN(od.Fields().Len() + 1)
		if k == od.Fields().Len() {
			continue // unset
		}
		fd := od.Fields().Get(k)
		if fd.Message() != nil {
			v := m.NewField(fd)
			if !g.chance(4) {
				g.message(v.Message(), depth-1)
			}
			m.Set(fd, v)
		} else {
			// Zero values included: a set oneof is encoded whatever it holds.
			m.Set(fd, g.scalar(fd))
		}
		g.set[fd.FullName()] = true
	}
	if g.chance(10) {
		m.SetUnknown(g.unknown())
	}
}

// listLen is mostly short, sometimes long enough for a packed field or a
// message to need a length of two bytes.
func (g *gen) listLen(fd protoreflect.FieldDescriptor, depth int) int {
	switch {
	case g.chance(3):
		return 0
	case fd.Message() == nil && g.chance(8):
		return 100 + g.r.IntN(300)
	case fd.Message() != nil && depth > 3 && g.chance(40):
		return 20 + g.r.IntN(30)
	}
	return 1 + g.r.IntN(3)
}

func (g *gen) scalar(fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(g.chance(2))
	case protoreflect.Int32Kind:
		return protoreflect.ValueOfInt32(pick(g, []int32{0, 1, -1, 127, 128, 16383, 16384, math.MaxInt32, math.MinInt32}, g.r.Int32()))
	case protoreflect.Int64Kind:
		return protoreflect.ValueOfInt64(pick(g, []int64{0, 1, -1, 1 << 35, math.MaxInt64, math.MinInt64}, g.r.Int64()-g.r.Int64()))
	case protoreflect.Uint32Kind:
		return protoreflect.ValueOfUint32(pick(g, []uint32{0, 1, 127, 128, math.MaxUint32}, g.r.Uint32()))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(pick(g, []uint64{0, 1, 1 << 63, math.MaxUint64}, g.r.Uint64()>>g.r.IntN(64)))
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(pick(g, []float64{0, math.Copysign(0, -1), 1.5, math.NaN(), math.Inf(-1)}, g.r.NormFloat64()*1e6))
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(g.str())
	case protoreflect.BytesKind:
		switch {
		case g.chance(4):
			return protoreflect.ValueOfBytes(nil)
		case g.chance(4):
			return protoreflect.ValueOfBytes([]byte{})
		}
		b := make([]byte, g.length())
		for i := range b {
			b[i] = byte(g.r.Uint32())
		}
		return protoreflect.ValueOfBytes(b)
	}
	panic(fmt.Sprintf("%s: the generator does not handle kind %v", fd.FullName(), fd.Kind()))
}

// pick returns one of the edge values half of the time, else random.
func pick[T any](g *gen, edges []T, random T) T {
	if g.chance(2) {
		return edges[g.r.IntN(len(edges))]
	}
	return random
}

// length is mostly small, sometimes past the one and two byte varints.
func (g *gen) length() int {
	switch {
	case g.chance(150):
		return 16384 + g.r.IntN(2000)
	case g.chance(8):
		return 128 + g.r.IntN(300)
	}
	return 1 + g.r.IntN(20)
}

func (g *gen) str() string {
	if g.r.IntN(1000) < g.invalidUTF8 {
		return "bad\xff"
	}
	switch g.r.IntN(4) {
	case 0:
		return ""
	case 1:
		return "héllo, 世界"
	}
	return strings.Repeat("x", g.length())
}

// unknown returns valid fields of numbers the schema does not use.
func (g *gen) unknown() []byte {
	var b []byte
	for range 1 + g.r.IntN(3) {
		num := protowire.Number(1000 + g.r.IntN(1000))
		if g.chance(2) {
			b = protowire.AppendTag(b, num, protowire.VarintType)
			b = protowire.AppendVarint(b, g.r.Uint64())
		} else {
			b = protowire.AppendTag(b, num, protowire.BytesType)
			b = protowire.AppendBytes(b, []byte("unknown"))
		}
	}
	return b
}

// reachableFields lists the fields of md and of every message it reaches.
func reachableFields(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool, out *[]protoreflect.FullName) {
	if seen[md.FullName()] {
		return
	}
	seen[md.FullName()] = true
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		*out = append(*out, fd.FullName())
		if fd.Message() != nil {
			reachableFields(fd.Message(), seen, out)
		}
	}
}

func TestAppendRequestRandom(t *testing.T) {
	const seeds = 300
	g := &gen{set: make(map[protoreflect.FullName]bool)}
	failed := 0
	for seed := range uint64(seeds) {
		g.r = rand.New(rand.NewPCG(seed, 42))
		g.invalidUTF8 = 0
		if seed%10 == 9 {
			g.invalidUTF8 = 5
		}
		req := new(collectorpb.ExportProfilesServiceRequest)
		g.message(req.ProtoReflect(), 7)
		var prefix []byte
		if seed%2 == 1 {
			prefix = []byte("prefix")
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			if data := checkEncoding(t, prefix, req); data != nil {
				checkRoundTrip(t, data, req)
			} else {
				failed++
			}
		})
	}
	if failed == 0 || failed == seeds {
		t.Errorf("%d of %d requests had invalid UTF-8; the failure path is not compared", failed, seeds)
	}
	// The seeds must have set every field at least once, or a field the
	// encoder forgets could go unnoticed.
	var all []protoreflect.FullName
	reachableFields(new(collectorpb.ExportProfilesServiceRequest).ProtoReflect().Descriptor(), map[protoreflect.FullName]bool{}, &all)
	for _, f := range all {
		if !g.set[f] {
			t.Errorf("no random request set %s", f)
		}
	}
}

// inputsFromFile decodes the runtime profiles kept by the benchmark module.
func inputsFromFile(t *testing.T, name string) []otlp.Input {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "benchmark", "testdata", name+".pb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pprofdecode.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return []otlp.Input{{Name: name, Profile: p}}
}

func inputsFromRuntime(t *testing.T) []otlp.Input {
	var in []otlp.Input
	for _, name := range []string{"heap", "goroutine", "mutex", "block"} {
		var buf bytes.Buffer
		if err := pprof.Lookup(name).WriteTo(&buf, 0); err != nil {
			t.Fatal(err)
		}
		p, err := pprofdecode.Parse(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, otlp.Input{Name: name, Profile: p})
	}
	return in
}

func TestAppendRequestBuilder(t *testing.T) {
	tests := []struct {
		name   string
		inputs func(*testing.T) []otlp.Input
	}{
		{"fixture", func(*testing.T) []otlp.Input { return otlptest.FixtureInputs() }},
		{"synthetic heap", func(*testing.T) []otlp.Input { return []otlp.Input{{Name: "heap", Profile: syntheticHeap(2000)}} }},
		{"runtime", inputsFromRuntime},
		{"testdata heap", func(t *testing.T) []otlp.Input { return inputsFromFile(t, "heap") }},
		{"testdata mutex", func(t *testing.T) []otlp.Input { return inputsFromFile(t, "mutex") }},
		{"testdata block", func(t *testing.T) []otlp.Input { return inputsFromFile(t, "block") }},
		{"nil profile", func(*testing.T) []otlp.Input { return []otlp.Input{{Name: "cpu"}} }},
		{"no inputs", func(*testing.T) []otlp.Input { return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newTestBuilder().Build(windowStart, windowEnd, tt.inputs(t))
			data := checkEncoding(t, nil, req)
			if data == nil {
				t.Fatal("the Builder's request does not encode")
			}
			checkRoundTrip(t, data, req)
			checkEncoding(t, []byte("\x0a\x00prefix"), req)
		})
	}
}

// TestAppendRequestEdges covers what a descriptor-driven generator cannot
// build: nil elements and nil oneof wrappers, and lengths on both sides of
// every varint size, including the 3 bytes reserved for the containers.
func TestAppendRequestEdges(t *testing.T) {
	str := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	withPayload := func(n int) *collectorpb.ExportProfilesServiceRequest {
		return &collectorpb.ExportProfilesServiceRequest{ResourceProfiles: []*profilespb.ResourceProfiles{{
			ScopeProfiles: []*profilespb.ScopeProfiles{{Profiles: []*profilespb.Profile{{OriginalPayload: make([]byte, n)}}}},
		}}}
	}
	tests := []struct {
		name string
		req  *collectorpb.ExportProfilesServiceRequest
	}{
		{"nil request", nil},
		{"empty request", &collectorpb.ExportProfilesServiceRequest{}},
		{"empty messages", &collectorpb.ExportProfilesServiceRequest{
			ResourceProfiles: []*profilespb.ResourceProfiles{{
				Resource: &resourcepb.Resource{},
				ScopeProfiles: []*profilespb.ScopeProfiles{{
					Scope:    &commonpb.InstrumentationScope{},
					Profiles: []*profilespb.Profile{{SampleType: &profilespb.ValueType{}, PeriodType: &profilespb.ValueType{}}},
				}},
			}},
			Dictionary: &profilespb.ProfilesDictionary{},
		}},
		{"nil elements", &collectorpb.ExportProfilesServiceRequest{
			ResourceProfiles: []*profilespb.ResourceProfiles{nil, {
				Resource: &resourcepb.Resource{
					Attributes: []*commonpb.KeyValue{nil, {Key: "k"}},
					EntityRefs: []*commonpb.EntityRef{nil},
				},
				ScopeProfiles: []*profilespb.ScopeProfiles{nil, {
					Scope:    &commonpb.InstrumentationScope{Attributes: []*commonpb.KeyValue{nil}},
					Profiles: []*profilespb.Profile{nil, {Samples: []*profilespb.Sample{nil, {}}}},
				}},
			}},
			Dictionary: &profilespb.ProfilesDictionary{
				MappingTable:   []*profilespb.Mapping{nil},
				LocationTable:  []*profilespb.Location{nil, {Lines: []*profilespb.Line{nil}}},
				FunctionTable:  []*profilespb.Function{nil},
				LinkTable:      []*profilespb.Link{nil},
				StringTable:    []string{"", ""},
				AttributeTable: []*profilespb.KeyValueAndUnit{nil, {Value: &commonpb.AnyValue{}}},
				StackTable:     []*profilespb.Stack{nil},
			},
		}},
		{"nil oneofs", &collectorpb.ExportProfilesServiceRequest{
			Dictionary: &profilespb.ProfilesDictionary{AttributeTable: []*profilespb.KeyValueAndUnit{
				{Value: &commonpb.AnyValue{Value: (*commonpb.AnyValue_StringValue)(nil)}},
				{Value: &commonpb.AnyValue{Value: (*commonpb.AnyValue_BoolValue)(nil)}},
				{Value: &commonpb.AnyValue{Value: (*commonpb.AnyValue_IntValue)(nil)}},
				{Value: &commonpb.AnyValue{Value: (*commonpb.AnyValue_DoubleValue)(nil)}},
				{Value: &commonpb.AnyValue{Value: (*commonpb.AnyValue_ArrayValue)(nil)}},
				{Value: &commonpb.AnyValue{Value: (*commonpb.AnyValue_KvlistValue)(nil)}},
				{Value: &commonpb.AnyValue{Value: (*commonpb.AnyValue_BytesValue)(nil)}},
				{Value: &commonpb.AnyValue{Value: (*commonpb.AnyValue_StringValueStrindex)(nil)}},
				{Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{}}},
				{Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{}}},
				{Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{nil, {}}}}}},
				{Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{nil, {}}}}}},
				{Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{}}},
				{Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: math.Copysign(0, -1)}}},
			}},
		}},
		{"empty bytes", &collectorpb.ExportProfilesServiceRequest{ResourceProfiles: []*profilespb.ResourceProfiles{{
			ScopeProfiles: []*profilespb.ScopeProfiles{{Profiles: []*profilespb.Profile{{ProfileId: []byte{}, OriginalPayload: []byte{}}}}},
		}}}},
		{"negative int32", &collectorpb.ExportProfilesServiceRequest{Dictionary: &profilespb.ProfilesDictionary{
			StackTable:    []*profilespb.Stack{{LocationIndices: []int32{-1, math.MinInt32, 0, 1}}},
			LocationTable: []*profilespb.Location{{MappingIndex: -5, Lines: []*profilespb.Line{{FunctionIndex: -1, Line: -1, Column: math.MinInt64}}}},
		}}},
		{"resource larger than 2 MiB", &collectorpb.ExportProfilesServiceRequest{ResourceProfiles: []*profilespb.ResourceProfiles{{
			Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "big", Value: str(strings.Repeat("r", 3<<20))}}},
		}}}},
		{"dictionary larger than 2 MiB", &collectorpb.ExportProfilesServiceRequest{Dictionary: &profilespb.ProfilesDictionary{
			StringTable: []string{"", strings.Repeat("s", 2<<20)},
		}}},
		{"invalid UTF-8 in the string table", &collectorpb.ExportProfilesServiceRequest{Dictionary: &profilespb.ProfilesDictionary{
			StringTable: []string{"", "ok", "\xc3\x28"},
		}}},
		{"invalid UTF-8 in a resource attribute", &collectorpb.ExportProfilesServiceRequest{ResourceProfiles: []*profilespb.ResourceProfiles{{
			Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "k", Value: str("\xff")}}},
		}}}},
		{"invalid UTF-8 in an entity ref", &collectorpb.ExportProfilesServiceRequest{ResourceProfiles: []*profilespb.ResourceProfiles{{
			Resource: &resourcepb.Resource{EntityRefs: []*commonpb.EntityRef{{IdKeys: []string{"\xff"}}}},
		}}}},
	}
	// Bodies of ScopeProfiles, Profile and ResourceProfiles on both sides of
	// 128, 16384 and 2097152 bytes.
	for _, limit := range []int{1 << 7, 1 << 14, 1 << 21} {
		for n := limit - 12; n <= limit+2; n++ {
			tests = append(tests, struct {
				name string
				req  *collectorpb.ExportProfilesServiceRequest
			}{fmt.Sprintf("payload of %d bytes", n), withPayload(n)})
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, prefix := range [][]byte{nil, []byte("prefix")} {
				checkEncoding(t, prefix, tt.req)
			}
		})
	}
}

func TestAppendRequestUnknownFields(t *testing.T) {
	req := newTestBuilder().Build(windowStart, windowEnd, otlptest.FixtureInputs())
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 999, protowire.VarintType), 7)
	// One message of every kind the Builder makes gets unknown fields.
	d := req.Dictionary
	rp := req.ResourceProfiles[0]
	sp := rp.ScopeProfiles[0]
	p := sp.Profiles[0]
	for _, m := range []proto.Message{
		req, rp, rp.Resource, rp.Resource.Attributes[0], rp.Resource.Attributes[0].Value, sp, sp.Scope,
		p, p.SampleType, p.Samples[0], d, d.MappingTable[1], d.LocationTable[1], d.LocationTable[1].Lines[0],
		d.FunctionTable[1], d.LinkTable[1], d.AttributeTable[1], d.StackTable[1],
	} {
		m.ProtoReflect().SetUnknown(unknown)
	}
	data := checkEncoding(t, nil, req)
	checkRoundTrip(t, data, req)
	if n := bytes.Count(data, unknown); n < 18 {
		t.Errorf("the encoding holds %d copies of the unknown field, want at least 18", n)
	}
}

func TestAppendRequestNoAllocs(t *testing.T) {
	req := newTestBuilder().Build(windowStart, windowEnd, otlptest.FixtureInputs())
	buf := make([]byte, 0, 1<<16)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if buf, err = otlp.AppendRequest(buf[:0], req); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("AppendRequest into a large enough buffer allocated %v times, want 0", allocs)
	}
}

func FuzzAppendRequest(f *testing.F) {
	fixture, err := proto.Marshal(newTestBuilder().Build(windowStart, windowEnd, otlptest.FixtureInputs()))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(fixture)
	// Small random requests only: the engine minimises every input that
	// finds new code, which takes minutes for one of a megabyte.
	g := &gen{set: make(map[protoreflect.FullName]bool)}
	for seed, added := uint64(0), 0; added < 8; seed++ {
		g.r = rand.New(rand.NewPCG(seed, 7))
		req := new(collectorpb.ExportProfilesServiceRequest)
		g.message(req.ProtoReflect(), 4)
		data, err := proto.Marshal(req)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) <= 2000 {
			f.Add(data)
			added++
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req := new(collectorpb.ExportProfilesServiceRequest)
		if proto.Unmarshal(data, req) != nil {
			return
		}
		checkEncoding(t, []byte("p"), req)
	})
}

// benchRequest is a heap window of 7,000 stacks of 20 to 60 frames: four
// Profiles of 7,000 samples each, 850 kB encoded.
func benchRequest(b *testing.B) *collectorpb.ExportProfilesServiceRequest {
	b.Helper()
	return newTestBuilder().Build(windowStart, windowEnd, []otlp.Input{{Name: "heap", Profile: syntheticHeap(7000)}})
}

// The benchmarks encode into a buffer kept from one window to the next, as
// the exporters and the benchmark module do; the first encoding sizes it.

func BenchmarkAppendRequest(b *testing.B) {
	req := benchRequest(b)
	buf, _ := otlp.AppendRequest(nil, req)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = otlp.AppendRequest(buf[:0], req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(buf)), "bytes/request")
}

func BenchmarkProtoMarshal(b *testing.B) {
	req := benchRequest(b)
	buf, _ := proto.Marshal(req)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = (proto.MarshalOptions{}).MarshalAppend(buf[:0], req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(buf)), "bytes/request")
}
