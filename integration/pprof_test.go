package integration

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"

	pprofprofile "github.com/google/pprof/profile"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"

	"github.com/pprofotel/profiler/labels"
)

// Scope attributes the profiler writes to let a reader rebuild the pprof
// profile a scope came from.
const (
	attrProfileName       = "pprofotel.profile.name"
	attrSampleTypeOrder   = "pprof.scope.sample_type_order"
	attrDefaultSampleType = "pprof.scope.default_sample_type"
)

// dict resolves the indices of a ProfilesDictionary, checking each one, so
// that a Collector that reshuffled the tables wrongly fails the test with a
// message instead of a panic.
type dict struct {
	d *profilespb.ProfilesDictionary
}

// Attributes of profiles.
//
// OTLP lets the resource and scope attributes of profiles give their keys
// and string values as indices into the dictionary's string table
// (KeyValue.key_strindex, AnyValue.string_value_strindex) rather than
// spelled out. The profiler spells them out; the Collector interns them
// when it writes profiles. A reader has to accept both, and so do these
// helpers.

// attr returns the value of the attribute key among kvs, or nil.
func (d dict) attr(kvs []*commonpb.KeyValue, key string) *commonpb.AnyValue {
	for _, kv := range kvs {
		k := kv.GetKey()
		if k == "" {
			k, _ = d.str(kv.GetKeyStrindex())
		}
		if k == key {
			return kv.GetValue()
		}
	}
	return nil
}

// scopeAttr returns the value of the scope attribute key of sp, or nil.
func (d dict) scopeAttr(sp *profilespb.ScopeProfiles, key string) *commonpb.AnyValue {
	return d.attr(sp.GetScope().GetAttributes(), key)
}

// text renders a scalar value as a string, looking up a string given as a
// string table index; a missing value reads as "<missing>".
func (d dict) text(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_StringValueStrindex:
		s, err := d.str(x.StringValueStrindex)
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return s
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case nil:
		return "<missing>"
	default:
		return fmt.Sprint(x)
	}
}

func (d dict) str(i int32) (string, error) {
	if i < 0 || int(i) >= len(d.d.GetStringTable()) {
		return "", fmt.Errorf("string index %d out of range [0,%d)", i, len(d.d.GetStringTable()))
	}
	return d.d.StringTable[i], nil
}

func (d dict) stack(i int32) (*profilespb.Stack, error) {
	if i < 0 || int(i) >= len(d.d.GetStackTable()) {
		return nil, fmt.Errorf("stack index %d out of range [0,%d)", i, len(d.d.GetStackTable()))
	}
	return d.d.StackTable[i], nil
}

func (d dict) location(i int32) (*profilespb.Location, error) {
	if i < 0 || int(i) >= len(d.d.GetLocationTable()) {
		return nil, fmt.Errorf("location index %d out of range [0,%d)", i, len(d.d.GetLocationTable()))
	}
	return d.d.LocationTable[i], nil
}

func (d dict) function(i int32) (*profilespb.Function, error) {
	if i < 0 || int(i) >= len(d.d.GetFunctionTable()) {
		return nil, fmt.Errorf("function index %d out of range [0,%d)", i, len(d.d.GetFunctionTable()))
	}
	return d.d.FunctionTable[i], nil
}

func (d dict) link(i int32) (*profilespb.Link, error) {
	if i < 0 || int(i) >= len(d.d.GetLinkTable()) {
		return nil, fmt.Errorf("link index %d out of range [0,%d)", i, len(d.d.GetLinkTable()))
	}
	return d.d.LinkTable[i], nil
}

func (d dict) attribute(i int32) (*profilespb.KeyValueAndUnit, error) {
	if i < 0 || int(i) >= len(d.d.GetAttributeTable()) {
		return nil, fmt.Errorf("attribute index %d out of range [0,%d)", i, len(d.d.GetAttributeTable()))
	}
	return d.d.AttributeTable[i], nil
}

func (d dict) valueType(vt *profilespb.ValueType) (*pprofprofile.ValueType, error) {
	typ, err := d.str(vt.GetTypeStrindex())
	if err != nil {
		return nil, err
	}
	unit, err := d.str(vt.GetUnitStrindex())
	if err != nil {
		return nil, err
	}
	return &pprofprofile.ValueType{Type: typ, Unit: unit}, nil
}

