package splunk

import (
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/collect"
)

// FuzzEncode feeds Encode requests decoded from arbitrary bytes: it must
// return a request or an error, never panic, hang or take memory out of
// proportion to its input. The seeds are the requests of the hand-built
// windows; testdata/fuzz/FuzzEncode holds them too.
func FuzzEncode(f *testing.F) {
	from, to := windowStart.Add(2*time.Second), windowStart.Add(4*time.Second)
	for _, w := range []collect.Window{
		handWindow(collect.Profile{Name: collect.CPU, Data: handCPU()}, collect.Profile{Name: collect.Heap, Data: handHeap()}),
		handWindow(collect.Profile{Name: collect.CPU, Data: handCPU(), Start: from, End: to}),
	} {
		data, err := proto.Marshal(request(w))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req collectorpb.ExportProfilesServiceRequest
		if proto.Unmarshal(data, &req) != nil {
			return
		}
		_, _ = Encode(&req, EncodeOptions{Convert: toPprof})
	})
}
