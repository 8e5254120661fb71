package splunk

import (
	"fmt"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/protobuf/proto"
)

// Split divides a request larger than maxBytes into requests of whole log
// records, each at most maxBytes. A record is one profile of one window and
// cannot be cut without corrupting its pprof body, so a record that is
// larger than maxBytes on its own is an error; nothing is dropped.
func Split(req *collogspb.ExportLogsServiceRequest, maxBytes int) ([]*collogspb.ExportLogsServiceRequest, error) {
	if proto.Size(req) <= maxBytes {
		return []*collogspb.ExportLogsServiceRequest{req}, nil
	}
	var parts []*collogspb.ExportLogsServiceRequest
	for _, rl := range req.GetResourceLogs() {
		for _, sl := range rl.GetScopeLogs() {
			for _, rec := range sl.GetLogRecords() {
				part := &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
					Resource:  rl.GetResource(),
					SchemaUrl: rl.GetSchemaUrl(),
					ScopeLogs: []*logspb.ScopeLogs{{
						Scope:      sl.GetScope(),
						SchemaUrl:  sl.GetSchemaUrl(),
						LogRecords: []*logspb.LogRecord{rec},
					}},
				}}}
				if n := proto.Size(part); n > maxBytes {
					return nil, fmt.Errorf("splunk: the %s record alone is %d bytes, over the %d-byte request limit",
						dataType(rec), n, maxBytes)
				}
				parts = append(parts, part)
			}
		}
	}
	return parts, nil
}

func dataType(rec *logspb.LogRecord) string {
	for _, kv := range rec.GetAttributes() {
		if kv.GetKey() == "profiling.data.type" {
			return kv.GetValue().GetStringValue()
		}
	}
	return "profiling"
}
