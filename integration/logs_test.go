package integration

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
)

// TestLogsThroughCollector checks the Collector's logs pipeline, OTLP
// receiver to file exporter, which profiles sent as logs go through: a log
// record posted as OTLP/JSON comes back from the logs file with its body,
// its resource and the span it names.
func TestLogsThroughCollector(t *testing.T) {
	col := startCollector(t)

	const (
		traceID = "5b8efff798038103d269b633813fc60c"
		spanID  = "eee19b7ec3c1b174"
	)
	body := "pprofotel integration " + strconv.FormatInt(time.Now().UnixNano(), 10)
	req := fmt.Sprintf(`{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"pprofotel-integration-logs"}}]},
"scopeLogs":[{"logRecords":[{"timeUnixNano":"%d","severityNumber":9,"body":{"stringValue":%q},"traceId":%q,"spanId":%q}]}]}]}`,
		time.Now().UnixNano(), body, traceID, spanID)
	resp, err := http.Post("http://"+col.HTTPAddr+"/v1/logs", "application/json", bytes.NewReader([]byte(req)))
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/logs: %s: %s", resp.Status, answer)
	}

	deadline := time.Now().Add(time.Minute) // a bound against a hang
	for {
		all, err := readJSONLines(col.LogsFile, func() *logspb.LogsData { return new(logspb.LogsData) })
		if err != nil {
			t.Fatal(err)
		}
		if len(all) > 0 {
			if len(all) != 1 {
				t.Fatalf("the logs file holds %d requests, want the 1 sent", len(all))
			}
			rl := all[0].GetResourceLogs()
			if len(rl) != 1 || len(rl[0].GetScopeLogs()) != 1 || len(rl[0].ScopeLogs[0].GetLogRecords()) != 1 {
				t.Fatalf("the logs file holds %v, want one record", all[0])
			}
			var plain dict // logs have no dictionary: every attribute is spelled out
			if got := plain.text(plain.attr(rl[0].GetResource().GetAttributes(), "service.name")); got != "pprofotel-integration-logs" {
				t.Errorf("service.name = %q, want pprofotel-integration-logs", got)
			}
			rec := rl[0].ScopeLogs[0].LogRecords[0]
			if got := rec.GetBody().GetStringValue(); got != body {
				t.Errorf("body = %q, want %q", got, body)
			}
			if got := fmt.Sprintf("%x/%x", rec.GetTraceId(), rec.GetSpanId()); got != traceID+"/"+spanID {
				t.Errorf("trace/span = %s, want %s/%s", got, traceID, spanID)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("after a minute the Collector has written no log record")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
