package otlp_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/internal/otlpattr"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var (
	windowStart = time.Unix(1700000000, 0)
	windowEnd   = windowStart.Add(10 * time.Second)
)

func testResource() *resourcepb.Resource {
	return &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
		{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "checkout"}}},
	}}
}

func testScope() *commonpb.InstrumentationScope {
	return &commonpb.InstrumentationScope{Name: "github.com/pprofotel/profiler", Version: "0.1.0"}
}

// sequentialIDs returns profile ids 1, 2, 3, ... in the last bytes.
func sequentialIDs() func() [16]byte {
	var n uint16
	return func() [16]byte {
		n++
		var id [16]byte
		id[14], id[15] = byte(n>>8), byte(n)
		return id
	}
}

func newTestBuilder() *otlp.Builder {
	return otlp.NewBuilder(testResource(), testScope(),
		otlp.WithExecutable(otlptest.FixtureExecutable, otlptest.FixtureGoBuildID),
		otlp.WithProfileIDs(sequentialIDs()))
}

// view resolves a request's indices for assertions.
type view struct {
	t   *testing.T
	req *collectorpb.ExportProfilesServiceRequest
	d   *profilespb.ProfilesDictionary
}

func (v view) scope(name string) *profilespb.ScopeProfiles {
	v.t.Helper()
	for _, sp := range v.req.ResourceProfiles[0].ScopeProfiles {
		for _, kv := range sp.Scope.Attributes {
			if kv.Key == otlpattr.ProfileName && kv.Value.GetStringValue() == name {
				return sp
			}
		}
	}
	v.t.Fatalf("no scope %q", name)
	return nil
}

func (v view) profile(scope, sampleType string) *profilespb.Profile {
	v.t.Helper()
	for _, p := range v.scope(scope).Profiles {
		if v.d.StringTable[p.SampleType.TypeStrindex] == sampleType {
			return p
		}
	}
	v.t.Fatalf("scope %q has no profile %q", scope, sampleType)
	return nil
}

// frames returns the function names of a stack, leaf first, inlined
// frames included.
func (v view) frames(stack int32) []string {
	var out []string
	for _, l := range v.d.StackTable[stack].LocationIndices {
		for _, ln := range v.d.LocationTable[l].Lines {
			out = append(out, v.d.StringTable[v.d.FunctionTable[ln.FunctionIndex].NameStrindex])
		}
	}
	return out
}

