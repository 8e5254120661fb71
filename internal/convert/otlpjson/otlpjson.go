// Package otlpjson encodes and decodes OTLP profiles requests as OTLP/JSON:
// the file exporter and the OTLP/HTTP exporter write it, package pprofconv
// reads it back, all through this one codec.
package otlpjson

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/encoding/protojson"
)

// Marshal encodes req as OTLP/JSON. protojson implements the canonical
// protobuf JSON mapping, which OTLP follows except for ids: OTLP wants
// trace, span and profile ids as hex strings where protojson writes base64.
// The protojson output is therefore decoded into a generic tree, the id
// fields are re-encoded, and the tree is written again. Object keys come out
// sorted, which JSON readers do not mind. The profiles protos have no enum
// fields, so the OTLP rule of enums as integers is met by default; it is set
// explicitly for fields that later versions may add.
func Marshal(req *collectorpb.ExportProfilesServiceRequest, indent bool) ([]byte, error) {
	raw, err := protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("otlp json: %w", err)
	}
	tree, err := decodeTree(raw)
	if err != nil {
		return nil, err
	}
	if err := rewriteIDs(tree, base64ToHex); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(tree); err != nil {
		return nil, fmt.Errorf("otlp json: %w", err)
	}
	return buf.Bytes(), nil
}

// Unmarshal decodes an OTLP/JSON request written by Marshal or by
// any other OTLP/JSON producer. Unknown fields are ignored, as OTLP asks of
// receivers.
func Unmarshal(data []byte) (*collectorpb.ExportProfilesServiceRequest, error) {
	tree, err := decodeTree(data)
	if err != nil {
		return nil, err
	}
	if err := rewriteIDs(tree, hexToBase64); err != nil {
		return nil, err
	}
	canonical, err := json.Marshal(tree)
	if err != nil {
		return nil, fmt.Errorf("otlp json: %w", err)
	}
	req := new(collectorpb.ExportProfilesServiceRequest)
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(canonical, req); err != nil {
		return nil, fmt.Errorf("otlp json: %w", err)
	}
	return req, nil
}

// decodeTree decodes one JSON value keeping numbers as written: 64-bit
// values must not pass through float64. Anything but white space after
// the value is an error: a decoder reads one value and would leave the
// rest unread, a second request as well as garbage.
func decodeTree(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("otlp json: %w", err)
	}
	if rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return nil, fmt.Errorf("otlp json: %d bytes after the request", len(rest))
	}
	return tree, nil
}

// rewriteIDs applies conv to every id field of a request tree:
// dictionary.linkTable[].traceId and .spanId, and
// resourceProfiles[].scopeProfiles[].profiles[].profileId. Both the JSON
// (lowerCamelCase) and the proto field names are recognised, as protojson
// accepts either.
func rewriteIDs(tree any, conv func(field, v string) (string, error)) error {
	root, _ := tree.(map[string]any)
	if dict, ok := member(root, "dictionary", "dictionary").(map[string]any); ok {
		for _, link := range objects(member(dict, "linkTable", "link_table")) {
			if err := convertField(link, conv, "traceId", "trace_id"); err != nil {
				return err
			}
			if err := convertField(link, conv, "spanId", "span_id"); err != nil {
				return err
			}
		}
	}
	for _, rp := range objects(member(root, "resourceProfiles", "resource_profiles")) {
		for _, sp := range objects(member(rp, "scopeProfiles", "scope_profiles")) {
			for _, p := range objects(member(sp, "profiles", "profiles")) {
				if err := convertField(p, conv, "profileId", "profile_id"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func member(obj map[string]any, jsonName, protoName string) any {
	if v, ok := obj[jsonName]; ok {
		return v
	}
	return obj[protoName]
}

func objects(v any) []map[string]any {
	list, _ := v.([]any)
	out := make([]map[string]any, 0, len(list))
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func convertField(obj map[string]any, conv func(field, v string) (string, error), names ...string) error {
	for _, name := range names {
		s, ok := obj[name].(string)
		if !ok {
			continue
		}
		c, err := conv(name, s)
		if err != nil {
			return err
		}
		obj[name] = c
	}
	return nil
}

func base64ToHex(field, v string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return "", fmt.Errorf("otlp json: %s %q: %w", field, v, err)
	}
	return hex.EncodeToString(b), nil
}

func hexToBase64(field, v string) (string, error) {
	b, err := hex.DecodeString(v)
	if err != nil {
		return "", fmt.Errorf("otlp json: %s %q is not hex: %w", field, v, err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}
