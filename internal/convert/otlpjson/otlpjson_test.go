package otlpjson_test

import (
	"strings"
	"testing"

	"github.com/pprofotel/profiler/internal/convert/otlpjson"
)

func TestUnmarshalOneValue(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string
	}{
		{`{"resourceProfiles": []}` + "\n\t ", ""},
		{`{"resourceProfiles": []}{"resourceProfiles": []}`, "otlp json: 24 bytes after the request"},
		{`{"resourceProfiles": []} x`, "otlp json: 1 bytes after the request"},
	}
	for _, tt := range tests {
		_, err := otlpjson.Unmarshal([]byte(tt.in))
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("Unmarshal(%q) error %v, want %q", tt.in, err, tt.wantErr)
		}
	}
}