// attrs returns the attributes as "key=value" strings, with " unit" when set.
func (v view) attrs(idxs []int32) []string {
	var out []string
	for _, i := range idxs {
		a := v.d.AttributeTable[i]
		s := v.d.StringTable[a.KeyStrindex] + "="
		switch x := a.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			s += x.StringValue
		case *commonpb.AnyValue_IntValue:
			s += strconv.FormatInt(x.IntValue, 10)
		case *commonpb.AnyValue_BoolValue:
			if x.BoolValue {
				s += "true"
			} else {
				s += "false"
			}
		}
		if a.UnitStrindex != 0 {
			s += " " + v.d.StringTable[a.UnitStrindex]
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// zeroed returns p with every sample value set to zero.
func zeroed(p *pprofdecode.Profile) *pprofdecode.Profile {
	for i := range p.Samples {
		clear(p.Samples[i].Values)
	}
	return p
}

func TestBuildValid(t *testing.T) {
	tests := []struct {
		name     string
		inputs   []otlp.Input
		profiles int
	}{
		{"fixture", otlptest.FixtureInputs(), 10},
		{"no inputs", nil, 0},
		{"nil profile", []otlp.Input{{Name: "cpu"}}, 0},
		{"only zero samples", []otlp.Input{{Name: "block", Profile: zeroed(otlptest.FixtureInputs()[3].Profile)}}, 2},
		{"no locations", []otlp.Input{{Name: "cpu", Profile: &pprofdecode.Profile{
			SampleTypes: []pprofdecode.ValueType{{Type: "samples", Unit: "count"}},
			Samples:     []pprofdecode.Sample{{Values: []int64{4}}, {Locations: []int32{3, -1}, Values: []int64{4}}},
		}}}, 1},
		{"out of range references", []otlp.Input{{Name: "cpu", Profile: &pprofdecode.Profile{
			SampleTypes: []pprofdecode.ValueType{{Type: "samples", Unit: "count"}},
			Locations:   []pprofdecode.Location{{Mapping: 5, Address: 0x10, Lines: []pprofdecode.Line{{Function: 9, Line: 1}}}},
			Samples:     []pprofdecode.Sample{{Locations: []int32{0, 7}, Values: []int64{4}}},
		}}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newTestBuilder().Build(windowStart, windowEnd, tt.inputs)
			if err := otlptest.Validate(req); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			n := 0
			for _, sp := range req.ResourceProfiles[0].ScopeProfiles {
				n += len(sp.Profiles)
			}
			if n != tt.profiles {
				t.Errorf("got %d profiles, want %d", n, tt.profiles)
			}
			if got := len(req.ResourceProfiles[0].ScopeProfiles); got != len(tt.inputs) {
				t.Errorf("got %d scopes, want %d", got, len(tt.inputs))
			}
		})
	}
}

func TestBuildDictionary(t *testing.T) {
	req := newTestBuilder().Build(windowStart, windowEnd, otlptest.FixtureInputs())
	d := req.Dictionary
	tests := []struct {
		table string
		got   int
		want  int
	}{
		// "", 12 sample and period type names and units, 6 sample and
		// profile attribute keys and units ("bytes" is already a unit),
		// 11 function names and files, 1 mapping file, 6 mapping and
		// location attribute keys.
		{"string_table", len(d.StringTable), 37},
		// zero + main.main, main.handle, main.alloc, runtime.mallocgc,
		// strings.Repeat, sync.(*Mutex).Unlock; not main.unused.
		{"function_table", len(d.FunctionTable), 7},
		// zero + the executable; not the library only zero samples use.
		{"mapping_table", len(d.MappingTable), 2},
		{"location_table", len(d.LocationTable), 6},
		// zero + mallocgc/alloc/handle/main, alloc/handle/main,
		// handle/main, unlock/handle/main.
		{"stack_table", len(d.StackTable), 5},
		{"link_table", len(d.LinkTable), 2},
		// zero + 4 profile names, route, trace_id and span_id of the
		// malformed pair, gnu and go build ids, 3 mapping flags,
		// is_folded; not the numeric labels bytes and worker.
		{"attribute_table", len(d.AttributeTable), 14},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s has %d entries, want %d", tt.table, tt.got, tt.want)
		}
	}

	names := map[string]int{}
	for _, f := range d.FunctionTable[1:] {
		names[d.StringTable[f.NameStrindex]]++
	}
	for _, fn := range []string{"main.main", "main.handle", "main.alloc", "runtime.mallocgc", "strings.Repeat", "sync.(*Mutex).Unlock"} {
		if names[fn] != 1 {
			t.Errorf("function %s appears %d times, want once", fn, names[fn])
		}
	}
	if names["main.unused"] != 0 {
		t.Errorf("main.unused is only used by zero samples but is in the function table")
	}

	v := view{t: t, req: req, d: d}
	m := d.MappingTable[1]
	if got, want := d.StringTable[m.FilenameStrindex], otlptest.FixtureExecutable; got != want {
		t.Errorf("mapping file = %q, want %q", got, want)
	}
	wantMapAttrs := []string{
		otlpattr.MappingHasFilenames + "=true", otlpattr.MappingHasFunctions + "=true",
		otlpattr.MappingHasLineNumbers + "=true", otlpattr.BuildIDGNU + "=c0ffee",
		otlpattr.BuildIDGo + "=" + otlptest.FixtureGoBuildID,
	}
	slices.Sort(wantMapAttrs)
	if got := v.attrs(m.AttributeIndices); !slices.Equal(got, wantMapAttrs) {
		t.Errorf("mapping attributes = %q, want %q", got, wantMapAttrs)
	}
	if m.MemoryStart != 0x400000 || m.MemoryLimit != 0x800000 {
		t.Errorf("mapping range = [%#x,%#x), want [0x400000,0x800000)", m.MemoryStart, m.MemoryLimit)
	}
}

func TestBuildSamples(t *testing.T) {
	req := newTestBuilder().Build(windowStart, windowEnd, otlptest.FixtureInputs())
	v := view{t: t, req: req, d: req.Dictionary}

	type sample struct {
		frames []string
		attrs  []string
		link   bool
		value  int64
	}
	route := "route=/api"
	tests := []struct {
		scope, sampleType string
		want              []sample
	}{
		{"heap", "alloc_space", []sample{
			{[]string{"runtime.mallocgc", "strings.Repeat", "main.alloc", "main.handle", "main.main"}, nil, false, 2048},
		}},
		{"heap", "inuse_objects", []sample{
			{[]string{"runtime.mallocgc", "strings.Repeat", "main.alloc", "main.handle", "main.main"}, nil, false, 1},
			{[]string{"strings.Repeat", "main.alloc", "main.handle", "main.main"}, nil, false, 3},
		}},
		{"cpu", "samples", []sample{
			{[]string{"strings.Repeat", "main.alloc", "main.handle", "main.main"}, []string{route}, true, 3},
			{[]string{"main.handle", "main.main"}, nil, true, 2},
			{[]string{"main.handle", "main.main"}, []string{"span_id=00f067aa0ba902b7", "trace_id=XYZ"}, false, 2},
		}},
		{"cpu", "cpu", []sample{
			{[]string{"strings.Repeat", "main.alloc", "main.handle", "main.main"}, []string{route}, true, 30000000},
			{[]string{"main.handle", "main.main"}, nil, true, 10000005},
		}},
		{"mutex", "mutex_delay", []sample{
			{[]string{"sync.(*Mutex).Unlock", "main.handle", "main.main"}, nil, false, 5000},
		}},
		{"block", "block_contentions", []sample{
			{[]string{"sync.(*Mutex).Unlock", "main.handle", "main.main"}, nil, false, 7},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.scope+"/"+tt.sampleType, func(t *testing.T) {
			p := v.profile(tt.scope, tt.sampleType)
			if len(p.Samples) != len(tt.want) {
				t.Fatalf("got %d samples, want %d", len(p.Samples), len(tt.want))
			}
			for i, s := range p.Samples {
				w := tt.want[i]
				if got := v.frames(s.StackIndex); !slices.Equal(got, w.frames) {
					t.Errorf("sample %d frames = %q, want %q", i, got, w.frames)
				}
				if got := v.attrs(s.AttributeIndices); !slices.Equal(got, w.attrs) {
					t.Errorf("sample %d attributes = %q, want %q", i, got, w.attrs)
				}
				if (s.LinkIndex != 0) != w.link {
					t.Errorf("sample %d link_index = %d, want link %v", i, s.LinkIndex, w.link)
				}
				if len(s.Values) != 1 || s.Values[0] != w.value {
					t.Errorf("sample %d values = %v, want [%d]", i, s.Values, w.value)
				}
			}
			if p.TimeUnixNano != uint64(windowStart.UnixNano()) || p.DurationNano != uint64(10*time.Second) {
				t.Errorf("time = %d+%d, want %d+%d", p.TimeUnixNano, p.DurationNano, windowStart.UnixNano(), 10*time.Second)
			}
			if got := v.attrs(p.AttributeIndices); !slices.Equal(got, []string{otlpattr.ProfileName + "=" + tt.scope}) {
				t.Errorf("profile attributes = %q", got)
			}
		})
	}

	link := req.Dictionary.LinkTable[1]
	if got := hex.EncodeToString(link.TraceId); got != otlptest.FixtureTraceID {
		t.Errorf("link trace id = %s, want %s", got, otlptest.FixtureTraceID)
	}
	if got := hex.EncodeToString(link.SpanId); got != otlptest.FixtureSpanID {
		t.Errorf("link span id = %s, want %s", got, otlptest.FixtureSpanID)
	}
	if l0 := req.Dictionary.LinkTable[0]; !bytes.Equal(l0.TraceId, make([]byte, 16)) || !bytes.Equal(l0.SpanId, make([]byte, 8)) {
		t.Errorf("link_table[0] = %x/%x, want 16 and 8 zero bytes", l0.TraceId, l0.SpanId)
	}
	for _, sp := range req.ResourceProfiles[0].ScopeProfiles {
		for _, p := range sp.Profiles {
			for _, s := range p.Samples {
				if s.LinkIndex == 1 {
					for _, a := range v.attrs(s.AttributeIndices) {
						if bytes.HasPrefix([]byte(a), []byte("trace_id=")) || bytes.HasPrefix([]byte(a), []byte("span_id=")) {
							t.Errorf("linked sample keeps attribute %s", a)
						}
					}
				}
			}
		}
	}

	loc := req.Dictionary.LocationTable
	folded := 0
	for _, l := range loc[1:] {
		for _, a := range v.attrs(l.AttributeIndices) {
			if a == otlpattr.LocationIsFolded+"=true" {
				folded++
				if got := v.d.StringTable[v.d.FunctionTable[l.Lines[0].FunctionIndex].NameStrindex]; got != "sync.(*Mutex).Unlock" {
					t.Errorf("folded location is %s, want sync.(*Mutex).Unlock", got)
				}
			}
		}
	}
	if folded != 1 {
		t.Errorf("%d folded locations, want 1", folded)
	}
}

func TestBuildScopes(t *testing.T) {
	req := newTestBuilder().Build(windowStart, windowEnd, otlptest.FixtureInputs())
	tests := []struct {
		name        string
		defaultType string
		order       []int64
		types       []string
	}{
		{"heap", "inuse_space", []int64{0, 1, 2, 3}, []string{"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"}},
		{"cpu", "cpu", []int64{0, 1}, []string{"samples", "cpu"}},
		{"mutex", "delay", []int64{0, 1}, []string{"mutex_contentions", "mutex_delay"}},
		{"block", "delay", []int64{0, 1}, []string{"block_contentions", "block_delay"}},
	}
	scopes := req.ResourceProfiles[0].ScopeProfiles
	if len(scopes) != len(tests) {
		t.Fatalf("got %d scopes, want %d", len(scopes), len(tests))
	}
	if !proto.Equal(req.ResourceProfiles[0].Resource, testResource()) {
		t.Errorf("resource = %v", req.ResourceProfiles[0].Resource)
	}
	for i, tt := range tests {
		sp := scopes[i]
		if sp.Scope.Name != testScope().Name || sp.Scope.Version != testScope().Version {
			t.Errorf("scope %d = %s@%s", i, sp.Scope.Name, sp.Scope.Version)
		}
		attrs := map[string]*commonpb.AnyValue{}
		for _, kv := range sp.Scope.Attributes {
			attrs[kv.Key] = kv.Value
		}
		if got := attrs[otlpattr.ProfileName].GetStringValue(); got != tt.name {
			t.Errorf("scope %d name = %q, want %q", i, got, tt.name)
		}
		if got := attrs[otlpattr.DefaultSampleType].GetStringValue(); got != tt.defaultType {
			t.Errorf("scope %s default sample type = %q, want %q", tt.name, got, tt.defaultType)
		}
		var order []int64
		for _, x := range attrs[otlpattr.SampleTypeOrder].GetArrayValue().GetValues() {
			order = append(order, x.GetIntValue())
		}
		if !slices.Equal(order, tt.order) {
			t.Errorf("scope %s sample type order = %v, want %v", tt.name, order, tt.order)
		}
		var types []string
		for _, p := range sp.Profiles {
			types = append(types, req.Dictionary.StringTable[p.SampleType.TypeStrindex])
		}
		if !slices.Equal(types, tt.types) {
			t.Errorf("scope %s sample types = %q, want %q", tt.name, types, tt.types)
		}
	}
	if n := len(testScope().Attributes); n != 0 {
		t.Errorf("Build modified the caller's scope")
	}
}

// TestBuildReuse checks that a request stays intact when the Builder builds
// the next one, and that the second dictionary holds nothing from the first.
func TestBuildReuse(t *testing.T) {
	b := newTestBuilder()
	first := b.Build(windowStart, windowEnd, otlptest.FixtureInputs())
	before, err := proto.MarshalOptions{Deterministic: true}.Marshal(first)
	if err != nil {
		t.Fatal(err)
	}
	cpuOnly := otlptest.FixtureInputs()[1:2]
	second := b.Build(windowEnd, windowEnd.Add(10*time.Second), cpuOnly)
	after, err := proto.MarshalOptions{Deterministic: true}.Marshal(first)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("the first request changed when the Builder built the second")
	}
	if err := otlptest.Validate(second); err != nil {
		t.Errorf("second request: %v", err)
	}
	fresh := newTestBuilder().Build(windowEnd, windowEnd.Add(10*time.Second), cpuOnly)
	if !proto.Equal(second.Dictionary, fresh.Dictionary) {
		t.Errorf("the dictionary of a reused Builder differs from a fresh Builder's")
	}
}

func TestBuildGolden(t *testing.T) {
	checkGolden(t, "fixture.json", newTestBuilder().Build(windowStart, windowEnd, otlptest.FixtureInputs()))
}

// TestBuildRequestsGolden builds the request counts the collector adds to
// a window: one Profile of requests/count without a period, a sample per
// route on a one-frame stack, with the route attribute.
func TestBuildRequestsGolden(t *testing.T) {
	checkGolden(t, "requests.json", newTestBuilder().Build(windowStart, windowEnd,
		[]otlp.Input{{Name: "requests", Profile: otlptest.RequestsFixture()}}))
}

// checkGolden compares req, as indented OTLP/JSON, with testdata/name.
func checkGolden(t *testing.T, name string, req *collectorpb.ExportProfilesServiceRequest) {
	t.Helper()
	raw, err := protojson.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	// protojson output is deliberately unstable in its spacing; compact
	// and indent it to compare bytes.
	var compact, got bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Indent(&got, compact.Bytes(), "", "  "); err != nil {
		t.Fatal(err)
	}
	got.WriteByte('\n')
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("request differs from %s; run go test -update and review the diff", path)
	}
}

