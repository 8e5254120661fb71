// Package splunktest decodes and checks the Splunk profiling logs that
// package splunk encodes, for the tests of that package and of
// exporters/splunk.
package splunktest

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"

	gpprof "github.com/google/pprof/profile"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
)

// Records returns the log records of req by profiling.data.type, checking
// the envelope the conventions prescribe on the way.
func Records(t testing.TB, req *collogspb.ExportLogsServiceRequest) map[string]*logspb.LogRecord {
	t.Helper()
	if n := len(req.GetResourceLogs()); n != 1 {
		t.Fatalf("%d ResourceLogs, want 1", n)
	}
	rl := req.ResourceLogs[0]
	if n := len(rl.GetScopeLogs()); n != 1 {
		t.Fatalf("%d ScopeLogs, want 1", n)
	}
	sl := rl.ScopeLogs[0]
	if sl.GetScope().GetName() != "otel.profiling" || sl.GetScope().GetVersion() != "0.1.0" {
		t.Fatalf("scope %q %q, want otel.profiling 0.1.0", sl.GetScope().GetName(), sl.GetScope().GetVersion())
	}
	out := make(map[string]*logspb.LogRecord)
	for _, r := range sl.LogRecords {
		attrs := Attributes(r)
		if attrs["com.splunk.sourcetype"] != "otel.profiling" {
			t.Errorf("com.splunk.sourcetype = %q", attrs["com.splunk.sourcetype"])
		}
		if attrs["profiling.data.format"] != "pprof-gzip-base64" {
			t.Errorf("profiling.data.format = %q", attrs["profiling.data.format"])
		}
		typ := attrs["profiling.data.type"]
		if _, dup := out[typ]; dup {
			t.Fatalf("two records of type %q", typ)
		}
		out[typ] = r
	}
	return out
}

// Attributes renders a record's attributes as strings, ints in decimal.
func Attributes(r *logspb.LogRecord) map[string]string {
	m := make(map[string]string)
	for _, kv := range r.Attributes {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = fmt.Sprint(v.IntValue)
		default:
			m[kv.Key] = fmt.Sprintf("unexpected %T", v)
		}
	}
	return m
}

// DecodeBody undoes the body's encoding step by step: base64, gzip, then
// github.com/google/pprof/profile, and checks the profile's consistency.
func DecodeBody(t testing.TB, r *logspb.LogRecord) *gpprof.Profile {
	t.Helper()
	sv, ok := r.GetBody().GetValue().(*commonpb.AnyValue_StringValue)
	if !ok {
		t.Fatalf("body is %T, want a string", r.GetBody().GetValue())
	}
	gz, err := base64.StdEncoding.DecodeString(sv.StringValue)
	if err != nil {
		t.Fatalf("body is not base64: %v", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatalf("body is not gzip: %v", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	p, err := gpprof.ParseUncompressed(raw)
	if err != nil {
		t.Fatalf("body is not a pprof profile: %v", err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("invalid pprof profile: %v", err)
	}
	return p
}

// Depth counts a decoded sample's frames the way the encoder documents it.
func Depth(s *gpprof.Sample) int {
	n := 0
	for _, loc := range s.Location {
		n += max(len(loc.Line), 1)
	}
	return n
}

// Frames lists a sample's function names, leaf first; "?" for a location
// without symbols.
func Frames(s *gpprof.Sample) []string {
	var out []string
	for _, loc := range s.Location {
		if len(loc.Line) == 0 {
			out = append(out, "?")
		}
		for _, ln := range loc.Line {
			out = append(out, ln.Function.Name)
		}
	}
	return out
}

// HasFrame reports whether s has a frame of the function name.
func HasFrame(s *gpprof.Sample, name string) bool {
	for _, f := range Frames(s) {
		if f == name {
			return true
		}
	}
	return false
}

// RenderProfile writes p as text for golden files: header, then one line
// per sample with values, stack and sorted labels.
func RenderProfile(b *strings.Builder, p *gpprof.Profile) {
	var types []string
	for _, st := range p.SampleType {
		types = append(types, st.Type+"/"+st.Unit)
	}
	fmt.Fprintf(b, "  sample types: %s\n", strings.Join(types, " "))
	fmt.Fprintf(b, "  period: %d %s/%s\n", p.Period, p.PeriodType.Type, p.PeriodType.Unit)
	fmt.Fprintf(b, "  time: %d duration: %d default: %q\n", p.TimeNanos, p.DurationNanos, p.DefaultSampleType)
	fmt.Fprintf(b, "  locations: %d functions: %d mappings: %d\n", len(p.Location), len(p.Function), len(p.Mapping))
	for _, s := range p.Sample {
		var labels []string
		for k, vs := range s.Label {
			for _, v := range vs {
				labels = append(labels, k+"="+v)
			}
		}
		for k, vs := range s.NumLabel {
			for _, v := range vs {
				labels = append(labels, fmt.Sprintf("%s=%d", k, v))
			}
		}
		sort.Strings(labels)
		fr := Frames(s)
		if len(fr) > 6 {
			fr = append(fr[:3:3], fmt.Sprintf("…%d frames…", len(fr)-6), fr[len(fr)-3], fr[len(fr)-2], fr[len(fr)-1])
		}
		fmt.Fprintf(b, "  %v %s [%s]\n", s.Value, strings.Join(fr, ";"), strings.Join(labels, " "))
	}
}

// SampleLabel returns the single value of a string label, or "".
func SampleLabel(s *gpprof.Sample, key string) string {
	if vs := s.Label[key]; len(vs) == 1 {
		return vs[0]
	}
	return ""
}
