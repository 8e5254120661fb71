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
