package otlptest

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	pprofprofile "github.com/google/pprof/profile"
	"github.com/pprofotel/profiler/internal/otlpattr"
	"github.com/pprofotel/profiler/labels"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
)

// ToPprof rebuilds one multi-valued pprof profile per ScopeProfiles of req,
// keyed by the scope's pprofotel.profile.name attribute. The Profiles of a
// scope become the sample types, placed by pprof.scope.sample_type_order;
// samples with the same stack, attributes and link are merged into one pprof
// sample. Links come back as trace_id and span_id labels in lower-case hex.
// Every returned profile passes CheckValid.
func ToPprof(req *collectorpb.ExportProfilesServiceRequest) (map[string]*pprofprofile.Profile, error) {
	if req == nil || req.Dictionary == nil {
		return nil, fmt.Errorf("to pprof: request or dictionary is nil")
	}
	out := make(map[string]*pprofprofile.Profile)
	for _, rp := range req.ResourceProfiles {
		for i, sp := range rp.GetScopeProfiles() {
			name := scopeAttribute(sp.GetScope(), otlpattr.ProfileName).GetStringValue()
			if name == "" {
				return nil, fmt.Errorf("to pprof: scope_profiles[%d] lacks attribute %s", i, otlpattr.ProfileName)
			}
			if out[name] != nil {
				return nil, fmt.Errorf("to pprof: two scopes named %q", name)
			}
			c := &converter{d: req.Dictionary}
			p, err := c.scope(sp)
			if err != nil {
				return nil, fmt.Errorf("to pprof: scope %q: %w", name, err)
			}
			if err := p.CheckValid(); err != nil {
				return nil, fmt.Errorf("to pprof: scope %q: %w", name, err)
			}
			out[name] = p
		}
	}
	return out, nil
}

type converter struct {
	d         *profilespb.ProfilesDictionary
	p         *pprofprofile.Profile
	mappings  map[int32]*pprofprofile.Mapping
	locations map[int32]*pprofprofile.Location
	functions map[int32]*pprofprofile.Function
}

func (c *converter) str(i int32) (string, error) {
	if i < 0 || int(i) >= len(c.d.StringTable) {
		return "", fmt.Errorf("string index %d out of range", i)
	}
	return c.d.StringTable[i], nil
}

func (c *converter) valueType(vt *profilespb.ValueType) (*pprofprofile.ValueType, error) {
	t, err := c.str(vt.GetTypeStrindex())
	if err != nil {
		return nil, err
	}
	u, err := c.str(vt.GetUnitStrindex())
	if err != nil {
		return nil, err
	}
	return &pprofprofile.ValueType{Type: t, Unit: u}, nil
}

func (c *converter) scope(sp *profilespb.ScopeProfiles) (*pprofprofile.Profile, error) {
	n := len(sp.Profiles)
	order := scopeAttribute(sp.Scope, otlpattr.SampleTypeOrder).GetArrayValue().GetValues()
	if len(order) != n {
		return nil, fmt.Errorf("%s has %d entries for %d profiles", otlpattr.SampleTypeOrder, len(order), n)
	}
	c.p = &pprofprofile.Profile{
		SampleType:        make([]*pprofprofile.ValueType, n),
		DefaultSampleType: scopeAttribute(sp.Scope, otlpattr.DefaultSampleType).GetStringValue(),
	}
	c.mappings = make(map[int32]*pprofprofile.Mapping)
	c.locations = make(map[int32]*pprofprofile.Location)
	c.functions = make(map[int32]*pprofprofile.Function)
	samples := make(map[string]*pprofprofile.Sample)
	var keys []string

	for j, prof := range sp.Profiles {
		pos := order[j].GetIntValue()
		if pos < 0 || pos >= int64(n) || c.p.SampleType[pos] != nil {
			return nil, fmt.Errorf("%s is not a permutation", otlpattr.SampleTypeOrder)
		}
		vt, err := c.valueType(prof.SampleType)
		if err != nil {
			return nil, err
		}
		c.p.SampleType[pos] = vt
		if j == 0 {
			c.p.TimeNanos = int64(prof.TimeUnixNano)
			c.p.DurationNanos = int64(prof.DurationNano)
			c.p.Period = prof.Period
			if prof.PeriodType != nil {
				if c.p.PeriodType, err = c.valueType(prof.PeriodType); err != nil {
					return nil, err
				}
			}
		}
		for _, s := range prof.Samples {
			if len(s.Values) != 1 {
				return nil, fmt.Errorf("sample has %d values, want 1", len(s.Values))
			}
			attrs := slices.Clone(s.AttributeIndices)
			slices.Sort(attrs)
			key := fmt.Sprint(s.StackIndex, s.LinkIndex, attrs)
			ps := samples[key]
			if ps == nil {
				if ps, err = c.sample(s, n); err != nil {
					return nil, err
				}
				samples[key] = ps
				keys = append(keys, key)
			}
			ps.Value[pos] += s.Values[0]
		}
	}
	for _, k := range keys {
		c.p.Sample = append(c.p.Sample, samples[k])
	}
	return c.p, nil
}

