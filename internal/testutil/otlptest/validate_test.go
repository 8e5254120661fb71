package otlptest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/internal/otlpattr"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
)

func buildFixture() *collectorpb.ExportProfilesServiceRequest {
	b := otlp.NewBuilder(nil, &commonpb.InstrumentationScope{Name: "test"},
		otlp.WithExecutable(otlptest.FixtureExecutable, otlptest.FixtureGoBuildID))
	start := time.Unix(1700000000, 0)
	return b.Build(start, start.Add(10*time.Second), otlptest.FixtureInputs())
}

// firstProfile returns the heap alloc_objects profile of a fixture request.
func firstProfile(r *collectorpb.ExportProfilesServiceRequest) *profilespb.Profile {
	return r.ResourceProfiles[0].ScopeProfiles[0].Profiles[0]
}

func TestValidateAcceptsBuild(t *testing.T) {
	if err := otlptest.Validate(buildFixture()); err != nil {
		t.Fatal(err)
	}
}

func TestValidateRejects(t *testing.T) {
	tests := []struct {
		name   string
		rule   string
		detail string
		mutate func(r *collectorpb.ExportProfilesServiceRequest)
	}{
		{"nil request", otlptest.RuleRequest, "nil", nil},
		{"no dictionary", otlptest.RuleDictionary, "no dictionary", func(r *collectorpb.ExportProfilesServiceRequest) { r.Dictionary = nil }},
		{"string 0 not empty", otlptest.RuleZeroEntry, "string_table[0]", func(r *collectorpb.ExportProfilesServiceRequest) {
			r.Dictionary.StringTable[0] = "x"
		}},
		{"no mapping 0", otlptest.RuleZeroEntry, "mapping_table[0]", func(r *collectorpb.ExportProfilesServiceRequest) {
			r.Dictionary.MappingTable = nil
		}},
		{"function 0 not zero", otlptest.RuleZeroEntry, "function_table[0]", func(r *collectorpb.ExportProfilesServiceRequest) {
			r.Dictionary.FunctionTable[0] = &profilespb.Function{StartLine: 1}
		}},
		{"link 0 not zero", otlptest.RuleZeroEntry, "link_table[0]", func(r *collectorpb.ExportProfilesServiceRequest) {
			r.Dictionary.LinkTable[0] = &profilespb.Link{TraceId: []byte{1}}
		}},
		{"duplicate string", otlptest.RuleDuplicate, "string_table", func(r *collectorpb.ExportProfilesServiceRequest) {
			d := r.Dictionary
			d.StringTable = append(d.StringTable, d.StringTable[1])
		}},
		{"duplicate function", otlptest.RuleDuplicate, "function_table", func(r *collectorpb.ExportProfilesServiceRequest) {
			d := r.Dictionary
			f := d.FunctionTable[1]
			d.FunctionTable = append(d.FunctionTable, &profilespb.Function{NameStrindex: f.NameStrindex, SystemNameStrindex: f.SystemNameStrindex, FilenameStrindex: f.FilenameStrindex, StartLine: f.StartLine})
			d.LocationTable[1].Lines[0].FunctionIndex = int32(len(d.FunctionTable) - 1) // keep both referenced
		}},
		{"duplicate stack", otlptest.RuleDuplicate, "stack_table", func(r *collectorpb.ExportProfilesServiceRequest) {
			d := r.Dictionary
			d.StackTable = append(d.StackTable, &profilespb.Stack{LocationIndices: d.StackTable[1].LocationIndices})
			firstProfile(r).Samples[0].StackIndex = int32(len(d.StackTable) - 1)
		}},
		{"orphan string", otlptest.RuleOrphan, "string_table", func(r *collectorpb.ExportProfilesServiceRequest) {
			r.Dictionary.StringTable = append(r.Dictionary.StringTable, "nobody uses me")
		}},
		{"orphan location", otlptest.RuleOrphan, "location_table", func(r *collectorpb.ExportProfilesServiceRequest) {
			r.Dictionary.LocationTable = append(r.Dictionary.LocationTable, &profilespb.Location{Address: 0xdead})
		}},
		{"orphan link", otlptest.RuleOrphan, "link_table", func(r *collectorpb.ExportProfilesServiceRequest) {
			r.Dictionary.LinkTable = append(r.Dictionary.LinkTable, &profilespb.Link{TraceId: make16(7), SpanId: make8(7)})
		}},
		{"stack index out of range", otlptest.RuleRange, "stack_table index 999", func(r *collectorpb.ExportProfilesServiceRequest) {
			firstProfile(r).Samples[0].StackIndex = 999
		}},
		{"function index out of range", otlptest.RuleRange, "function_table index -1", func(r *collectorpb.ExportProfilesServiceRequest) {
			r.Dictionary.LocationTable[1].Lines[0].FunctionIndex = -1
		}},
		{"string index out of range", otlptest.RuleRange, "string_table index 5000", func(r *collectorpb.ExportProfilesServiceRequest) {
			r.Dictionary.FunctionTable[1].FilenameStrindex = 5000
		}},
		{"repeated attribute key", otlptest.RuleUniqueKeys, "appears more than once", func(r *collectorpb.ExportProfilesServiceRequest) {
			p := firstProfile(r)
			p.AttributeIndices = append(p.AttributeIndices, p.AttributeIndices[0])
		}},
		{"short trace id", otlptest.RuleLink, "want 16 and 8", func(r *collectorpb.ExportProfilesServiceRequest) {
			r.Dictionary.LinkTable[1].TraceId = []byte{1, 2, 3}
		}},
		{"function without names", otlptest.RuleFunction, "no name", func(r *collectorpb.ExportProfilesServiceRequest) {
			f := r.Dictionary.FunctionTable[1]
			f.NameStrindex, f.SystemNameStrindex, f.FilenameStrindex = 0, 0, 0
		}},
		{"no sample type", otlptest.RuleProfile, "no sample_type", func(r *collectorpb.ExportProfilesServiceRequest) {
			firstProfile(r).SampleType = nil
		}},
		{"no time", otlptest.RuleProfile, "time_unix_nano 0", func(r *collectorpb.ExportProfilesServiceRequest) {
			firstProfile(r).TimeUnixNano = 0
		}},
		{"zero profile id", otlptest.RuleProfile, "profile_id", func(r *collectorpb.ExportProfilesServiceRequest) {
			firstProfile(r).ProfileId = make([]byte, 16)
		}},
		{"two values", otlptest.RuleSample, "2 values", func(r *collectorpb.ExportProfilesServiceRequest) {
			s := firstProfile(r).Samples[0]
			s.Values = append(s.Values, 1)
		}},
		{"zero value", otlptest.RuleSample, "value 0", func(r *collectorpb.ExportProfilesServiceRequest) {
			firstProfile(r).Samples[0].Values[0] = 0
		}},
		{"stack 0", otlptest.RuleSample, "stack_index 0", func(r *collectorpb.ExportProfilesServiceRequest) {
			firstProfile(r).Samples[0].StackIndex = 0
		}},
		{"no default sample type", otlptest.RuleScope, otlpattr.DefaultSampleType, func(r *collectorpb.ExportProfilesServiceRequest) {
			removeScopeAttr(r, otlpattr.DefaultSampleType)
		}},
		{"no sample type order", otlptest.RuleScope, otlpattr.SampleTypeOrder, func(r *collectorpb.ExportProfilesServiceRequest) {
			removeScopeAttr(r, otlpattr.SampleTypeOrder)
		}},
		{"no profile name", otlptest.RuleScope, otlpattr.ProfileName, func(r *collectorpb.ExportProfilesServiceRequest) {
			removeScopeAttr(r, otlpattr.ProfileName)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r *collectorpb.ExportProfilesServiceRequest
			if tt.mutate != nil {
				r = buildFixture()
				tt.mutate(r)
			}
			err := otlptest.Validate(r)
			if err == nil {
				t.Fatal("Validate accepted the broken request")
			}
			found := false
			for _, line := range strings.Split(err.Error(), "\n") {
				if strings.HasPrefix(line, tt.rule+": ") && strings.Contains(line, tt.detail) {
					found = true
				}
			}
			if !found {
				t.Errorf("no %q error mentioning %q in:\n%v", tt.rule, tt.detail, err)
			}
		})
	}
}

func make16(b byte) []byte {
	id := make([]byte, 16)
	id[15] = b
	return id
}

func make8(b byte) []byte {
	id := make([]byte, 8)
	id[7] = b
	return id
}

func removeScopeAttr(r *collectorpb.ExportProfilesServiceRequest, key string) {
	s := r.ResourceProfiles[0].ScopeProfiles[0].Scope
	kept := s.Attributes[:0]
	for _, kv := range s.Attributes {
		if kv.Key != key {
			kept = append(kept, kv)
		}
	}
	s.Attributes = kept
}
