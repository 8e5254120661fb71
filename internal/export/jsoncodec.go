package export

import (
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/convert/otlpjson"
)

// JSONCodec encodes OTLP/HTTP requests as OTLP/JSON and decodes the JSON
// responses of a receiver.
type JSONCodec struct {
	// Marshal encodes a request.
	Marshal func(*collectorpb.ExportProfilesServiceRequest) ([]byte, error)
	// Unmarshal decodes a response message, ignoring unknown fields.
	Unmarshal func([]byte, proto.Message) error
}

// OTLPJSON returns the OTLP/JSON codec: package otlpjson's encoding (hex
// trace, span and profile ids) and protojson's decoding. Only code that
// calls it links the codec, so the exporters call it only where an
// application asks for JSON (otlpprofilehttp.WithJSON). protojson itself
// is linked by the OTLP collector packages' gateway code whatever the
// exporter does; the codec around it is not.
func OTLPJSON() *JSONCodec {
	return &JSONCodec{
		Marshal: func(req *collectorpb.ExportProfilesServiceRequest) ([]byte, error) {
			return otlpjson.Marshal(req, false)
		},
		Unmarshal: protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal,
	}
}
