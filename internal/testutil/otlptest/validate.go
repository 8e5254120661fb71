package otlptest

import (
	"errors"
	"fmt"
	"slices"

	"github.com/pprofotel/profiler/internal/otlpattr"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/protobuf/proto"
)

// Names of the rules that Validate checks. Every error Validate reports
// starts with one of them.
const (
	RuleRequest    = "request"     // request shape: resource and scope profiles present
	RuleDictionary = "dictionary"  // dictionary present with all its tables
	RuleZeroEntry  = "zero-entry"  // table[0] present and equal to the zero value
	RuleDuplicate  = "duplicate"   // no two equal entries in a table
	RuleOrphan     = "orphan"      // every entry but index 0 is referenced
	RuleRange      = "index-range" // every index points into its table
	RuleUniqueKeys = "unique-keys" // attribute_indices of one message have distinct keys
	RuleLink       = "link"        // link ids are 16 and 8 bytes and not zero
	RuleFunction   = "function"    // a function has a name, system name or file name
	RuleProfile    = "profile"     // profile fields: sample type, time, id, name
	RuleSample     = "sample"      // one non-zero value and a non-zero stack per sample
	RuleScope      = "scope"       // scope and its pprof attributes
)

// Validate checks req against the v1development profiles rules and the
// conventions of package otlp. It returns all violations joined, each
// prefixed with the name of its rule (the Rule constants), or nil.
func Validate(req *collectorpb.ExportProfilesServiceRequest) error {
	v := &validator{}
	v.run(req)
	return errors.Join(v.errs...)
}

type validator struct {
	errs []error
	d    *profilespb.ProfilesDictionary
	// Reachability of each table entry.
	strings, mappings, locations, functions, links, attrs, stacks []bool
}

func (v *validator) fail(rule, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s", rule, fmt.Sprintf(format, args...)))
}

// ref checks that idx points into a table of n entries and marks it
// reachable when reach is set.
func (v *validator) ref(marks []bool, table string, idx int32, where string, reach bool) bool {
	if idx < 0 || int(idx) >= len(marks) {
		v.fail(RuleRange, "%s: %s index %d out of range [0,%d)", where, table, idx, len(marks))
		return false
	}
	if reach {
		marks[idx] = true
	}
	return true
}

func (v *validator) str(idx int32, where string, reach bool) {
	v.ref(v.strings, "string_table", idx, where, reach)
}

func (v *validator) strAt(idx int32) string {
	if idx >= 0 && int(idx) < len(v.d.StringTable) {
		return v.d.StringTable[idx]
	}
	return fmt.Sprintf("<string %d>", idx)
}

// attrRefs checks a list of attribute indices and that their keys are unique.
func (v *validator) attrRefs(idxs []int32, where string, reach bool) {
	seen := make(map[string]bool, len(idxs))
	for _, a := range idxs {
		if !v.ref(v.attrs, "attribute_table", a, where, reach) {
			continue
		}
		kv := v.d.AttributeTable[a]
		if kv == nil {
			continue // reported with the table
		}
		key := v.strAt(kv.KeyStrindex)
		if seen[key] {
			v.fail(RuleUniqueKeys, "%s: attribute key %q appears more than once", where, key)
		}
		seen[key] = true
	}
}

