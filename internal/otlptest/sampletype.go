package otlptest

import (
	"github.com/pprofotel/profiler/internal/otlp"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
)

// pprofSampleType returns the entry of otlp.SampleTypes that sent prof, or,
// for a Profile the table does not know, an entry that keeps its types. Out
// of range string indices read as "".
func pprofSampleType(d *profilespb.ProfilesDictionary, prof *profilespb.Profile) otlp.SampleType {
	str := func(i int32) string {
		if i < 0 || int(i) >= len(d.GetStringTable()) {
			return ""
		}
		return d.GetStringTable()[i]
	}
	vt := func(v *profilespb.ValueType) otlp.ValueType {
		return otlp.ValueType{Type: str(v.GetTypeStrindex()), Unit: str(v.GetUnitStrindex())}
	}
	sample, period := vt(prof.GetSampleType()), vt(prof.GetPeriodType())
	if st, ok := otlp.PprofSampleType(sample, period); ok {
		return st
	}
	return otlp.SampleType{Pprof: sample, PprofPeriod: period, Sample: sample, Period: period}
}