// TestBuildMergesSamplesOfOneIdentity builds profiles of two samples and
// checks whether they become one: samples are merged when their valid
// locations, in order, and their labels, in canonical order, are the same.
func TestBuildMergesSamplesOfOneIdentity(t *testing.T) {
	str := func(k, v string) pprofdecode.Label { return pprofdecode.Label{Key: k, Str: v} }
	num := func(k string, n int64) pprofdecode.Label { return pprofdecode.Label{Key: k, Num: n, IsNum: true} }
	type sample struct {
		locs   []int32
		labels []pprofdecode.Label
	}
	tests := []struct {
		name   string
		a, b   sample
		merged bool
	}{
		{"same stack, no labels", sample{[]int32{0, 1}, nil}, sample{[]int32{0, 1}, nil}, true},
		{"same stack and labels", sample{[]int32{0, 1, 2}, []pprofdecode.Label{num("bytes", 8)}}, sample{[]int32{0, 1, 2}, []pprofdecode.Label{num("bytes", 8)}}, true},
		{"labels in another order", sample{[]int32{0}, []pprofdecode.Label{str("a", "1"), num("b", 2), str("c", "")}}, sample{[]int32{0}, []pprofdecode.Label{num("b", 2), str("c", ""), str("a", "1")}}, true},
		{"repeated labels in another order", sample{[]int32{0}, []pprofdecode.Label{str("a", "1"), str("b", "2"), str("a", "1")}}, sample{[]int32{0}, []pprofdecode.Label{str("a", "1"), str("a", "1"), str("b", "2")}}, true},
		{"out-of-range locations left out", sample{[]int32{0, 7, 1, -1}, nil}, sample{[]int32{-2, 0, 1}, nil}, true},
		{"fields a label's kind does not use", sample{[]int32{0}, []pprofdecode.Label{{Key: "k", Str: "v", Num: 5}}}, sample{[]int32{0}, []pprofdecode.Label{str("k", "v")}}, true},
		{"other order of locations", sample{[]int32{0, 1}, nil}, sample{[]int32{1, 0}, nil}, false},
		{"a stack and its prefix", sample{[]int32{0, 1}, nil}, sample{[]int32{0, 1, 2}, nil}, false},
		// Numeric labels are not sent, so they do not part samples.
		{"another number", sample{[]int32{0}, []pprofdecode.Label{num("bytes", 8)}}, sample{[]int32{0}, []pprofdecode.Label{num("bytes", 16)}}, true},
		{"a number and none", sample{[]int32{0}, []pprofdecode.Label{str("a", "1"), num("bytes", 8)}}, sample{[]int32{0}, []pprofdecode.Label{str("a", "1")}}, true},
		{"another string value", sample{[]int32{0}, []pprofdecode.Label{str("a", "1")}}, sample{[]int32{0}, []pprofdecode.Label{str("a", "2")}}, false},
		{"a string and a number", sample{[]int32{0}, []pprofdecode.Label{str("n", "")}}, sample{[]int32{0}, []pprofdecode.Label{num("n", 0)}}, false},
		{"a label repeated", sample{[]int32{0}, []pprofdecode.Label{str("a", "1")}}, sample{[]int32{0}, []pprofdecode.Label{str("a", "1"), str("a", "1")}}, false},
		{"labels swapped between keys", sample{[]int32{0}, []pprofdecode.Label{str("a", "1"), str("b", "2")}}, sample{[]int32{0}, []pprofdecode.Label{str("a", "2"), str("b", "1")}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pprofdecode.Profile{
				SampleTypes: []pprofdecode.ValueType{{Type: "samples", Unit: "count"}},
				Functions:   []pprofdecode.Function{{Name: "f0"}, {Name: "f1"}, {Name: "f2"}},
				Locations: []pprofdecode.Location{
					{Mapping: -1, Address: 0x10, Lines: []pprofdecode.Line{{Function: 0}}},
					{Mapping: -1, Address: 0x20, Lines: []pprofdecode.Line{{Function: 1}}},
					{Mapping: -1, Address: 0x30, Lines: []pprofdecode.Line{{Function: 2}}},
				},
				Samples: []pprofdecode.Sample{
					{Locations: tt.a.locs, Labels: tt.a.labels, Values: []int64{1}},
					{Locations: tt.b.locs, Labels: tt.b.labels, Values: []int64{2}},
				},
			}
			req := newTestBuilder().Build(windowStart, windowEnd, []otlp.Input{{Name: "cpu", Profile: p}})
			var values []int64
			for _, s := range req.ResourceProfiles[0].ScopeProfiles[0].Profiles[0].Samples {
				values = append(values, s.Values...)
			}
			want := []int64{1, 2}
			if tt.merged {
				want = []int64{3}
			}
			if !slices.Equal(values, want) {
				t.Errorf("sample values = %v, want %v", values, want)
			}
		})
	}
}

