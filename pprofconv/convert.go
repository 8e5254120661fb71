package pprofconv

import (
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	pprof "github.com/google/pprof/profile"
	"github.com/pprofotel/profiler/internal/labelkey"
	"github.com/pprofotel/profiler/internal/otlpattr"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
)

// Filter selects the windows Convert merges. The zero Filter selects all.
type Filter struct {
	// Service keeps the windows of the resources whose service.name is
	// Service; empty keeps all.
	Service string
	// Start and End keep the windows that overlap [Start, End); a zero
	// Start or End leaves that side open.
	Start, End time.Time
	// Profiles keeps the runtime profiles named ("cpu", "heap",
	// "goroutine", "mutex", "block", "offcpu", "goroutineleak"); empty
	// keeps all.
	Profiles []string
}

// Convert merges the windows of reqs that f selects into one pprof profile
// per runtime profile, keyed by its name ("cpu", "heap", ...). Each profile
// has all the sample types of its runtime profile, in the order
// runtime/pprof writes them; a stack that has a value for some of them has
// zero for the others.
//
// Samples with the same stack, labels and span link are merged, across
// windows too: CPU time, allocations, contentions and delays add up over
// the windows. The heap's inuse_objects and inuse_space, the goroutine
// count and the leaked goroutines' are snapshots at the end of a window, so
// the merged profile holds the latest snapshot of each process (resource)
// instead of a sum.
//
// A window read twice (two copies of a file, or a file and the Collector's
// copy of the same request) is converted once: a window is told by the
// profile_id of its Profiles and, since the parts of a window split into
// several requests share those ids, by its samples. The Report lists the
// windows left out.
//
// A span link comes back as the labels trace_id and span_id, in lower-case
// hex; other sample attributes as string or numeric labels. Every returned
// profile passes pprof's CheckValid.
//
// Convert checks what it reads before it builds anything from it, and
// returns an error naming the request's Source and the profile when an
// index points outside the dictionary, a scope does not say which runtime
// profile it holds, windows of one runtime profile have different sample
// or period types, or the values of a sample type, within a window or
// across windows, times the period where pprof wants them so, add up past
// the int64 maximum (no profiler counts that far; pprof's Merge would
// wrap). A value below zero, which no profiler writes either, is read as
// zero and counted in the Report.
//
// Memory: a pprof sample holds each location of its stack and each label
// value, where OTLP lets many samples cite one stack or one attribute, so
// a small request can stand for a huge pprof profile. Convert refuses, with
// an error saying so, input whose pprof form would pass ExpansionPerByte
// units per byte of its OTLP protobuf encoding, plus ExpansionBase (a
// location or a sample value is a unit, a label value 8). What Convert
// allocates on top of the decoded requests is at most 40 bytes a unit, the
// merge included, and writing the profile with WriteFile as much again
// (TestConvertMemoryBound, and TestCommandMemoryBound in cmd/pprofotel).
func Convert(reqs []Request, f Filter) (map[string]*pprof.Profile, Report, error) {
	type part struct {
		p        *pprof.Profile
		cols     []column
		resource string
		source   string
	}
	var rep Report
	room := newBudget(reqs)
	parts := make(map[string][]part)
	// latest is the start of the last window, by profile name and resource.
	latest := make(map[[2]string]int64)
	// seen holds the windows converted, with where each was read.
	seen := make(map[windowID]string)
	seed := maphash.MakeSeed()
	for _, r := range reqs {
		d := r.Request.GetDictionary()
		for _, rp := range r.Request.GetResourceProfiles() {
			res := resourceKey(d, rp.GetResource().GetAttributes())
			if f.Service != "" && text(d, attr(d, rp.GetResource().GetAttributes(), attrServiceName)) != f.Service {
				continue
			}
			for i, sp := range rp.GetScopeProfiles() {
				if len(sp.GetProfiles()) == 0 || !f.selects(sp.Profiles[0]) {
					continue
				}
				name := text(d, attr(d, sp.GetScope().GetAttributes(), attrProfileName))
				if name == "" {
					return nil, rep, fmt.Errorf("%s: scope_profiles[%d] lacks the attribute %s naming its runtime profile: not written by pprofotel", r.Source, i, attrProfileName)
				}
				if len(f.Profiles) > 0 && !slices.Contains(f.Profiles, name) {
					continue
				}
				c := &converter{d: d, room: room, report: &rep}
				p, cols, err := c.scope(name, sp)
				if err != nil {
					return nil, rep, fmt.Errorf("%s: %s profile: %w", r.Source, name, err)
				}
				if id, ok := identify(seed, name, sp, p); ok {
					if first, dup := seen[id]; dup {
						rep.Duplicates = append(rep.Duplicates, Duplicate{Profile: name, Source: r.Source, First: first})
						continue
					}
					seen[id] = r.Source
				}
				parts[name] = append(parts[name], part{p, cols, res, r.Source})
				k := [2]string{name, res}
				latest[k] = max(latest[k], p.TimeNanos)
			}
		}
	}
	out := make(map[string]*pprof.Profile, len(parts))
	for name, ps := range parts {
		srcs := make([]*pprof.Profile, 0, len(ps))
		sources := make([]string, 0, len(ps))
		for _, pt := range ps {
			if pt.p.TimeNanos < latest[[2]string{name, pt.resource}] {
				clearSnapshots(pt.p, pt.cols)
			}
			srcs = append(srcs, pt.p)
			sources = append(sources, pt.source)
		}
		merged, err := merge(srcs, sources)
		if err != nil {
			return nil, rep, fmt.Errorf("%s profile: %w", name, err)
		}
		out[name] = merged
	}
	return out, rep, nil
}

