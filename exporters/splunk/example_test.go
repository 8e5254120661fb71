package splunk_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/grpc"

	"github.com/pprofotel/profiler/exporters/splunk"
)

// receiver is a stand-in for the OTLP/gRPC logs receiver of a Splunk
// distribution of the Collector.
type receiver struct {
	collogspb.UnimplementedLogsServiceServer
}

func (receiver) Export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (*collogspb.ExportLogsServiceResponse, error) {
	for _, rl := range req.GetResourceLogs() {
		for _, sl := range rl.GetScopeLogs() {
			for _, r := range sl.GetLogRecords() {
				fmt.Print(sl.GetScope().GetName(), " record:")
				for _, kv := range r.GetAttributes() {
					switch v := kv.GetValue().GetValue().(type) {
					case *commonpb.AnyValue_StringValue:
						fmt.Printf(" %s=%s", kv.GetKey(), v.StringValue)
					case *commonpb.AnyValue_IntValue:
						fmt.Printf(" %s=%d", kv.GetKey(), v.IntValue)
					}
				}
				fmt.Println()
			}
		}
	}
	return &collogspb.ExportLogsServiceResponse{}, nil
}

func Example() {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	collogspb.RegisterLogsServiceServer(srv, receiver{})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	ctx := context.Background()
	exp, err := splunk.New(ctx,
		splunk.WithEndpoint(lis.Addr().String()),
		splunk.WithInsecure(),
		splunk.WithHeaders(map[string]string{"X-SF-Token": "access-token"}),
	)
	if err != nil {
		log.Fatal(err)
	}
	// The profiler asks the exporter what to collect where the
	// application did not say.
	profiles, window := exp.CollectionDefaults()
	fmt.Println("collect", profiles, "every", window)

	// The profiler calls Export once a window; here, a CPU profile in
	// which main.work was seen 3 times.
	if err := exp.Export(ctx, cpuWindow()); err != nil {
		log.Fatal(err)
	}
	if err := exp.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// collect [cpu] every 10s
	// otel.profiling record: com.splunk.sourcetype=otel.profiling profiling.data.type=cpu profiling.data.format=pprof-gzip-base64 profiling.data.total.frame.count=3
}

// cpuWindow is the OTLP profiles request of a 10-second window whose CPU
// profile saw one stack, main.work, 3 times.
func cpuWindow() *collectorpb.ExportProfilesServiceRequest {
	start := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	str := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	return &collectorpb.ExportProfilesServiceRequest{
		Dictionary: &profilespb.ProfilesDictionary{
			StringTable:    []string{"", "samples", "count", "cpu", "nanoseconds", "main.work"},
			MappingTable:   []*profilespb.Mapping{{}},
			LocationTable:  []*profilespb.Location{{}, {Lines: []*profilespb.Line{{FunctionIndex: 1, Line: 12}}}},
			FunctionTable:  []*profilespb.Function{{}, {NameStrindex: 5}},
			StackTable:     []*profilespb.Stack{{}, {LocationIndices: []int32{1}}},
			LinkTable:      []*profilespb.Link{{}},
			AttributeTable: []*profilespb.KeyValueAndUnit{{}},
		},
		ResourceProfiles: []*profilespb.ResourceProfiles{{
			ScopeProfiles: []*profilespb.ScopeProfiles{{
				// The profiler names the runtime profile of each scope.
				Scope: &commonpb.InstrumentationScope{Attributes: []*commonpb.KeyValue{
					{Key: "pprofotel.profile.name", Value: str("cpu")},
				}},
				Profiles: []*profilespb.Profile{{
					SampleType:   &profilespb.ValueType{TypeStrindex: 1, UnitStrindex: 2},
					PeriodType:   &profilespb.ValueType{TypeStrindex: 3, UnitStrindex: 4},
					Period:       int64(10 * time.Millisecond),
					TimeUnixNano: uint64(start.UnixNano()),
					DurationNano: uint64(10 * time.Second),
					Samples:      []*profilespb.Sample{{StackIndex: 1, Values: []int64{3}}},
				}},
			}},
		}},
	}
}
