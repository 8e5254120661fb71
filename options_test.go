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

// Options keep their own copies, so that a caller reusing a slice after
// Start cannot change the configuration.
func TestOptionsCopyArguments(t *testing.T) {
	types := []ProfileType{MutexProfile}
	opts := []Option{WithProfileTypes(types...), WithExporter(noneExporter{})}
	types[0] = CPUProfile

	c := mustConfig(t, opts, nil)
	if !reflect.DeepEqual(c.profileTypes, []ProfileType{MutexProfile}) {
		t.Errorf("profileTypes = %v, want [mutex]", c.profileTypes)
	}
	// The same options resolve alike twice.
	c2 := mustConfig(t, opts, nil)
	if !reflect.DeepEqual(c.profileTypes, c2.profileTypes) {
		t.Errorf("second resolution differs: %v vs %v", c2.profileTypes, c.profileTypes)
	}
}

func TestOptionsLastWins(t *testing.T) {
	second := &defaultsExporter{}
	c := mustConfig(t, []Option{
		nil, // ignored
		WithWindow(time.Second), WithWindow(2 * time.Second),
		WithExporter(noneExporter{}), WithExporter(second),
		WithCPUDutyCycle(10), WithCPUDutyCycle(50),
	}, nil)
	if c.window != 2*time.Second || c.exporter != Exporter(second) || c.cpuDuration != time.Second {
		t.Errorf("window, exporter, CPU recording = %v, %T, %v; want 2s, the second exporter, 1s",
			c.window, c.exporter, c.cpuDuration)
	}
}