// TestBuildSampleTypes builds each runtime profile with the types
// runtime/pprof writes and checks the sample and period types of every
// Profile sent, and which pprof index each stands for.
func TestBuildSampleTypes(t *testing.T) {
	vt := func(t, u string) pprofdecode.ValueType { return pprofdecode.ValueType{Type: t, Unit: u} }
	type sent struct{ sample, period string }
	tests := []struct {
		name   string
		types  []pprofdecode.ValueType
		period pprofdecode.ValueType
		values []int64 // of the one sample
		want   []sent
		order  []int64
	}{
		{"cpu", []pprofdecode.ValueType{vt("samples", "count"), vt("cpu", "nanoseconds")}, vt("cpu", "nanoseconds"),
			[]int64{3, 3 * 10_000_000}, []sent{{"samples/count", "cpu/nanoseconds"}}, []int64{0}},
		// cpu/nanoseconds that samples/count does not give exactly is sent.
		{"cpu", []pprofdecode.ValueType{vt("samples", "count"), vt("cpu", "nanoseconds")}, vt("cpu", "nanoseconds"),
			[]int64{3, 3*10_000_000 + 1}, []sent{{"samples/count", "cpu/nanoseconds"}, {"cpu/nanoseconds", "cpu/nanoseconds"}}, []int64{0, 1}},
		{"heap", []pprofdecode.ValueType{vt("alloc_objects", "count"), vt("alloc_space", "bytes"), vt("inuse_objects", "count"), vt("inuse_space", "bytes")}, vt("space", "bytes"),
			[]int64{1, 2, 3, 4}, []sent{{"alloc_objects/count", "space/bytes"}, {"alloc_space/bytes", "space/bytes"}, {"inuse_objects/count", "space/bytes"}, {"inuse_space/bytes", "space/bytes"}}, []int64{0, 1, 2, 3}},
		{"goroutine", []pprofdecode.ValueType{vt("goroutine", "count")}, vt("goroutine", "count"),
			[]int64{1}, []sent{{"goroutine/count", "goroutine/count"}}, []int64{0}},
		{"mutex", []pprofdecode.ValueType{vt("contentions", "count"), vt("delay", "nanoseconds")}, vt("contentions", "count"),
			[]int64{1, 2}, []sent{{"mutex_contentions/count", "mutex_contentions/count"}, {"mutex_delay/nanoseconds", "mutex_contentions/count"}}, []int64{0, 1}},
		{"block", []pprofdecode.ValueType{vt("contentions", "count"), vt("delay", "nanoseconds")}, vt("contentions", "count"),
			[]int64{1, 2}, []sent{{"block_contentions/count", "block_contentions/count"}, {"block_delay/nanoseconds", "block_contentions/count"}}, []int64{0, 1}},
		// A profile the table does not know keeps its types.
		{"threadcreate", []pprofdecode.ValueType{vt("threadcreate", "count")}, vt("threadcreate", "count"),
			[]int64{1}, []sent{{"threadcreate/count", "threadcreate/count"}}, []int64{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pprofdecode.Profile{
				SampleTypes: tt.types, PeriodType: tt.period, Period: 10_000_000,
				Functions: []pprofdecode.Function{{Name: "f"}},
				Locations: []pprofdecode.Location{{Mapping: -1, Address: 0x10, Lines: []pprofdecode.Line{{Function: 0}}}},
				Samples:   []pprofdecode.Sample{{Locations: []int32{0}, Values: tt.values}},
			}
			req := newTestBuilder().Build(windowStart, windowEnd, []otlp.Input{{Name: tt.name, Profile: p}})
			if err := otlptest.Validate(req); err != nil {
				t.Fatal(err)
			}
			str := req.Dictionary.StringTable
			sp := req.ResourceProfiles[0].ScopeProfiles[0]
			var got []sent
			for _, prof := range sp.Profiles {
				got = append(got, sent{
					str[prof.SampleType.TypeStrindex] + "/" + str[prof.SampleType.UnitStrindex],
					str[prof.PeriodType.TypeStrindex] + "/" + str[prof.PeriodType.UnitStrindex],
				})
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("sent %v, want %v", got, tt.want)
			}
			var order []int64
			for _, kv := range sp.Scope.Attributes {
				if kv.Key == otlpattr.SampleTypeOrder {
					for _, x := range kv.Value.GetArrayValue().GetValues() {
						order = append(order, x.GetIntValue())
					}
				}
			}
			if !slices.Equal(order, tt.order) {
				t.Errorf("sample type order %v, want %v", order, tt.order)
			}
		})
	}
}