// selects reports whether the window of p overlaps f's time range.
func (f Filter) selects(p *profilespb.Profile) bool {
	start := nanos(p.GetTimeUnixNano())
	end := addSaturated(start, nanos(p.GetDurationNano()))
	if !f.Start.IsZero() && end <= f.Start.UnixNano() {
		return false
	}
	return f.End.IsZero() || start < f.End.UnixNano()
}

// clearSnapshots zeroes the snapshot columns of p, a window older than the
// latest of its process.
func clearSnapshots(p *pprof.Profile, cols []column) {
	for i, c := range cols {
		if c.snapshot {
			for _, s := range p.Sample {
				s.Value[i] = 0
			}
		}
	}
}

// merge merges srcs, read from sources, with pprof's Merge, which adds up
// the samples with the same stack and labels, after dropping the samples
// that hold only zeros. It checks first what Merge takes for granted, and
// names the sources that break it: the same period and sample types in
// every profile, and totals that int64 holds (Merge adds without a check).
func merge(srcs []*pprof.Profile, sources []string) (*pprof.Profile, error) {
	first := srcs[0]
	for i, p := range srcs[1:] {
		if !sameTypes(p.SampleType, first.SampleType) {
			return nil, fmt.Errorf("%s and %s: windows of different sample types, %s and %s: convert them apart (select with -from, -to or -service)",
				sources[0], sources[i+1], typeList(first.SampleType), typeList(p.SampleType))
		}
		if !sameTypes([]*pprof.ValueType{p.PeriodType}, []*pprof.ValueType{first.PeriodType}) {
			return nil, fmt.Errorf("%s and %s: windows of different period types, %s and %s: convert them apart (select with -from, -to or -service)",
				sources[0], sources[i+1], typeName(first.PeriodType), typeName(p.PeriodType))
		}
	}
	var duration int64
	for i, st := range first.SampleType {
		var total int64
		for j, p := range srcs {
			for _, s := range p.Sample {
				if total > math.MaxInt64-s.Value[i] {
					return nil, fmt.Errorf("%s values add up past the int64 maximum over the windows from %s to %s: not values a profiler writes",
						st.Type, sources[0], sources[j])
				}
				total += s.Value[i]
			}
		}
	}
	for _, p := range srcs {
		duration = addSaturated(duration, p.DurationNanos)
		p.Sample = slices.DeleteFunc(p.Sample, func(s *pprof.Sample) bool {
			return !slices.ContainsFunc(s.Value, func(v int64) bool { return v != 0 })
		})
	}
	// Merge takes the earliest time and the sum of the durations, which
	// is the span of the windows when they follow each other.
	m, err := pprof.Merge(srcs)
	if err != nil {
		return nil, err
	}
	m.DurationNanos = duration
	m.DefaultSampleType = first.DefaultSampleType
	if err := m.CheckValid(); err != nil {
		return nil, err
	}
	return m, nil
}