// functions returns the names of the functions on the stack of s, leaf
// first, inlined frames included.
func (d dict) functions(s *profilespb.Sample) ([]string, error) {
	st, err := d.stack(s.GetStackIndex())
	if err != nil {
		return nil, err
	}
	var names []string
	for _, li := range st.GetLocationIndices() {
		loc, err := d.location(li)
		if err != nil {
			return nil, err
		}
		for _, ln := range loc.GetLines() {
			f, err := d.function(ln.GetFunctionIndex())
			if err != nil {
				return nil, err
			}
			name, err := d.str(f.GetNameStrindex())
			if err != nil {
				return nil, err
			}
			names = append(names, name)
		}
	}
	return names, nil
}

// toPprof rebuilds the pprof profile of one scope: each Profile of the scope
// becomes one sample type, at the position the scope's
// pprof.scope.sample_type_order gives it, and samples that share stack,
// attributes and link across the Profiles become one multi-valued pprof
// sample. A link becomes the trace_id and span_id labels that
// labels.WrapTracerProvider put on the goroutine, so the rebuilt profile
// reads like the runtime's own.
func toPprof(d dict, sp *profilespb.ScopeProfiles) (*pprofprofile.Profile, error) {
	n := len(sp.GetProfiles())
	if n == 0 {
		return nil, fmt.Errorf("scope has no profiles")
	}
	order := d.scopeAttr(sp, attrSampleTypeOrder).GetArrayValue().GetValues()
	if len(order) != n {
		return nil, fmt.Errorf("%s has %d entries for %d profiles", attrSampleTypeOrder, len(order), n)
	}
	b := &pprofBuilder{
		d: d,
		p: &pprofprofile.Profile{
			SampleType:        make([]*pprofprofile.ValueType, n),
			DefaultSampleType: d.text(d.scopeAttr(sp, attrDefaultSampleType)),
		},
		locations: make(map[int32]*pprofprofile.Location),
		functions: make(map[int32]*pprofprofile.Function),
		mappings:  make(map[int32]*pprofprofile.Mapping),
		samples:   make(map[string]*pprofprofile.Sample),
	}
	for i, prof := range sp.GetProfiles() {
		pos := order[i].GetIntValue()
		if pos < 0 || pos >= int64(n) || b.p.SampleType[pos] != nil {
			return nil, fmt.Errorf("%s is not a permutation of 0..%d", attrSampleTypeOrder, n-1)
		}
		vt, err := d.valueType(prof.GetSampleType())
		if err != nil {
			return nil, err
		}
		b.p.SampleType[pos] = vt
		if i == 0 {
			b.p.TimeNanos = int64(prof.GetTimeUnixNano())
			b.p.DurationNanos = int64(prof.GetDurationNano())
			b.p.Period = prof.GetPeriod()
			if prof.GetPeriodType() != nil {
				if b.p.PeriodType, err = d.valueType(prof.GetPeriodType()); err != nil {
					return nil, err
				}
			}
		}
		for _, s := range prof.GetSamples() {
			if err := b.add(s, int(pos), n); err != nil {
				return nil, err
			}
		}
	}
	if err := b.p.CheckValid(); err != nil {
		return nil, err
	}
	return b.p, nil
}

type pprofBuilder struct {
	d         dict
	p         *pprofprofile.Profile
	locations map[int32]*pprofprofile.Location
	functions map[int32]*pprofprofile.Function
	mappings  map[int32]*pprofprofile.Mapping
	samples   map[string]*pprofprofile.Sample
}

