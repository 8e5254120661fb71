package export

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pprofotel/profiler/internal/convert/otlpjson"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"

	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

func TestMarshalJSONGolden(t *testing.T) {
	got, err := otlpjson.Marshal(otlptest.Request(1), true)
	if err != nil {
		t.Fatalf("marshalJSON: %v", err)
	}
	golden := filepath.Join("testdata", "request.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("marshalJSON differs from %s (go test -update rewrites it):\n%s", golden, got)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	for _, indent := range []bool{false, true} {
		req := otlptest.Request(5)
		data, err := otlpjson.Marshal(req, indent)
		if err != nil {
			t.Fatalf("marshalJSON: %v", err)
		}
		got, err := otlpjson.Unmarshal(data)
		if err != nil {
			t.Fatalf("unmarshalJSON: %v", err)
		}
		if !proto.Equal(got, req) {
			t.Fatalf("indent=%v: round trip differs:\ngot  %v\nwant %v", indent, got, req)
		}
		// The int64 that does not fit a float64 mantissa survives.
		if v := got.ResourceProfiles[0].ScopeProfiles[0].Profiles[0].Samples[1].Values[0]; v != 1<<62 {
			t.Fatalf("sample value = %d, want %d", v, int64(1)<<62)
		}
	}
}

func TestUnmarshalJSONAcceptsOtherProducers(t *testing.T) {
	// Proto field names, upper-case hex and unknown fields, as other OTLP/JSON
	// writers may produce.
	in := `{
	  "resource_profiles": [{"scope_profiles": [{"profiles": [{"profile_id": "0102030405060708090A0B0C0D0E0F10", "futureField": 1}]}]}],
	  "dictionary": {"link_table": [{}, {"trace_id": "4BF92F3577B34DA6A3CE929D0E0E4736", "span_id": "00F067AA0BA902B7"}]}
	}`
	got, err := otlpjson.Unmarshal([]byte(in))
	if err != nil {
		t.Fatalf("unmarshalJSON: %v", err)
	}
	link := got.GetDictionary().GetLinkTable()[1]
	want := &profilespb.Link{
		TraceId: []byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanId:  []byte{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
	}
	if !proto.Equal(link, want) {
		t.Errorf("link = %v, want %v", link, want)
	}
	pid := got.GetResourceProfiles()[0].GetScopeProfiles()[0].GetProfiles()[0].GetProfileId()
	if !bytes.Equal(pid, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}) {
		t.Errorf("profile id = %x", pid)
	}
}

func TestUnmarshalJSONRejects(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
	}{
		{"base64 trace id", `{"dictionary": {"linkTable": [{"traceId": "S/kvNXezTaajzpKdDg5HNg=="}]}}`, `traceId "S/kvNXezTaajzpKdDg5HNg=="`},
		{"odd hex span id", `{"dictionary": {"linkTable": [{"spanId": "abc"}]}}`, `spanId "abc"`},
		{"not json", `{"dictionary":`, `otlp json`},
		{"wrong type", `{"resourceProfiles": 3}`, `otlp json`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := otlpjson.Unmarshal([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("unmarshalJSON error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestMarshalJSONDiffersFromProtojsonOnlyInIDs(t *testing.T) {
	// Without ids, OTLP/JSON is the canonical mapping: protojson reads it.
	req := otlptest.Request(2)
	req.Dictionary.LinkTable = nil
	req.ResourceProfiles[0].ScopeProfiles[0].Profiles[0].ProfileId = nil
	data, err := otlpjson.Marshal(req, false)
	if err != nil {
		t.Fatal(err)
	}
	got := req.ProtoReflect().New().Interface()
	if err := protojson.Unmarshal(data, got); err != nil {
		t.Fatalf("protojson.Unmarshal: %v", err)
	}
	if !proto.Equal(got, req) {
		t.Fatalf("protojson reads a different request:\ngot  %v\nwant %v", got, req)
	}
}