// TestBuildTimedSamples checks the shape of event samples (the off-CPU
// profile's waits): the events of one stack and labels become one OTLP
// sample with a value and a timestamp per event, in the order given, and
// events of another identity a sample of their own.
func TestBuildTimedSamples(t *testing.T) {
	at := func(ms int64) int64 { return windowStart.Add(time.Duration(ms) * time.Millisecond).UnixNano() }
	p := otlptest.OffCPUFixture(windowStart)
	req := newTestBuilder().Build(windowStart, windowEnd, []otlp.Input{{Name: "offcpu", Profile: p}})
	if err := otlptest.Validate(req); err != nil {
		t.Fatal(err)
	}
	v := view{t: t, req: req, d: req.Dictionary}
	prof := v.profile("offcpu", "off_cpu")
	type got struct {
		frames, attrs string
		values        []int64
		times         []uint64
	}
	var samples []got
	for _, s := range prof.Samples {
		samples = append(samples, got{fmt.Sprint(v.frames(s.StackIndex)), fmt.Sprint(v.attrs(s.AttributeIndices)), s.Values, s.TimestampsUnixNano})
	}
	u := func(ms int64) uint64 { return uint64(at(ms)) }
	want := []got{
		{"[recv]", "[wait_reason=chan receive]", []int64{300, 50}, []uint64{u(10), u(30)}},
		{"[sleep]", "[wait_reason=sleep]", []int64{100}, []uint64{u(20)}},
		{"[recv]", "[wait_reason=select]", []int64{7}, []uint64{u(40)}},
	}
	if !reflect.DeepEqual(samples, want) {
		t.Errorf("samples\n got %v\nwant %v", samples, want)
	}
}