func (b *pprofBuilder) add(s *profilespb.Sample, pos, n int) error {
	if len(s.GetValues()) != 1 {
		return fmt.Errorf("sample has %d values; the profiler writes one", len(s.GetValues()))
	}
	attrs := slices.Sorted(slices.Values(s.GetAttributeIndices()))
	key := fmt.Sprint(s.GetStackIndex(), attrs, s.GetLinkIndex())
	if ps := b.samples[key]; ps != nil {
		ps.Value[pos] += s.Values[0]
		return nil
	}
	ps := &pprofprofile.Sample{Value: make([]int64, n), Label: make(map[string][]string)}
	ps.Value[pos] = s.Values[0]
	st, err := b.d.stack(s.GetStackIndex())
	if err != nil {
		return err
	}
	for _, li := range st.GetLocationIndices() {
		loc, err := b.location(li)
		if err != nil {
			return err
		}
		ps.Location = append(ps.Location, loc)
	}
	for _, ai := range s.GetAttributeIndices() {
		kv, err := b.d.attribute(ai)
		if err != nil {
			return err
		}
		k, err := b.d.str(kv.GetKeyStrindex())
		if err != nil {
			return err
		}
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			ps.Label[k] = append(ps.Label[k], v.StringValue)
		case *commonpb.AnyValue_IntValue:
			unit, err := b.d.str(kv.GetUnitStrindex())
			if err != nil {
				return err
			}
			if ps.NumLabel == nil {
				ps.NumLabel, ps.NumUnit = make(map[string][]int64), make(map[string][]string)
			}
			ps.NumLabel[k] = append(ps.NumLabel[k], v.IntValue)
			ps.NumUnit[k] = append(ps.NumUnit[k], unit)
		default:
			return fmt.Errorf("sample attribute %q has a %T value, which pprof labels cannot hold", k, v)
		}
	}
	if s.GetLinkIndex() != 0 {
		l, err := b.d.link(s.GetLinkIndex())
		if err != nil {
			return err
		}
		ps.Label[labels.TraceIDKey] = append(ps.Label[labels.TraceIDKey], hex.EncodeToString(l.GetTraceId()))
		ps.Label[labels.SpanIDKey] = append(ps.Label[labels.SpanIDKey], hex.EncodeToString(l.GetSpanId()))
	}
	b.samples[key] = ps
	b.p.Sample = append(b.p.Sample, ps)
	return nil
}

func (b *pprofBuilder) location(i int32) (*pprofprofile.Location, error) {
	if loc, ok := b.locations[i]; ok {
		return loc, nil
	}
	src, err := b.d.location(i)
	if err != nil {
		return nil, err
	}
	loc := &pprofprofile.Location{ID: uint64(len(b.p.Location) + 1), Address: src.GetAddress()}
	// Index 0 of every dictionary table is the zero value, meaning "none".
	if src.GetMappingIndex() != 0 {
		if loc.Mapping, err = b.mapping(src.GetMappingIndex()); err != nil {
			return nil, err
		}
	}
	for _, ln := range src.GetLines() {
		f, err := b.function(ln.GetFunctionIndex())
		if err != nil {
			return nil, err
		}
		loc.Line = append(loc.Line, pprofprofile.Line{Function: f, Line: ln.GetLine(), Column: ln.GetColumn()})
	}
	b.p.Location = append(b.p.Location, loc)
	b.locations[i] = loc
	return loc, nil
}

func (b *pprofBuilder) function(i int32) (*pprofprofile.Function, error) {
	if f, ok := b.functions[i]; ok {
		return f, nil
	}
	src, err := b.d.function(i)
	if err != nil {
		return nil, err
	}
	f := &pprofprofile.Function{ID: uint64(len(b.p.Function) + 1), StartLine: src.GetStartLine()}
	for _, s := range []struct {
		dst *string
		idx int32
	}{{&f.Name, src.GetNameStrindex()}, {&f.SystemName, src.GetSystemNameStrindex()}, {&f.Filename, src.GetFilenameStrindex()}} {
		if *s.dst, err = b.d.str(s.idx); err != nil {
			return nil, err
		}
	}
	b.p.Function = append(b.p.Function, f)
	b.functions[i] = f
	return f, nil
}

func (b *pprofBuilder) mapping(i int32) (*pprofprofile.Mapping, error) {
	if m, ok := b.mappings[i]; ok {
		return m, nil
	}
	if i < 0 || int(i) >= len(b.d.d.GetMappingTable()) {
		return nil, fmt.Errorf("mapping index %d out of range [0,%d)", i, len(b.d.d.GetMappingTable()))
	}
	src := b.d.d.MappingTable[i]
	file, err := b.d.str(src.GetFilenameStrindex())
	if err != nil {
		return nil, err
	}
	// The pprof flags (has_functions and so on) only tell pprof whether
	// symbolization is still needed; every location here already carries
	// its functions, so they are set rather than read back.
	m := &pprofprofile.Mapping{
		ID:           uint64(len(b.p.Mapping) + 1),
		Start:        src.GetMemoryStart(),
		Limit:        src.GetMemoryLimit(),
		Offset:       src.GetFileOffset(),
		File:         file,
		HasFunctions: true,
	}
	b.p.Mapping = append(b.p.Mapping, m)
	b.mappings[i] = m
	return m, nil
}