func (c *converter) sample(s *profilespb.Sample, n int) (*pprofprofile.Sample, error) {
	ps := &pprofprofile.Sample{Value: make([]int64, n)}
	if s.StackIndex < 0 || int(s.StackIndex) >= len(c.d.StackTable) {
		return nil, fmt.Errorf("stack index %d out of range", s.StackIndex)
	}
	for _, li := range c.d.StackTable[s.StackIndex].GetLocationIndices() {
		loc, err := c.location(li)
		if err != nil {
			return nil, err
		}
		ps.Location = append(ps.Location, loc)
	}
	for _, ai := range s.AttributeIndices {
		if ai < 0 || int(ai) >= len(c.d.AttributeTable) {
			return nil, fmt.Errorf("attribute index %d out of range", ai)
		}
		kv := c.d.AttributeTable[ai]
		key, err := c.str(kv.GetKeyStrindex())
		if err != nil {
			return nil, err
		}
		unit, err := c.str(kv.GetUnitStrindex())
		if err != nil {
			return nil, err
		}
		if err := addLabel(ps, key, unit, kv.GetValue()); err != nil {
			return nil, err
		}
	}
	for k, u := range ps.NumUnit {
		if !slices.ContainsFunc(u, func(s string) bool { return s != "" }) {
			delete(ps.NumUnit, k)
		}
	}
	if s.LinkIndex != 0 {
		if s.LinkIndex < 0 || int(s.LinkIndex) >= len(c.d.LinkTable) {
			return nil, fmt.Errorf("link index %d out of range", s.LinkIndex)
		}
		l := c.d.LinkTable[s.LinkIndex]
		if ps.Label == nil {
			ps.Label = make(map[string][]string)
		}
		ps.Label[labels.TraceIDKey] = append(ps.Label[labels.TraceIDKey], hex.EncodeToString(l.GetTraceId()))
		ps.Label[labels.SpanIDKey] = append(ps.Label[labels.SpanIDKey], hex.EncodeToString(l.GetSpanId()))
	}
	return ps, nil
}

func addLabel(ps *pprofprofile.Sample, key, unit string, v *commonpb.AnyValue) error {
	str := func(s string) {
		if ps.Label == nil {
			ps.Label = make(map[string][]string)
		}
		ps.Label[key] = append(ps.Label[key], s)
	}
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		str(x.StringValue)
	case *commonpb.AnyValue_BoolValue:
		str(strconv.FormatBool(x.BoolValue))
	case *commonpb.AnyValue_IntValue:
		if ps.NumLabel == nil {
			ps.NumLabel = make(map[string][]int64)
			ps.NumUnit = make(map[string][]string)
		}
		ps.NumLabel[key] = append(ps.NumLabel[key], x.IntValue)
		ps.NumUnit[key] = append(ps.NumUnit[key], unit)
	case *commonpb.AnyValue_ArrayValue:
		for _, e := range x.ArrayValue.GetValues() {
			if err := addLabel(ps, key, unit, e); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("attribute %q has a value of type %T that pprof labels cannot hold", key, x)
	}
	return nil
}

func (c *converter) location(i int32) (*pprofprofile.Location, error) {
	if l := c.locations[i]; l != nil {
		return l, nil
	}
	if i < 0 || int(i) >= len(c.d.LocationTable) {
		return nil, fmt.Errorf("location index %d out of range", i)
	}
	src := c.d.LocationTable[i]
	loc := &pprofprofile.Location{ID: uint64(len(c.p.Location) + 1), Address: src.Address}
	if src.MappingIndex != 0 {
		m, err := c.mapping(src.MappingIndex)
		if err != nil {
			return nil, err
		}
		loc.Mapping = m
	}
	for _, ln := range src.Lines {
		f, err := c.function(ln.FunctionIndex)
		if err != nil {
			return nil, err
		}
		loc.Line = append(loc.Line, pprofprofile.Line{Function: f, Line: ln.Line, Column: ln.Column})
	}
	attrs, err := c.boolAttrs(src.AttributeIndices)
	if err != nil {
		return nil, err
	}
	loc.IsFolded = attrs[otlpattr.LocationIsFolded]
	c.p.Location = append(c.p.Location, loc)
	c.locations[i] = loc
	return loc, nil
}

