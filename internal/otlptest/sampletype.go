package otlptest

import (
	"github.com/pprofotel/profiler/internal/otlpattr"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
)

// pprofSampleType returns the entry of otlpattr.SampleTypes that sent prof, or,
// for a Profile the table does not know, an entry that keeps its types. Out
// of range string indices read as "".
func pprofSampleType(d *profilespb.ProfilesDictionary, prof *profilespb.Profile) otlpattr.SampleType {
	str := func(i int32) string {
		if i < 0 || int(i) >= len(d.GetStringTable()) {
			return ""
		}
		return d.GetStringTable()[i]
	}
	vt := func(v *profilespb.ValueType) otlpattr.ValueType {
		return otlpattr.ValueType{Type: str(v.GetTypeStrindex()), Unit: str(v.GetUnitStrindex())}
	}
	sample, period := vt(prof.GetSampleType()), vt(prof.GetPeriodType())
	if st, ok := otlpattr.PprofSampleType(sample, period); ok {
		return st
	}
	return otlpattr.SampleType{Pprof: sample, PprofPeriod: period, Sample: sample, Period: period}
}