// sameTypes reports whether a and b hold the same types and units.
func sameTypes(a, b []*pprof.ValueType) bool {
	return slices.EqualFunc(a, b, func(x, y *pprof.ValueType) bool { return typeName(x) == typeName(y) })
}

// typeList spells sample types as go tool pprof shows them.
func typeList(ts []*pprof.ValueType) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = typeName(t)
	}
	return "[" + strings.Join(names, " ") + "]"
}

// typeName spells a value type as type/unit, or "none".
func typeName(t *pprof.ValueType) string {
	if t == nil || t.Type == "" && t.Unit == "" {
		return "none"
	}
	return t.Type + "/" + t.Unit
}

// resourceKey identifies a resource by its attributes, in a canonical order.
func resourceKey(d *profilespb.ProfilesDictionary, kvs []*commonpb.KeyValue) string {
	keys := make([]string, 0, len(kvs))
	for _, kv := range kvs {
		keys = append(keys, key(d, kv)+"="+text(d, kv.GetValue()))
	}
	sort.Strings(keys)
	return strings.Join(keys, "\x00")
}

// key returns the key of kv. OTLP lets a producer give it as an index into
// the dictionary's string table: the Collector does, the profiler spells it.
func key(d *profilespb.ProfilesDictionary, kv *commonpb.KeyValue) string {
	if k := kv.GetKey(); k != "" {
		return k
	}
	if i := kv.GetKeyStrindex(); i > 0 && int(i) < len(d.GetStringTable()) {
		return d.StringTable[i]
	}
	return ""
}

// attr returns the value of the attribute named k among kvs, or nil.
func attr(d *profilespb.ProfilesDictionary, kvs []*commonpb.KeyValue, k string) *commonpb.AnyValue {
	for _, kv := range kvs {
		if key(d, kv) == k {
			return kv.GetValue()
		}
	}
	return nil
}

// text returns a string value, given as is or as a string table index, and
// other scalars formatted; "" for nil.
func text(d *profilespb.ProfilesDictionary, v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_StringValueStrindex:
		if i := x.StringValueStrindex; i >= 0 && int(i) < len(d.GetStringTable()) {
			return d.StringTable[i]
		}
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	}
	return ""
}

// converter rebuilds the pprof profile of one scope, resolving the
// dictionary's indices once each.
type converter struct {
	d *profilespb.ProfilesDictionary
	// room is what is left of the expansion budget of the conversion.
	room *budget
	// report counts the values repaired.
	report    *Report
	p         *pprof.Profile
	mappings  map[int32]*pprof.Mapping
	locations map[int32]*pprof.Location
	functions map[int32]*pprof.Function
}

func (c *converter) str(i int32) (string, error) {
	if i < 0 || int(i) >= len(c.d.GetStringTable()) {
		return "", fmt.Errorf("string index %d out of range [0,%d)", i, len(c.d.GetStringTable()))
	}
	return c.d.StringTable[i], nil
}

func (c *converter) valueType(vt *profilespb.ValueType) (pprof.ValueType, error) {
	t, err := c.str(vt.GetTypeStrindex())
	if err != nil {
		return pprof.ValueType{}, err
	}
	u, err := c.str(vt.GetUnitStrindex())
	if err != nil {
		return pprof.ValueType{}, err
	}
	return pprof.ValueType{Type: t, Unit: u}, nil
}

func (c *converter) scope(name string, sp *profilespb.ScopeProfiles) (*pprof.Profile, []column, error) {
	sent, cols, err := c.scopeColumns(name, sp)
	if err != nil {
		return nil, nil, err
	}
	if err := c.newProfile(sp, sent, cols); err != nil {
		return nil, nil, err
	}
	c.mappings = make(map[int32]*pprof.Mapping)
	c.locations = make(map[int32]*pprof.Location)
	c.functions = make(map[int32]*pprof.Function)
	if err := c.addSamples(sp, cols); err != nil {
		return nil, nil, err
	}
	if err := c.scaleColumns(cols); err != nil {
		return nil, nil, err
	}
	if err := c.p.CheckValid(); err != nil {
		return nil, nil, err
	}
	return c.p, cols, nil
}

