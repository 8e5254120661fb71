package pprofconv_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/pprofotel/profiler/pprofconv"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/protobuf/proto"
)

// scopeOf returns the scope of runtime profile name in r.
func scopeOf(t testing.TB, r pprofconv.Request, name string) *profilespb.ScopeProfiles {
	t.Helper()
	for _, sp := range r.Request.ResourceProfiles[0].ScopeProfiles {
		for _, kv := range sp.Scope.Attributes {
			if kv.Key == "pprofotel.profile.name" && kv.Value.GetStringValue() == name {
				return sp
			}
		}
	}
	t.Fatalf("no %s scope", name)
	return nil
}

// cpuOnly returns window w of the fixture holding its CPU profile only.
func cpuOnly(t testing.TB, w int) pprofconv.Request {
	r := fixtureWindow("checkout", "a", w)
	r.Request.ResourceProfiles[0].ScopeProfiles = []*profilespb.ScopeProfiles{scopeOf(t, r, "cpu")}
	return r
}

// deepStackAttack is the first request of issue 25's break 3: one stack of
// 20,000 locations cited by 4,000 samples, each with a span link of its
// own, about 100 KB of OTLP for 80 million pprof locations.
func deepStackAttack(t testing.TB) pprofconv.Request {
	r := cpuOnly(t, 0)
	d := r.Request.Dictionary
	stack := &profilespb.Stack{LocationIndices: make([]int32, 20000)}
	for i := range stack.LocationIndices {
		stack.LocationIndices[i] = 1
	}
	d.StackTable = append(d.StackTable, stack)
	prof := scopeOf(t, r, "cpu").Profiles[0]
	prof.Samples = nil
	for i := range 4000 {
		d.LinkTable = append(d.LinkTable, &profilespb.Link{
			TraceId: []byte(fmt.Sprintf("trace-%010d", i)), SpanId: []byte(fmt.Sprintf("sp%06d", i))})
		prof.Samples = append(prof.Samples, &profilespb.Sample{
			StackIndex: int32(len(d.StackTable) - 1), LinkIndex: int32(len(d.LinkTable) - 1), Values: []int64{1}})
	}
	r.Source = "deep-stack.pb"
	return r
}

// wideAttributeAttack is the second request of issue 25's break 3: one
// array attribute of 10,000 strings cited by 8,000 samples, about 60 KB of
// OTLP for 80 million pprof labels.
func wideAttributeAttack(t testing.TB) pprofconv.Request {
	r := cpuOnly(t, 0)
	d := r.Request.Dictionary
	values := make([]*commonpb.AnyValue, 10000)
	for i := range values {
		values[i] = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "v"}}
	}
	d.StringTable = append(d.StringTable, "wide")
	d.AttributeTable = append(d.AttributeTable, &profilespb.KeyValueAndUnit{
		KeyStrindex: int32(len(d.StringTable) - 1),
		Value:       &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: values}}},
	})
	attr := int32(len(d.AttributeTable) - 1)
	prof := scopeOf(t, r, "cpu").Profiles[0]
	prof.Samples = nil
	// Samples differ by their stack and their value count so that none
	// merge: 8,000 pprof samples.
	for i := range 8000 {
		d.StackTable = append(d.StackTable, &profilespb.Stack{LocationIndices: []int32{1, int32(1 + i%2)}})
		prof.Samples = append(prof.Samples, &profilespb.Sample{
			StackIndex: int32(len(d.StackTable) - 1), AttributeIndices: []int32{attr}, Values: []int64{1}})
	}
	r.Source = "wide-attribute.pb"
	return r
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestConvertRefusesExpansion converts the two requests of issue 25's
// break 3 (2.7 GB and out of memory before) and checks that Convert
// refuses each, naming it and the limit, having allocated no more than
// the stated 40 bytes per unit of its budget.
func TestConvertRefusesExpansion(t *testing.T) {
	for _, r := range []pprofconv.Request{deepStackAttack(t), wideAttributeAttack(t)} {
		t.Run(r.Source, func(t *testing.T) {
			size := proto.Size(r.Request)
			budget := uint64(pprofconv.ExpansionBase + pprofconv.ExpansionPerByte*size)
			var err error
			n := allocated(func() { _, _, err = pprofconv.Convert([]pprofconv.Request{r}, pprofconv.Filter{}) })
			want := fmt.Sprintf("%s: cpu profile: the pprof form of the input would pass %d units (a location or a sample value 1, a label value 8; 8 per byte of its %d bytes of OTLP protobuf, plus 1048576)", r.Source, budget, size)
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("Convert error %v, want one starting %q", err, want)
			}
			if limit := 40 * budget; n > limit {
				t.Errorf("Convert of %d bytes allocated %d bytes before refusing it, want at most %d (40 per unit of budget)", size, n, limit)
			}
			t.Logf("%d bytes of OTLP: refused after allocating %.1f MB", size, float64(n)/1e6)
		})
	}
}

// TestConvertMemoryBound converts a request whose pprof form comes close
// to the expansion budget, deep stacks cited by samples with links of
// their own, and checks that the conversion and the merge allocate no more
// than the 40 bytes per unit of budget that Convert's documentation
// states.
func TestConvertMemoryBound(t *testing.T) {
	r := deepStackAttack(t)
	r.Source = "deep-but-within.pb"
	d := r.Request.Dictionary
	stack := d.StackTable[len(d.StackTable)-1]
	size := proto.Size(r.Request)
	budget := pprofconv.ExpansionBase + pprofconv.ExpansionPerByte*size
	// 4,000 samples of 1 + 1 value + 2 link labels of 8 + depth units each, and
	// each location index one byte of the input: the deepest stack within
	// the budget, less 5 %.
	depth := (budget - pprofconv.ExpansionPerByte*len(stack.LocationIndices) - 4000*18) / (4000 - pprofconv.ExpansionPerByte) * 95 / 100
	stack.LocationIndices = stack.LocationIndices[:depth]
	size = proto.Size(r.Request)
	var err error
	n := allocated(func() { _, _, err = pprofconv.Convert([]pprofconv.Request{r, cpuOnly(t, 1)}, pprofconv.Filter{}) })
	if err != nil {
		t.Fatal(err)
	}
	budget = pprofconv.ExpansionBase + pprofconv.ExpansionPerByte*size
	if limit := uint64(40 * budget); n > limit {
		t.Errorf("Convert of %d bytes (a stack of %d locations cited by 4,000 samples) allocated %d bytes, want at most %d (40 per unit of budget)", size, depth, n, limit)
	}
	t.Logf("%d bytes of OTLP, stack of %d: %.1f MB allocated, %.1f bytes per unit of budget", size, depth, float64(n)/1e6, float64(n)/float64(budget))
}
