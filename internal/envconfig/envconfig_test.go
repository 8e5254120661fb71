package envconfig

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/validutf8"
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
	r.KeyValues(List{}, "KV")
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

// TestWarningsCutLongValues checks that a huge value is shown cut, with
// its length, however the warning quotes it: once as NAME="value", and
// again where a parser's error repeats it.
func TestWarningsCutLongValues(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	tests := []struct {
		name string
		read func(r *Reader)
		want string
	}{
		{"duration, quoted again by time.ParseDuration", func(r *Reader) { r.Duration("V", "period", 0) },
			`p: V="` + strings.Repeat("x", validutf8.LogLimit) + `…(1048576 bytes)": time: invalid duration "` + strings.Repeat("x", validutf8.LogLimit) + `…(1048576 bytes)"; ignored`},
		{"integer", func(r *Reader) { r.PositiveInt("V", "n must be positive") },
			`p: V="` + strings.Repeat("x", validutf8.LogLimit) + `…(1048576 bytes)": n must be positive; ignored`},
		{"boolean", func(r *Reader) { r.Bool("V") },
			`p: V="` + strings.Repeat("x", validutf8.LogLimit) + `…(1048576 bytes)": value must be "true" or "false"; read as false`},
		{"list", func(r *Reader) { r.KeyValues(List{}, "V") },
			`p: V="` + strings.Repeat("x", validutf8.LogLimit) + `…(1048576 bytes)": entry "` + strings.Repeat("x", validutf8.LogLimit) + `…(1048576 bytes)" is not key=value; left out`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(func(string) string { return huge }, "p: ")
			tt.read(r)
			ws := r.Warnings()
			if len(ws) != 1 || ws[0].Error() != tt.want {
				t.Errorf("warnings %q, want %q", ws, tt.want)
			}
		})
	}

	// A value at the limit is shown whole; a character is not cut in two.
	r := New(func(string) string { return strings.Repeat("y", validutf8.LogLimit) }, "p: ")
	r.PositiveInt("V", "bad")
	if got, want := r.Warnings()[0].Error(), `p: V="`+strings.Repeat("y", validutf8.LogLimit)+`": bad; ignored`; got != want {
		t.Errorf("at the limit: %q, want %q", got, want)
	}
	r = New(func(string) string { return strings.Repeat("y", validutf8.LogLimit-1) + "é" + huge }, "p: ")
	r.PositiveInt("V", "bad")
	if got, want := r.Warnings()[0].Error(), `p: V="`+strings.Repeat("y", validutf8.LogLimit-1)+`…(1048705 bytes)": bad; ignored`; got != want {
		t.Errorf("a character across the limit: %q, want %q", got, want)
	}
}

// TestSecretListShowsNoValue checks that a warning about a list of
// credentials (the HEADERS variables) names the entries it leaves out by
// key or position and shows no value, neither the variable's nor an
// entry's.
func TestSecretListShowsNoValue(t *testing.T) {
	const secret = "s3cr3t"
	tests := []struct {
		name, value string
		check       func(KeyValue) error
		want        string
	}{
		{"entry without =", "authorization: Bearer " + secret + ",k=v",
			nil, `p: H=(32 bytes, not shown: it may hold credentials): entry number 1 is not key=value; left out, the other entries stand`},
		{"empty key", "=" + secret,
			nil, `p: H=(7 bytes, not shown: it may hold credentials): entry number 1 has an empty key; left out`},
		{"bad escape", "k=%zz" + secret,
			nil, `p: H=(11 bytes, not shown: it may hold credentials): value of "k" is not percent-encoded correctly; left out`},
		{"refused by check", "k=" + secret,
			func(kv KeyValue) error { return errors.New("header " + strconv.Quote(kv.Key) + " refused") },
			`p: H=(8 bytes, not shown: it may hold credentials): header "k" refused; left out`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(func(string) string { return tt.value }, "p: ")
			r.KeyValues(List{Secret: true, Check: tt.check}, "H")
			ws := r.Warnings()
			if len(ws) != 1 || ws[0].Error() != tt.want {
				t.Fatalf("warnings %q, want %q", ws, tt.want)
			}
			if strings.Contains(ws[0].Error(), secret) {
				t.Errorf("the warning shows a value: %v", ws[0])
			}
		})
	}
}