// scopeColumns returns the sample type each of sp's profiles was sent
// as, and the columns of the pprof profile they become.
func (c *converter) scopeColumns(name string, sp *profilespb.ScopeProfiles) ([]otlpattr.SampleType, []column, error) {
	sent := make([]otlpattr.SampleType, len(sp.Profiles))
	for j, prof := range sp.Profiles {
		st, err := c.valueType(prof.GetSampleType())
		if err != nil {
			return nil, nil, err
		}
		var pt pprof.ValueType
		if prof.PeriodType != nil {
			if pt, err = c.valueType(prof.PeriodType); err != nil {
				return nil, nil, err
			}
		}
		sent[j] = sentType(name, st, pt)
	}
	var order []int64
	if v := attr(c.d, sp.GetScope().GetAttributes(), attrSampleTypeOrder); v != nil {
		order = []int64{}
		for _, e := range v.GetArrayValue().GetValues() {
			order = append(order, e.GetIntValue())
		}
	}
	cols, err := columns(name, sent, order)
	return sent, cols, err
}

// newProfile sets c.p to an empty pprof profile with cols for sample
// types, its time, duration and period those of sp's first profile.
func (c *converter) newProfile(sp *profilespb.ScopeProfiles, sent []otlpattr.SampleType, cols []column) error {
	first := sp.Profiles[0]
	if first.GetTimeUnixNano() > math.MaxInt64 || first.GetDurationNano() > math.MaxInt64 {
		return fmt.Errorf("time %d and duration %d ns: past what pprof holds (int64 nanoseconds)", first.GetTimeUnixNano(), first.GetDurationNano())
	}
	c.p = &pprof.Profile{
		SampleType:        make([]*pprof.ValueType, len(cols)),
		DefaultSampleType: text(c.d, attr(c.d, sp.GetScope().GetAttributes(), attrDefaultSampleType)),
		TimeNanos:         int64(first.GetTimeUnixNano()),
		DurationNanos:     int64(first.GetDurationNano()),
		Period:            c.nonNegative(first.GetPeriod()),
		// pprof's Parse gives a profile without a period type an empty
		// one, and its Merge takes one for granted.
		PeriodType: &pprof.ValueType{},
	}
	for i := range cols {
		c.p.SampleType[i] = &cols[i].ValueType
	}
	if first.PeriodType != nil {
		pt := sent[0].PprofPeriod
		c.p.PeriodType = &pprof.ValueType{Type: pt.Type, Unit: pt.Unit}
	}
	return nil
}

// addSamples adds the samples of sp's profiles to c.p, each profile's
// values in its column: samples of the same stack, link and attributes
// become one.
func (c *converter) addSamples(sp *profilespb.ScopeProfiles, cols []column) error {
	type identity struct {
		stack, link int32
		attrs       string
	}
	samples := make(map[identity]*pprof.Sample)
	for pos, col := range cols {
		if col.profile < 0 {
			continue
		}
		for _, s := range sp.Profiles[col.profile].GetSamples() {
			// A sample with timestamps holds one value per event
			// (the off-CPU profile's waits); pprof has no times, so
			// its events are added up.
			if n := len(s.TimestampsUnixNano); n == 0 && len(s.Values) != 1 || n != 0 && len(s.Values) != n {
				return fmt.Errorf("sample has %d values for %d timestamps, want 1 value or one per timestamp", len(s.Values), n)
			}
			attrs := slices.Clone(s.AttributeIndices)
			slices.Sort(attrs)
			id := identity{s.StackIndex, s.LinkIndex, fmt.Sprint(attrs)}
			ps := samples[id]
			if ps == nil {
				var err error
				if ps, err = c.sample(s, len(cols)); err != nil {
					return err
				}
				samples[id] = ps
				c.p.Sample = append(c.p.Sample, ps)
			}
			for _, v := range s.Values {
				v = c.nonNegative(v)
				if ps.Value[pos] > math.MaxInt64-v {
					return fmt.Errorf("%s values add up past the int64 maximum: not values a profiler writes", col.Type)
				}
				ps.Value[pos] += v
			}
		}
	}
	return nil
}

