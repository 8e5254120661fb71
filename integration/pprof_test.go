package integration

import (
	"fmt"
	"strconv"

	pprofprofile "github.com/google/pprof/profile"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/protobuf/proto"
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

// spelledOut returns the request of pd with the keys and string values of
// its scope attributes spelled out, as the profiler sent them, for readers
// that take only that form.
func spelledOut(pd *profilespb.ProfilesData) *collectorpb.ExportProfilesServiceRequest {
	d := dict{pd.GetDictionary()}
	pd = proto.Clone(pd).(*profilespb.ProfilesData)
	for _, rp := range pd.GetResourceProfiles() {
		for _, sp := range rp.GetScopeProfiles() {
			for _, kv := range sp.GetScope().GetAttributes() {
				if kv.Key == "" {
					kv.Key, _ = d.str(kv.GetKeyStrindex())
					kv.KeyStrindex = 0
				}
				if x, ok := kv.GetValue().GetValue().(*commonpb.AnyValue_StringValueStrindex); ok {
					str, _ := d.str(x.StringValueStrindex)
					kv.Value = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: str}}
				}
			}
		}
	}
	return &collectorpb.ExportProfilesServiceRequest{ResourceProfiles: pd.GetResourceProfiles(), Dictionary: pd.GetDictionary()}
}