// boolAttrs returns, by key, the boolean value of each attribute among idxs;
// attributes of other types read as false.
func (c *converter) boolAttrs(idxs []int32) (map[string]bool, error) {
	out := make(map[string]bool)
	for _, a := range idxs {
		if a < 0 || int(a) >= len(c.d.AttributeTable) {
			return nil, fmt.Errorf("attribute index %d out of range", a)
		}
		kv := c.d.AttributeTable[a]
		key, err := c.str(kv.GetKeyStrindex())
		if err != nil {
			return nil, err
		}
		out[key] = kv.GetValue().GetBoolValue()
	}
	return out, nil
}

func (c *converter) mapping(i int32) (*pprofprofile.Mapping, error) {
	if m := c.mappings[i]; m != nil {
		return m, nil
	}
	if i < 0 || int(i) >= len(c.d.MappingTable) {
		return nil, fmt.Errorf("mapping index %d out of range", i)
	}
	src := c.d.MappingTable[i]
	file, err := c.str(src.FilenameStrindex)
	if err != nil {
		return nil, err
	}
	m := &pprofprofile.Mapping{
		ID:     uint64(len(c.p.Mapping) + 1),
		Start:  src.MemoryStart,
		Limit:  src.MemoryLimit,
		Offset: src.FileOffset,
		File:   file,
	}
	flags, err := c.boolAttrs(src.AttributeIndices)
	if err != nil {
		return nil, err
	}
	m.HasFunctions = flags[otlpattr.MappingHasFunctions]
	m.HasFilenames = flags[otlpattr.MappingHasFilenames]
	m.HasLineNumbers = flags[otlpattr.MappingHasLineNumbers]
	m.HasInlineFrames = flags[otlpattr.MappingHasInlineFrames]
	for _, a := range src.AttributeIndices {
		kv := c.d.AttributeTable[a]
		if key, _ := c.str(kv.GetKeyStrindex()); key == otlpattr.BuildIDGNU {
			m.BuildID = kv.GetValue().GetStringValue()
		}
	}
	c.p.Mapping = append(c.p.Mapping, m)
	c.mappings[i] = m
	return m, nil
}

func (c *converter) function(i int32) (*pprofprofile.Function, error) {
	if f := c.functions[i]; f != nil {
		return f, nil
	}
	if i < 0 || int(i) >= len(c.d.FunctionTable) {
		return nil, fmt.Errorf("function index %d out of range", i)
	}
	src := c.d.FunctionTable[i]
	f := &pprofprofile.Function{ID: uint64(len(c.p.Function) + 1), StartLine: src.StartLine}
	var err error
	if f.Name, err = c.str(src.NameStrindex); err != nil {
		return nil, err
	}
	if f.SystemName, err = c.str(src.SystemNameStrindex); err != nil {
		return nil, err
	}
	if f.Filename, err = c.str(src.FilenameStrindex); err != nil {
		return nil, err
	}
	c.p.Function = append(c.p.Function, f)
	c.functions[i] = f
	return f, nil
}

// StackTotals sums the values of sample type sampleIndex of p per sample
// identity. The key lists the frames leaf first, inlined frames included, as
// "function:line" joined by ";", then "|" and the sorted labels: "key=value"
// for string labels and "key=number" or "key=number unit" for numeric ones,
// joined by ",". A location without lines shows as its hex address. Keys
// whose total is zero are left out, so that a profile compares equal to a
// copy that dropped its zero-valued samples.
func StackTotals(p *pprofprofile.Profile, sampleIndex int) map[string]int64 {
	totals := make(map[string]int64)
	var b strings.Builder
	var lbls []string
	for _, s := range p.Sample {
		if sampleIndex < 0 || sampleIndex >= len(s.Value) {
			continue
		}
		b.Reset()
		first := true
		for _, loc := range s.Location {
			if len(loc.Line) == 0 {
				if !first {
					b.WriteByte(';')
				}
				fmt.Fprintf(&b, "%#x", loc.Address)
				first = false
			}
			for _, ln := range loc.Line {
				if !first {
					b.WriteByte(';')
				}
				name := ""
				if ln.Function != nil {
					name = ln.Function.Name
				}
				fmt.Fprintf(&b, "%s:%d", name, ln.Line)
				first = false
			}
		}
		lbls = lbls[:0]
		for k, vs := range s.Label {
			for _, v := range vs {
				lbls = append(lbls, k+"="+v)
			}
		}
		for k, vs := range s.NumLabel {
			units := s.NumUnit[k]
			for i, v := range vs {
				l := k + "=" + strconv.FormatInt(v, 10)
				if i < len(units) && units[i] != "" {
					l += " " + units[i]
				}
				lbls = append(lbls, l)
			}
		}
		slices.Sort(lbls)
		b.WriteByte('|')
		b.WriteString(strings.Join(lbls, ","))
		totals[b.String()] += s.Value[sampleIndex]
	}
	for k, v := range totals {
		if v == 0 {
			delete(totals, k)
		}
	}
	return totals
}