// scaleColumns fills the columns scaled from another by the period.
func (c *converter) scaleColumns(cols []column) error {
	for pos, col := range cols {
		if col.scaledFrom < 0 {
			continue
		}
		for _, s := range c.p.Sample {
			v := s.Value[col.scaledFrom]
			if c.p.Period != 0 && v > math.MaxInt64/c.p.Period {
				return fmt.Errorf("%s values, %s times the period %d, pass the int64 maximum: not values a profiler writes", col.Type, cols[col.scaledFrom].Type, c.p.Period)
			}
			s.Value[pos] = v * c.p.Period
		}
	}
	return nil
}

func (c *converter) sample(s *profilespb.Sample, n int) (*pprof.Sample, error) {
	if s.StackIndex < 0 || int(s.StackIndex) >= len(c.d.GetStackTable()) {
		return nil, fmt.Errorf("stack index %d out of range [0,%d)", s.StackIndex, len(c.d.GetStackTable()))
	}
	stack := c.d.StackTable[s.StackIndex].GetLocationIndices()
	if err := c.room.spend(1 + n + len(stack)); err != nil {
		return nil, err
	}
	ps := &pprof.Sample{Value: make([]int64, n), Location: make([]*pprof.Location, 0, len(stack))}
	for _, li := range stack {
		loc, err := c.location(li)
		if err != nil {
			return nil, err
		}
		ps.Location = append(ps.Location, loc)
	}
	for _, ai := range s.AttributeIndices {
		kv, err := c.attribute(ai)
		if err != nil {
			return nil, err
		}
		k, err := c.str(kv.GetKeyStrindex())
		if err != nil {
			return nil, err
		}
		unit, err := c.str(kv.GetUnitStrindex())
		if err != nil {
			return nil, err
		}
		if err := c.addLabel(ps, k, unit, kv.GetValue()); err != nil {
			return nil, err
		}
	}
	// pprof wants NumUnit only for keys that have a unit.
	for k, u := range ps.NumUnit {
		if !slices.ContainsFunc(u, func(s string) bool { return s != "" }) {
			delete(ps.NumUnit, k)
		}
	}
	if s.LinkIndex != 0 {
		if s.LinkIndex < 0 || int(s.LinkIndex) >= len(c.d.GetLinkTable()) {
			return nil, fmt.Errorf("link index %d out of range [0,%d)", s.LinkIndex, len(c.d.GetLinkTable()))
		}
		if err := c.room.spend(2 * labelUnits); err != nil {
			return nil, err
		}
		l := c.d.LinkTable[s.LinkIndex]
		if ps.Label == nil {
			ps.Label = make(map[string][]string)
		}
		ps.Label[labelkey.TraceID] = append(ps.Label[labelkey.TraceID], hex.EncodeToString(l.GetTraceId()))
		ps.Label[labelkey.SpanID] = append(ps.Label[labelkey.SpanID], hex.EncodeToString(l.GetSpanId()))
	}
	return ps, nil
}

func (c *converter) attribute(i int32) (*profilespb.KeyValueAndUnit, error) {
	if i < 0 || int(i) >= len(c.d.GetAttributeTable()) {
		return nil, fmt.Errorf("attribute index %d out of range [0,%d)", i, len(c.d.GetAttributeTable()))
	}
	return c.d.AttributeTable[i], nil
}

