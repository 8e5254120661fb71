package profiler

import (
	"reflect"
	"testing"
	"time"
)

func TestProfileTypeString(t *testing.T) {
	tests := []struct {
		t    ProfileType
		want string
	}{
		{CPUProfile, "cpu"},
		{HeapProfile, "heap"},
		{GoroutineProfile, "goroutine"},
		{MutexProfile, "mutex"},
		{BlockProfile, "block"},
		{OffCPUProfile, "offcpu"},
		{GoroutineLeakProfile, "goroutineleak"},
		{ProfileType(-1), "ProfileType(-1)"},
		{ProfileType(7), "ProfileType(7)"},
	}
	for _, tt := range tests {
		if got := tt.t.String(); got != tt.want {
			t.Errorf("ProfileType(%d).String() = %q, want %q", int(tt.t), got, tt.want)
		}
	}
}

func TestParseProfileType(t *testing.T) {
	for _, pt := range []ProfileType{CPUProfile, HeapProfile, GoroutineProfile, MutexProfile, BlockProfile, OffCPUProfile, GoroutineLeakProfile} {
		got, ok := parseProfileType(pt.String())
		if !ok || got != pt {
			t.Errorf("parseProfileType(%q) = %v, %v, want %v, true", pt.String(), got, ok, pt)
		}
	}
	if got, ok := parseProfileType("Goroutine"); !ok || got != GoroutineProfile {
		t.Errorf("parseProfileType(%q) = %v, %v, want goroutine, true", "Goroutine", got, ok)
	}
	for _, s := range []string{"", "allocs", "threadcreate", "cpu "} {
		if _, ok := parseProfileType(s); ok {
			t.Errorf("parseProfileType(%q) succeeded, want failure", s)
		}
	}
}

func TestWithProfileTypes(t *testing.T) {
	tests := []struct {
		in   []ProfileType
		want []ProfileType
	}{
		{[]ProfileType{CPUProfile}, []ProfileType{CPUProfile}},
		{[]ProfileType{BlockProfile, CPUProfile, MutexProfile}, []ProfileType{CPUProfile, MutexProfile, BlockProfile}},
		{[]ProfileType{HeapProfile, HeapProfile, HeapProfile}, []ProfileType{HeapProfile}},
		{[]ProfileType{BlockProfile, MutexProfile, GoroutineProfile, HeapProfile, CPUProfile, CPUProfile},
			[]ProfileType{CPUProfile, HeapProfile, GoroutineProfile, MutexProfile, BlockProfile}},
	}
	for _, tt := range tests {
		c := mustConfig(t, []Option{WithProfileTypes(tt.in...)}, nil)
		if !reflect.DeepEqual(c.profileTypes, tt.want) {
			t.Errorf("WithProfileTypes(%v) gives %v, want %v", tt.in, c.profileTypes, tt.want)
		}
	}
}

// Options keep their own copies, so that a caller reusing a slice or map
// after Start cannot change the configuration.
func TestOptionsCopyArguments(t *testing.T) {
	types := []ProfileType{MutexProfile}
	headers := map[string]string{"k": "v"}
	opts := []Option{WithProfileTypes(types...), WithHeaders(headers)}
	types[0] = CPUProfile
	headers["k"] = "changed"
	headers["extra"] = "x"

	c := mustConfig(t, opts, nil)
	if !reflect.DeepEqual(c.profileTypes, []ProfileType{MutexProfile}) {
		t.Errorf("profileTypes = %v, want [mutex]", c.profileTypes)
	}
	if !reflect.DeepEqual(c.otlp.Headers, map[string]string{"k": "v"}) {
		t.Errorf("headers = %v, want map[k:v]", c.otlp.Headers)
	}

	// The same options resolve alike twice.
	c2 := mustConfig(t, opts, nil)
	if !reflect.DeepEqual(c.profileTypes, c2.profileTypes) || !reflect.DeepEqual(c.otlp, c2.otlp) {
		t.Errorf("second resolution differs: %+v vs %+v", c2.otlp, c.otlp)
	}
}

func TestOptionsLastWins(t *testing.T) {
	c := mustConfig(t, []Option{
		nil, // ignored
		WithPeriod(time.Second), WithPeriod(2 * time.Second),
		WithExporter(ExporterNone), WithExporter(ExporterFile),
		WithProtocol(ProtocolGRPC), WithProtocol(ProtocolHTTPJSON),
		WithHeaders(map[string]string{"a": "1"}), WithHeaders(nil),
		WithFileJSON(true), WithFileJSON(false),
	}, map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "env=1"})
	if c.period != 2*time.Second || c.exporter != ExporterFile || c.otlp.Protocol != "http/json" || c.file.JSON {
		t.Errorf("period, exporter, protocol, json = %v, %v, %v, %v; want 2s, file, http/json, false",
			c.period, c.exporter, c.otlp.Protocol, c.file.JSON)
	}
	// WithHeaders(nil) is an explicit "no headers": it shadows the variable.
	if c.otlp.Headers != nil {
		t.Errorf("headers = %v, want none", c.otlp.Headers)
	}
}
