package otlpattr

import "testing"

// TestSampleTypesAreDistinct checks that no two entries of SampleTypes send
// the same sample and period types, so that a Profile's types name its
// runtime profile, and that every entry is found back from them.
func TestSampleTypesAreDistinct(t *testing.T) {
	for _, st := range SampleTypes {
		got, ok := PprofSampleType(st.Sample, st.Period)
		if !ok || got != st {
			t.Errorf("PprofSampleType(%v, %v) = %v, %v; want %v", st.Sample, st.Period, got, ok, st)
		}
	}
	cpu := SampleTypes[0]
	if got := Unsent([]SampleType{cpu}); len(got) != 1 || got[0].Pprof != (ValueType{Type: "cpu", Unit: "nanoseconds"}) {
		t.Errorf("Unsent(samples/count) = %v, want cpu/nanoseconds", got)
	}
	if got := Unsent([]SampleType{cpu, SampleTypes[1]}); len(got) != 0 {
		t.Errorf("Unsent(both CPU types) = %v, want none", got)
	}
}

// TestReceived checks what a Profile's types stand for: the table's entry
// of its profile, or its own types for a pair the table does not know or
// one sent under another profile's name.
func TestReceived(t *testing.T) {
	mutexDelay := ValueType{"mutex_delay", "nanoseconds"}
	mutexPeriod := ValueType{"mutex_contentions", "count"}
	other := ValueType{"wall", "nanoseconds"}
	for _, tt := range []struct {
		name           string
		sample, period ValueType
		wantPprof      ValueType
		wantProfile    string
	}{
		{"mutex", mutexDelay, mutexPeriod, ValueType{"delay", "nanoseconds"}, "mutex"},
		{"", mutexDelay, mutexPeriod, ValueType{"delay", "nanoseconds"}, "mutex"},
		{"block", mutexDelay, mutexPeriod, mutexDelay, "block"},
		{"wall", other, other, other, "wall"},
	} {
		got := Received(tt.name, tt.sample, tt.period)
		if got.Pprof != tt.wantPprof || got.Profile != tt.wantProfile {
			t.Errorf("Received(%q, %v, %v) = %+v, want pprof type %v of %q", tt.name, tt.sample, tt.period, got, tt.wantPprof, tt.wantProfile)
		}
	}
}