// TestBuildSlowRequests sends the slow-request profile as Pyroscope takes
// it: its own Profile, wall/nanoseconds with a period of 1 wall/nanoseconds,
// one OTLP sample per interval of a request (one value, one timestamp: the
// two on-CPU intervals of the fixture's /lock request, one pprof sample,
// are two), linked to the request's span; a request's values add up to its
// duration.
func TestBuildSlowRequests(t *testing.T) {
	p := otlptest.SlowFixture(windowStart)
	req := newTestBuilder().Build(windowStart, windowEnd, []otlp.Input{{Name: "slowrequests", Profile: p}})
	if err := otlptest.Validate(req); err != nil {
		t.Fatal(err)
	}
	v := view{t: t, req: req, d: req.Dictionary}
	prof := v.profile("slowrequests", "wall")
	strs := req.Dictionary.StringTable
	if st := strs[prof.SampleType.GetTypeStrindex()] + "/" + strs[prof.SampleType.GetUnitStrindex()]; st != "wall/nanoseconds" {
		t.Errorf("sample type %s, want wall/nanoseconds", st)
	}
	if pt := strs[prof.PeriodType.GetTypeStrindex()] + "/" + strs[prof.PeriodType.GetUnitStrindex()]; pt != "wall/nanoseconds" || prof.Period != 1 {
		t.Errorf("period type %s, period %d; want wall/nanoseconds, 1", pt, prof.Period)
	}
	perSpan := map[string]int64{}
	var states []string
	var times []time.Duration
	for _, s := range prof.Samples {
		for _, ts := range s.TimestampsUnixNano {
			times = append(times, time.Unix(0, int64(ts)).Sub(windowStart))
		}
		l := req.Dictionary.LinkTable[s.LinkIndex]
		id := fmt.Sprintf("%x/%x", l.TraceId, l.SpanId)
		var sum int64
		for _, x := range s.Values {
			sum += x
		}
		if len(s.TimestampsUnixNano) != 1 || len(s.Values) != 1 {
			t.Errorf("%d values, %d timestamps; want one of each", len(s.Values), len(s.TimestampsUnixNano))
		}
		perSpan[id] += sum
		states = append(states, fmt.Sprint(v.attrs(s.AttributeIndices)))
	}
	want := map[string]int64{
		otlptest.FixtureTraceID + "/" + otlptest.FixtureSpanID:         int64(250 * time.Millisecond),
		otlptest.SlowFixtureTraceID + "/" + otlptest.SlowFixtureSpanID: int64(120 * time.Millisecond),
	}
	if !reflect.DeepEqual(perSpan, want) {
		t.Errorf("wall time per span %v, want %v", perSpan, want)
	}
	wantStates := []string{
		"[before_trace=true goroutine_state=off_cpu route=/lock wait_reason=sync]",
		"[goroutine_state=off_cpu route=/lock wait_reason=sync]",
		"[goroutine_state=runnable route=/lock]",
		"[goroutine_state=on_cpu route=/lock]",
		"[goroutine_state=on_cpu route=/lock]",
		"[goroutine_state=on_cpu route=/cpu]",
		"[goroutine_state=off_cpu route=/cpu wait_reason=network]",
	}
	if !reflect.DeepEqual(states, wantStates) {
		t.Errorf("attributes\n got %q\nwant %q", states, wantStates)
	}
	ms := time.Millisecond
	if wantTimes := []time.Duration{0, 50 * ms, 200 * ms, 210 * ms, 225 * ms, 300 * ms, 400 * ms}; !reflect.DeepEqual(times, wantTimes) {
		t.Errorf("timestamps %v, want %v", times, wantTimes)
	}
}

// TestBuildProfileSpan gives one input a time range of its own, as the CPU
// profile has under a duty cycle: its Profiles state that range, the
// others the window.
func TestBuildProfileSpan(t *testing.T) {
	inputs := otlptest.FixtureInputs()
	from, to := windowStart.Add(3*time.Second), windowStart.Add(4500*time.Millisecond)
	inputs[0].Start, inputs[0].End = from, to
	req := newTestBuilder().Build(windowStart, windowEnd, inputs)
	for i, sp := range req.ResourceProfiles[0].ScopeProfiles {
		wantTime, wantDuration := uint64(windowStart.UnixNano()), uint64(10*time.Second)
		if i == 0 {
			wantTime, wantDuration = uint64(from.UnixNano()), uint64(1500*time.Millisecond)
		}
		for _, p := range sp.Profiles {
			if p.TimeUnixNano != wantTime || p.DurationNano != wantDuration {
				t.Errorf("%s: time = %d+%d, want %d+%d", inputs[i].Name, p.TimeUnixNano, p.DurationNano, wantTime, wantDuration)
			}
		}
	}
}