func (c *converter) addLabel(ps *pprof.Sample, k, unit string, v *commonpb.AnyValue) error {
	if err := c.room.spend(labelUnits); err != nil {
		return err
	}
	str := func(s string) {
		if ps.Label == nil {
			ps.Label = make(map[string][]string)
		}
		ps.Label[k] = append(ps.Label[k], s)
	}
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		str(x.StringValue)
	case *commonpb.AnyValue_StringValueStrindex:
		s, err := c.str(x.StringValueStrindex)
		if err != nil {
			return err
		}
		str(s)
	case *commonpb.AnyValue_BoolValue:
		str(strconv.FormatBool(x.BoolValue))
	case *commonpb.AnyValue_IntValue:
		if ps.NumLabel == nil {
			ps.NumLabel = make(map[string][]int64)
			ps.NumUnit = make(map[string][]string)
		}
		ps.NumLabel[k] = append(ps.NumLabel[k], x.IntValue)
		ps.NumUnit[k] = append(ps.NumUnit[k], unit)
	case *commonpb.AnyValue_ArrayValue:
		if vs := x.ArrayValue.GetValues(); len(vs) > 0 {
			// One allocation for the whole array, not one per doubling.
			if _, ok := vs[0].GetValue().(*commonpb.AnyValue_IntValue); ok {
				if ps.NumLabel == nil {
					ps.NumLabel = make(map[string][]int64)
					ps.NumUnit = make(map[string][]string)
				}
				ps.NumLabel[k] = slices.Grow(ps.NumLabel[k], len(vs))
				ps.NumUnit[k] = slices.Grow(ps.NumUnit[k], len(vs))
			} else {
				if ps.Label == nil {
					ps.Label = make(map[string][]string)
				}
				ps.Label[k] = slices.Grow(ps.Label[k], len(vs))
			}
		}
		for _, e := range x.ArrayValue.GetValues() {
			if err := c.addLabel(ps, k, unit, e); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("attribute %q has a value of type %T that pprof labels cannot hold", k, x)
	}
	return nil
}

func (c *converter) location(i int32) (*pprof.Location, error) {
	if l := c.locations[i]; l != nil {
		return l, nil
	}
	if i < 0 || int(i) >= len(c.d.GetLocationTable()) {
		return nil, fmt.Errorf("location index %d out of range [0,%d)", i, len(c.d.GetLocationTable()))
	}
	src := c.d.LocationTable[i]
	loc := &pprof.Location{ID: uint64(len(c.p.Location) + 1), Address: src.Address}
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
		loc.Line = append(loc.Line, pprof.Line{Function: f, Line: ln.Line, Column: ln.Column})
	}
	attrs, err := c.boolAttrs(src.AttributeIndices)
	if err != nil {
		return nil, err
	}
	loc.IsFolded = attrs[attrLocationIsFolded]
	c.p.Location = append(c.p.Location, loc)
	c.locations[i] = loc
	return loc, nil
}

// boolAttrs returns, by key, the boolean value of each attribute among
// idxs; attributes of other types read as false.
func (c *converter) boolAttrs(idxs []int32) (map[string]bool, error) {
	out := make(map[string]bool)
	for _, a := range idxs {
		kv, err := c.attribute(a)
		if err != nil {
			return nil, err
		}
		k, err := c.str(kv.GetKeyStrindex())
		if err != nil {
			return nil, err
		}
		out[k] = kv.GetValue().GetBoolValue()
	}
	return out, nil
}

func (c *converter) mapping(i int32) (*pprof.Mapping, error) {
	if m := c.mappings[i]; m != nil {
		return m, nil
	}
	if i < 0 || int(i) >= len(c.d.GetMappingTable()) {
		return nil, fmt.Errorf("mapping index %d out of range [0,%d)", i, len(c.d.GetMappingTable()))
	}
	src := c.d.MappingTable[i]
	file, err := c.str(src.FilenameStrindex)
	if err != nil {
		return nil, err
	}
	m := &pprof.Mapping{
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
	m.HasFunctions = flags[attrMappingHasFunctions]
	m.HasFilenames = flags[attrMappingHasFilenames]
	m.HasLineNumbers = flags[attrMappingHasLineNumbers]
	m.HasInlineFrames = flags[attrMappingHasInlineFrames]
	for _, a := range src.AttributeIndices {
		kv := c.d.AttributeTable[a]
		if k, _ := c.str(kv.GetKeyStrindex()); k == attrBuildIDGNU {
			m.BuildID = text(c.d, kv.GetValue())
		}
	}
	c.p.Mapping = append(c.p.Mapping, m)
	c.mappings[i] = m
	return m, nil
}

func (c *converter) function(i int32) (*pprof.Function, error) {
	if f := c.functions[i]; f != nil {
		return f, nil
	}
	if i < 0 || int(i) >= len(c.d.GetFunctionTable()) {
		return nil, fmt.Errorf("function index %d out of range [0,%d)", i, len(c.d.GetFunctionTable()))
	}
	src := c.d.FunctionTable[i]
	f := &pprof.Function{ID: uint64(len(c.p.Function) + 1), StartLine: src.StartLine}
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
