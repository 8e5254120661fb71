package otlpjson_test

import (
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/internal/convert/otlpjson"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
	"google.golang.org/protobuf/proto"
)

// FuzzUnmarshal decodes arbitrary bytes as an OTLP/JSON request. It must
// never panic, and what it accepts must come back the same through Marshal
// and Unmarshal: ids as hex, 64-bit numbers exact.
func FuzzUnmarshal(f *testing.F) {
	start := time.Unix(1_800_000_000, 0)
	req := otlp.NewBuilder(nil, nil).Build(start, start.Add(time.Second), otlptest.FixtureInputs())
	for _, indent := range []bool{false, true} {
		data, err := otlpjson.Marshal(req, indent)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"dictionary": {"link_table": [{"trace_id": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331"}]}}`))
	f.Add([]byte(`{"resourceProfiles": [{"scopeProfiles": [{"profiles": [{"profileId": "00", "timeUnixNano": "18446744073709551615"}]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := otlpjson.Unmarshal(data)
		if err != nil {
			return
		}
		for _, indent := range []bool{false, true} {
			out, err := otlpjson.Marshal(req, indent)
			if err != nil {
				t.Fatalf("Marshal of what Unmarshal accepted: %v", err)
			}
			back, err := otlpjson.Unmarshal(out)
			if err != nil {
				t.Fatalf("Unmarshal of what Marshal wrote: %v\n%s", err, out)
			}
			if !proto.Equal(req, back) {
				t.Fatalf("round trip changed the request:\n%v\nwant:\n%v", back, req)
			}
		}
	})
}