func (v *validator) run(req *collectorpb.ExportProfilesServiceRequest) {
	if req == nil {
		v.fail(RuleRequest, "request is nil")
		return
	}
	v.d = req.Dictionary
	if v.d == nil {
		v.fail(RuleDictionary, "request has no dictionary")
		return
	}
	d := v.d
	v.strings = make([]bool, len(d.StringTable))
	v.mappings = make([]bool, len(d.MappingTable))
	v.locations = make([]bool, len(d.LocationTable))
	v.functions = make([]bool, len(d.FunctionTable))
	v.links = make([]bool, len(d.LinkTable))
	v.attrs = make([]bool, len(d.AttributeTable))
	v.stacks = make([]bool, len(d.StackTable))
	v.zeroEntries()
	v.duplicates()

	if len(req.ResourceProfiles) == 0 {
		v.fail(RuleRequest, "request has no resource_profiles")
	}
	for r, rp := range req.ResourceProfiles {
		if rp == nil {
			v.fail(RuleRequest, "resource_profiles[%d] is nil", r)
			continue
		}
		for s, sp := range rp.ScopeProfiles {
			v.scopeProfiles(sp, fmt.Sprintf("resource_profiles[%d].scope_profiles[%d]", r, s))
		}
	}

	// Follow references table by table, in an order where every table is
	// visited after all tables that refer to it.
	for i, st := range d.StackTable {
		if st == nil {
			continue
		}
		for _, l := range st.LocationIndices {
			v.ref(v.locations, "location_table", l, fmt.Sprintf("stack_table[%d]", i), v.stacks[i])
		}
	}
	for i, loc := range d.LocationTable {
		if loc == nil {
			continue
		}
		where := fmt.Sprintf("location_table[%d]", i)
		v.ref(v.mappings, "mapping_table", loc.MappingIndex, where, v.locations[i])
		v.attrRefs(loc.AttributeIndices, where, v.locations[i])
		for j, ln := range loc.Lines {
			if ln == nil {
				v.fail(RuleRange, "%s.lines[%d] is nil", where, j)
				continue
			}
			v.ref(v.functions, "function_table", ln.FunctionIndex, fmt.Sprintf("%s.lines[%d]", where, j), v.locations[i])
		}
	}
	for i, f := range d.FunctionTable {
		if f == nil {
			continue
		}
		where := fmt.Sprintf("function_table[%d]", i)
		v.str(f.NameStrindex, where+".name", v.functions[i])
		v.str(f.SystemNameStrindex, where+".system_name", v.functions[i])
		v.str(f.FilenameStrindex, where+".filename", v.functions[i])
		if i > 0 && f.NameStrindex == 0 && f.SystemNameStrindex == 0 && f.FilenameStrindex == 0 {
			v.fail(RuleFunction, "%s has no name, system name or file name", where)
		}
	}
	for i, m := range d.MappingTable {
		if m == nil {
			continue
		}
		where := fmt.Sprintf("mapping_table[%d]", i)
		v.str(m.FilenameStrindex, where+".filename", v.mappings[i])
		v.attrRefs(m.AttributeIndices, where, v.mappings[i])
	}
	for i, a := range d.AttributeTable {
		if a == nil {
			continue
		}
		where := fmt.Sprintf("attribute_table[%d]", i)
		v.str(a.KeyStrindex, where+".key", v.attrs[i])
		v.str(a.UnitStrindex, where+".unit", v.attrs[i])
	}
	for i, l := range d.LinkTable {
		if i == 0 || l == nil {
			continue
		}
		if len(l.TraceId) != 16 || len(l.SpanId) != 8 {
			v.fail(RuleLink, "link_table[%d]: trace_id has %d bytes and span_id %d, want 16 and 8", i, len(l.TraceId), len(l.SpanId))
		} else if allZero(l.TraceId) || allZero(l.SpanId) {
			v.fail(RuleLink, "link_table[%d]: trace_id %x or span_id %x is all zero", i, l.TraceId, l.SpanId)
		}
	}

	v.orphans("string_table", v.strings)
	v.orphans("mapping_table", v.mappings)
	v.orphans("location_table", v.locations)
	v.orphans("function_table", v.functions)
	v.orphans("link_table", v.links)
	v.orphans("attribute_table", v.attrs)
	v.orphans("stack_table", v.stacks)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func (v *validator) zeroEntries() {
	d := v.d
	if len(d.StringTable) == 0 || d.StringTable[0] != "" {
		v.fail(RuleZeroEntry, "string_table[0] must be present and empty")
	}
	zeroMsg := func(table string, n int, at func(int) proto.Message, isNil func(int) bool) {
		if n == 0 {
			v.fail(RuleZeroEntry, "%s[0] must be present", table)
			return
		}
		if isNil(0) || proto.Size(at(0)) != 0 {
			v.fail(RuleZeroEntry, "%s[0] must be the zero value", table)
		}
		for i := 1; i < n; i++ {
			if isNil(i) {
				v.fail(RuleDictionary, "%s[%d] is nil", table, i)
			}
		}
	}
	zeroMsg("mapping_table", len(d.MappingTable), func(i int) proto.Message { return d.MappingTable[i] }, func(i int) bool { return d.MappingTable[i] == nil })
	zeroMsg("location_table", len(d.LocationTable), func(i int) proto.Message { return d.LocationTable[i] }, func(i int) bool { return d.LocationTable[i] == nil })
	zeroMsg("function_table", len(d.FunctionTable), func(i int) proto.Message { return d.FunctionTable[i] }, func(i int) bool { return d.FunctionTable[i] == nil })
	zeroMsg("attribute_table", len(d.AttributeTable), func(i int) proto.Message { return d.AttributeTable[i] }, func(i int) bool { return d.AttributeTable[i] == nil })
	zeroMsg("stack_table", len(d.StackTable), func(i int) proto.Message { return d.StackTable[i] }, func(i int) bool { return d.StackTable[i] == nil })

	switch {
	case len(d.LinkTable) == 0:
		v.fail(RuleZeroEntry, "link_table[0] must be present")
	case d.LinkTable[0] == nil:
		v.fail(RuleZeroEntry, "link_table[0] must be the zero value")
	default:
		l := d.LinkTable[0]
		okTrace := len(l.TraceId) == 0 || (len(l.TraceId) == 16 && allZero(l.TraceId))
		okSpan := len(l.SpanId) == 0 || (len(l.SpanId) == 8 && allZero(l.SpanId))
		if !okTrace || !okSpan {
			v.fail(RuleZeroEntry, "link_table[0] must be the zero value, got trace_id %x span_id %x", l.TraceId, l.SpanId)
		}
	}
	for i := 1; i < len(d.LinkTable); i++ {
		if d.LinkTable[i] == nil {
			v.fail(RuleDictionary, "link_table[%d] is nil", i)
		}
	}
}

func (v *validator) duplicates() {
	d := v.d
	seen := make(map[string]int, len(d.StringTable))
	for i, s := range d.StringTable {
		if j, ok := seen[s]; ok {
			v.fail(RuleDuplicate, "string_table[%d] %q equals string_table[%d]", i, s, j)
			continue
		}
		seen[s] = i
	}
	msgs := func(table string, n int, at func(int) proto.Message) {
		seen := make(map[string]int, n)
		opts := proto.MarshalOptions{Deterministic: true}
		for i := 0; i < n; i++ {
			m := at(i)
			if m == nil {
				continue
			}
			b, err := opts.Marshal(m)
			if err != nil {
				v.fail(RuleDictionary, "%s[%d] does not marshal: %v", table, i, err)
				continue
			}
			if j, ok := seen[string(b)]; ok {
				v.fail(RuleDuplicate, "%s[%d] equals %s[%d]", table, i, table, j)
				continue
			}
			seen[string(b)] = i
		}
	}
	// A typed nil pointer inside an interface is not a nil interface, so
	// every accessor turns nil entries into a nil proto.Message.
	msgs("mapping_table", len(d.MappingTable), func(i int) proto.Message {
		if d.MappingTable[i] == nil {
			return nil
		}
		return d.MappingTable[i]
	})
	msgs("location_table", len(d.LocationTable), func(i int) proto.Message {
		if d.LocationTable[i] == nil {
			return nil
		}
		return d.LocationTable[i]
	})
	msgs("function_table", len(d.FunctionTable), func(i int) proto.Message {
		if d.FunctionTable[i] == nil {
			return nil
		}
		return d.FunctionTable[i]
	})
	msgs("link_table", len(d.LinkTable), func(i int) proto.Message {
		if d.LinkTable[i] == nil {
			return nil
		}
		return d.LinkTable[i]
	})
	msgs("attribute_table", len(d.AttributeTable), func(i int) proto.Message {
		if d.AttributeTable[i] == nil {
			return nil
		}
		return d.AttributeTable[i]
	})
	msgs("stack_table", len(d.StackTable), func(i int) proto.Message {
		if d.StackTable[i] == nil {
			return nil
		}
		return d.StackTable[i]
	})
}

func (v *validator) orphans(table string, marks []bool) {
	for i := 1; i < len(marks); i++ {
		if !marks[i] {
			v.fail(RuleOrphan, "%s[%d] is not referenced", table, i)
		}
	}
}

// scopeAttribute returns the value of the scope attribute key, or nil.
func scopeAttribute(s *commonpb.InstrumentationScope, key string) *commonpb.AnyValue {
	if s == nil {
		return nil
	}
	for _, kv := range s.Attributes {
		if kv != nil && kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

func (v *validator) scopeProfiles(sp *profilespb.ScopeProfiles, where string) {
	if sp == nil {
		v.fail(RuleRequest, "%s is nil", where)
		return
	}
	if sp.Scope == nil {
		v.fail(RuleScope, "%s has no scope", where)
	}
	seen := make(map[string]bool)
	if sp.Scope != nil {
		for _, kv := range sp.Scope.Attributes {
			if kv == nil {
				v.fail(RuleScope, "%s.scope has a nil attribute", where)
				continue
			}
			if seen[kv.Key] {
				v.fail(RuleScope, "%s.scope attribute %q appears more than once", where, kv.Key)
			}
			seen[kv.Key] = true
		}
	}

	name := ""
	switch a := scopeAttribute(sp.Scope, otlpattr.ProfileName); {
	case a == nil:
		v.fail(RuleScope, "%s.scope lacks attribute %s", where, otlpattr.ProfileName)
	case a.GetValue() == nil || !isString(a):
		v.fail(RuleScope, "%s.scope attribute %s is not a string", where, otlpattr.ProfileName)
	default:
		name = a.GetStringValue()
	}

	defaultType := ""
	switch a := scopeAttribute(sp.Scope, otlpattr.DefaultSampleType); {
	case a == nil:
		v.fail(RuleScope, "%s.scope lacks attribute %s", where, otlpattr.DefaultSampleType)
	case !isString(a):
		v.fail(RuleScope, "%s.scope attribute %s is not a string", where, otlpattr.DefaultSampleType)
	default:
		defaultType = a.GetStringValue()
	}

	sent := make([]otlpattr.SampleType, len(sp.Profiles))
	for p, prof := range sp.Profiles {
		sent[p] = pprofSampleType(v.d, prof)
	}
	unsent := otlpattr.Unsent(sent)

	switch a := scopeAttribute(sp.Scope, otlpattr.SampleTypeOrder); {
	case a == nil:
		v.fail(RuleScope, "%s.scope lacks attribute %s", where, otlpattr.SampleTypeOrder)
	case a.GetArrayValue() == nil && len(sp.Profiles) > 0:
		v.fail(RuleScope, "%s.scope attribute %s is not an array", where, otlpattr.SampleTypeOrder)
	default:
		// The indices of the pprof profile's sample types: those not
		// sent (otlpattr.Unsent) leave theirs free.
		vals := a.GetArrayValue().GetValues()
		if len(vals) != len(sp.Profiles) {
			v.fail(RuleScope, "%s.scope attribute %s has %d entries for %d profiles", where, otlpattr.SampleTypeOrder, len(vals), len(sp.Profiles))
		}
		n := len(vals) + len(unsent)
		used := make(map[int64]bool, len(vals))
		for i, x := range vals {
			iv, ok := x.GetValue().(*commonpb.AnyValue_IntValue)
			if !ok {
				v.fail(RuleScope, "%s.scope attribute %s[%d] is not an int", where, otlpattr.SampleTypeOrder, i)
				continue
			}
			if iv.IntValue < 0 || iv.IntValue >= int64(n) || used[iv.IntValue] {
				v.fail(RuleScope, "%s.scope attribute %s is not a set of distinct indices in 0..%d", where, otlpattr.SampleTypeOrder, n-1)
			}
			used[iv.IntValue] = true
		}
	}

	foundDefault := slices.ContainsFunc(unsent, func(st otlpattr.SampleType) bool { return st.Pprof.Type == defaultType })
	for p, prof := range sp.Profiles {
		pw := fmt.Sprintf("%s.profiles[%d]", where, p)
		if prof == nil {
			v.fail(RuleProfile, "%s is nil", pw)
			continue
		}
		if prof.SampleType != nil && sent[p].Pprof.Type == defaultType {
			foundDefault = true
		}
		v.profile(prof, pw, name)
	}
	if len(sp.Profiles) > 0 && !foundDefault {
		v.fail(RuleScope, "%s: default sample type %q is not the type of any profile", where, defaultType)
	}
}

func isString(a *commonpb.AnyValue) bool {
	_, ok := a.GetValue().(*commonpb.AnyValue_StringValue)
	return ok
}

func (v *validator) profile(p *profilespb.Profile, where, scopeName string) {
	if p.SampleType == nil {
		v.fail(RuleProfile, "%s has no sample_type", where)
	} else {
		v.str(p.SampleType.TypeStrindex, where+".sample_type.type", true)
		v.str(p.SampleType.UnitStrindex, where+".sample_type.unit", true)
	}
	if p.PeriodType != nil {
		v.str(p.PeriodType.TypeStrindex, where+".period_type.type", true)
		v.str(p.PeriodType.UnitStrindex, where+".period_type.unit", true)
	}
	if p.TimeUnixNano == 0 {
		v.fail(RuleProfile, "%s has time_unix_nano 0", where)
	}
	if len(p.ProfileId) != 16 || allZero(p.ProfileId) {
		v.fail(RuleProfile, "%s: profile_id %x is not 16 non-zero bytes", where, p.ProfileId)
	}
	v.attrRefs(p.AttributeIndices, where, true)
	name, found := "", false
	for _, a := range p.AttributeIndices {
		if a > 0 && int(a) < len(v.d.AttributeTable) && v.d.AttributeTable[a] != nil &&
			v.strAt(v.d.AttributeTable[a].KeyStrindex) == otlpattr.ProfileName {
			name, found = v.d.AttributeTable[a].GetValue().GetStringValue(), true
		}
	}
	if !found {
		v.fail(RuleProfile, "%s lacks attribute %s", where, otlpattr.ProfileName)
	} else if name != scopeName {
		v.fail(RuleProfile, "%s: attribute %s is %q, scope says %q", where, otlpattr.ProfileName, name, scopeName)
	}

	for i, s := range p.Samples {
		sw := fmt.Sprintf("%s.samples[%d]", where, i)
		if s == nil {
			v.fail(RuleSample, "%s is nil", sw)
			continue
		}
		// Aggregated samples carry one value; event samples (the
		// off-CPU profile) a value per timestamp, each inside the
		// Profile's time range.
		switch {
		case len(s.TimestampsUnixNano) == 0 && len(s.Values) != 1:
			v.fail(RuleSample, "%s has %d values, want 1", sw, len(s.Values))
		case len(s.TimestampsUnixNano) != 0 && len(s.Values) != len(s.TimestampsUnixNano):
			v.fail(RuleSample, "%s has %d values for %d timestamps", sw, len(s.Values), len(s.TimestampsUnixNano))
		}
		for _, x := range s.Values {
			if x == 0 {
				v.fail(RuleSample, "%s has value 0; zero samples must be left out", sw)
			}
		}
		for _, ts := range s.TimestampsUnixNano {
			if ts < p.TimeUnixNano || ts >= p.TimeUnixNano+p.DurationNano {
				v.fail(RuleSample, "%s has timestamp %d outside the profile's [%d, +%d)", sw, ts, p.TimeUnixNano, p.DurationNano)
			}
		}
		if s.StackIndex == 0 {
			v.fail(RuleSample, "%s has stack_index 0", sw)
		}
		v.ref(v.stacks, "stack_table", s.StackIndex, sw, true)
		v.ref(v.links, "link_table", s.LinkIndex, sw, true)
		v.attrRefs(s.AttributeIndices, sw, true)
	}
}
