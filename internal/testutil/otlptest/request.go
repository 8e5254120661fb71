package otlptest

import (
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// Request builds a small but complete request, with a link, an attribute
// and a value near the int64 limit; n varies the sample values, the time
// and the profile id, so that requests can be told apart.
func Request(n int) *collectorpb.ExportProfilesServiceRequest {
	strs := []string{"", "cpu", "nanoseconds", "samples", "count", "main.work", "/src/main.go", "service.name", "<svc & co>", "thread.name"}
	return &collectorpb.ExportProfilesServiceRequest{
		Dictionary: &profilespb.ProfilesDictionary{
			MappingTable: []*profilespb.Mapping{{}, {MemoryStart: 0x400000, MemoryLimit: 0xffffffffffff0000, FilenameStrindex: 6}},
			LocationTable: []*profilespb.Location{{}, {
				MappingIndex: 1,
				Address:      0x401234,
				Lines:        []*profilespb.Line{{FunctionIndex: 1, Line: 42, Column: 7}},
			}},
			FunctionTable: []*profilespb.Function{{}, {NameStrindex: 5, SystemNameStrindex: 5, FilenameStrindex: 6, StartLine: 40}},
			LinkTable: []*profilespb.Link{{}, {
				TraceId: []byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
				SpanId:  []byte{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
			}},
			StringTable: strs,
			AttributeTable: []*profilespb.KeyValueAndUnit{{}, {
				KeyStrindex: 9,
				Value:       &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "worker"}},
			}},
			StackTable: []*profilespb.Stack{{}, {LocationIndices: []int32{1}}},
		},
		ResourceProfiles: []*profilespb.ResourceProfiles{{
			Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{
				Key:   "service.name",
				Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "<svc & co>"}},
			}}},
			ScopeProfiles: []*profilespb.ScopeProfiles{{
				Scope: &commonpb.InstrumentationScope{Name: "github.com/pprofotel/profiler", Version: "0.1.0"},
				Profiles: []*profilespb.Profile{{
					SampleType:   &profilespb.ValueType{TypeStrindex: 1, UnitStrindex: 2},
					PeriodType:   &profilespb.ValueType{TypeStrindex: 1, UnitStrindex: 2},
					Period:       10_000_000,
					TimeUnixNano: 1_763_769_599_000_000_000 + uint64(n),
					DurationNano: 60_000_000_000,
					ProfileId:    []byte{0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, byte(n)},
					Samples: []*profilespb.Sample{
						{StackIndex: 1, LinkIndex: 1, AttributeIndices: []int32{1}, Values: []int64{int64(n+1) * 10_000_000}},
						{StackIndex: 1, Values: []int64{1 << 62}},
					},
				}},
			}},
		}},
	}
}
