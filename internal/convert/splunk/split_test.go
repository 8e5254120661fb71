package splunk

import (
	"strings"
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"
)

func record(dataType string, bodyBytes int) *logspb.LogRecord {
	return &logspb.LogRecord{
		Attributes: []*commonpb.KeyValue{{Key: "profiling.data.type",
			Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: dataType}}}},
		Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: strings.Repeat("x", bodyBytes)}},
	}
}

func TestSplit(t *testing.T) {
	res := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name",
		Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "svc"}}}}}
	req := &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource: res,
		ScopeLogs: []*logspb.ScopeLogs{{
			Scope:      &commonpb.InstrumentationScope{Name: ScopeName, Version: ScopeVersion},
			LogRecords: []*logspb.LogRecord{record(DataTypeCPU, 3000), record(DataTypeAllocation, 2000)},
		}},
	}}}
	tests := []struct {
		name      string
		maxBytes  int
		wantParts int
		wantErr   string
	}{
		{"fits whole", 10000, 1, ""},
		{"one record per request", 4000, 2, ""},
		{"a record alone is too large", 2500, 0, "the cpu record alone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts, err := Split(req, tt.maxBytes)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(parts) != tt.wantParts {
				t.Fatalf("%d parts, want %d", len(parts), tt.wantParts)
			}
			var records []*logspb.LogRecord
			for _, p := range parts {
				if n := proto.Size(p); n > tt.maxBytes {
					t.Errorf("a part is %d bytes, over %d", n, tt.maxBytes)
				}
				rl := p.GetResourceLogs()[0]
				if !proto.Equal(rl.GetResource(), res) || rl.GetScopeLogs()[0].GetScope().GetName() != ScopeName {
					t.Errorf("a part lost the resource or the scope")
				}
				records = append(records, rl.GetScopeLogs()[0].GetLogRecords()...)
			}
			orig := req.GetResourceLogs()[0].GetScopeLogs()[0].GetLogRecords()
			if len(records) != len(orig) {
				t.Fatalf("%d records after splitting, want %d", len(records), len(orig))
			}
			for i := range orig {
				if !proto.Equal(records[i], orig[i]) {
					t.Errorf("record %d changed", i)
				}
			}
		})
	}
}
