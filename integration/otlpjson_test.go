package integration

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// readJSONLines parses what one of the Collector's file exporters wrote so
// far: one OTLP/JSON message (ProfilesData, LogsData) per complete line,
// each decoded into a message from newMsg. A line still being written (no
// newline yet) is left for the next call. A missing file reads as empty,
// since the exporter creates it on its first flush.
func readJSONLines[M proto.Message](path string, newMsg func() M) ([]M, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []M
	for n := 1; ; n++ {
		line, rest, complete := bytes.Cut(data, []byte{'\n'})
		if !complete {
			return out, nil
		}
		data = rest
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		m := newMsg()
		if err := unmarshalOTLPJSON(line, m); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		out = append(out, m)
	}
}

// unmarshalOTLPJSON decodes one OTLP/JSON message into m. OTLP/JSON follows
// the protobuf JSON mapping except that trace, span and profile ids are hex
// strings, where protojson expects base64; the ids are re-encoded in a
// generic tree before protojson sees it. Unknown fields are an error: a
// field the Collector writes and these protos lack would mean the two
// disagree on the schema, which is exactly what this test is for.
func unmarshalOTLPJSON(line []byte, m proto.Message) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber() // 64-bit integers must not pass through float64
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return err
	}
	if err := hexIDsToBase64(tree); err != nil {
		return err
	}
	canonical, err := json.Marshal(tree)
	if err != nil {
		return err
	}
	return protojson.Unmarshal(canonical, m)
}

// idFields are the OTLP/JSON object keys whose values are hex-encoded ids.
var idFields = map[string]bool{"traceId": true, "spanId": true, "profileId": true}

func hexIDsToBase64(node any) error {
	switch n := node.(type) {
	case map[string]any:
		for k, v := range n {
			if s, ok := v.(string); ok && idFields[k] {
				b, err := hex.DecodeString(s)
				if err != nil {
					return fmt.Errorf("%s %q is not hex: %w", k, s, err)
				}
				n[k] = base64.StdEncoding.EncodeToString(b)
				continue
			}
			if err := hexIDsToBase64(v); err != nil {
				return err
			}
		}
	case []any:
		for _, v := range n {
			if err := hexIDsToBase64(v); err != nil {
				return err
			}
		}
	}
	return nil
}
