package envconfig

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseKeyValues(t *testing.T) {
	tests := []struct {
		in   string
		want []KeyValue
	}{
		{"a=1", []KeyValue{{"a", "1"}}},
		{" a = 1 , b=2,,", []KeyValue{{"a", "1"}, {"b", "2"}}},
		{"k=", []KeyValue{{"k", ""}}},
		{"url=http%3A%2F%2Fx%3D1", []KeyValue{{"url", "http://x=1"}}},
		{"plus=a+b", []KeyValue{{"plus", "a+b"}}},
		{"eq=a=b", []KeyValue{{"eq", "a=b"}}},
		{"dup=1,dup=2", []KeyValue{{"dup", "1"}, {"dup", "2"}}},
	}
	for _, tt := range tests {
		got, errs := ParseKeyValues(tt.in, false)
		if errs != nil {
			t.Errorf("ParseKeyValues(%q): %v", tt.in, errs)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseKeyValues(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestParseKeyValuesKeepsTheReadableEntries checks that an entry that
// cannot be read costs that entry alone, as in the OpenTelemetry Go SDK.
func TestParseKeyValuesKeepsTheReadableEntries(t *testing.T) {
	tests := []struct {
		in            string
		keepUndecoded bool
		want          []KeyValue
		errs          []string
	}{
		{"a=1,broken,b=2", false, []KeyValue{{"a", "1"}, {"b", "2"}}, []string{`entry "broken" is not key=value`}},
		{"=x,a=1", false, []KeyValue{{"a", "1"}}, []string{`entry "=x" has an empty key`}},
		{"a=%zz,b=2", false, []KeyValue{{"b", "2"}}, []string{`value of "a" is not percent-encoded correctly`}},
		{"a=%zz,b=2", true, []KeyValue{{"a", "%zz"}, {"b", "2"}}, []string{`value of "a" is not percent-encoded correctly`}},
		{"a", false, nil, []string{`entry "a" is not key=value`}},
	}
	for _, tt := range tests {
		got, errs := ParseKeyValues(tt.in, tt.keepUndecoded)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseKeyValues(%q, %v) = %v, want %v", tt.in, tt.keepUndecoded, got, tt.want)
		}
		if len(errs) != len(tt.errs) {
			t.Errorf("ParseKeyValues(%q, %v) errors = %v, want %d", tt.in, tt.keepUndecoded, errs, len(tt.errs))
			continue
		}
		for i, e := range errs {
			if !strings.Contains(e.Error(), tt.errs[i]) {
				t.Errorf("error %d = %q, want it to contain %q", i, e, tt.errs[i])
			}
		}
	}
}

// TestReaderWarningsNameVariableAndValue checks that every typed reader
// warns about an invalid value as NAME="value": reason; outcome, once, and
// falls back to the next variable in line.
func TestReaderWarningsNameVariableAndValue(t *testing.T) {
	env := map[string]string{
		"B": "yes", "N": "0", "D": "soon", "S": "1ns", "M": "10s", "E": "zstd", "KV": "novalue", "BLANK": "  ", "GOOD": "GZIP",
	}
	r := New(func(k string) string { return env[k] }, "p: ")
	r.Bool("BLANK", "B")
	r.PositiveInt("N", "n must be positive")
	r.Duration("D", "period", 0)
	r.Duration("S", "period", time.Second)
	r.Millis("timeout", time.Second, "M")
	r.Enum("compression", []string{"gzip", "none"}, "E")
	r.KeyValues(false, nil, "KV")
	r.Bool("B") // read twice, warned once
	if v, ok := r.Enum("compression", []string{"gzip", "none"}, "E", "GOOD"); !ok || v != "gzip" {
		t.Errorf("Enum fell back to %q, %v; want the next variable's gzip", v, ok)
	}
	if on := r.BoolDefaultTrue("B"); !on {
		t.Error("BoolDefaultTrue(yes) = false, want the default, true")
	}
	want := []string{
		`p: B="yes": value must be "true" or "false"; read as false`,
		`p: N="0": n must be positive; ignored`,
		`p: D="soon": time: invalid duration "soon"; ignored`,
		`p: S="1ns": period must be at least 1s; ignored`,
		`p: M="10s": timeout must be an integer number of milliseconds; ignored`,
		`p: E="zstd": compression must be "gzip" or "none"; ignored`,
		`p: KV="novalue": entry "novalue" is not key=value; left out`,
		`p: B="yes": value must be "true" or "false"; ignored`,
	}
	errs := r.Warnings()
	if len(errs) != len(want) {
		t.Fatalf("%d errors, want %d: %v", len(errs), len(want), errs)
	}
	for i, w := range want {
		if errs[i].Error() != w {
			t.Errorf("error %d = %q, want %q", i, errs[i], w)
		}
	}
}

func TestEndpointForms(t *testing.T) {
	for _, tt := range []struct {
		v, want, err string
		plaintext    bool
	}{
		{v: "collector:4317", want: "collector:4317"},
		{v: "http://collector", want: "collector:80", plaintext: true},
		{v: "https://[::1]/path", want: "[::1]:443"},
		{v: "collector", err: "endpoint must be host:port"},
		{v: ":4317", err: "endpoint must name a host"},
		{v: "collector:0", err: `endpoint port must be a number from 1 to 65535 (port "0")`},
		{v: "grpc://collector:4317", err: `endpoint URL scheme must be http or https (scheme "grpc")`},
		{v: "http://", err: "endpoint URL must name a host"},
	} {
		got, plaintext, err := GRPCEndpoint(tt.v, func() bool { return false })
		if tt.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
				t.Errorf("GRPCEndpoint(%q) error = %v, want %q", tt.v, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want || plaintext != tt.plaintext {
			t.Errorf("GRPCEndpoint(%q) = %q, %v, %v; want %q, %v", tt.v, got, plaintext, err, tt.want, tt.plaintext)
		}
	}
}
