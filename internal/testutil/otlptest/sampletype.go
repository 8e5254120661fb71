package otlptest

import (
	"github.com/pprofotel/profiler/internal/otlpattr"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
)

// pprofSampleType returns what prof stands for (otlpattr.Received), its
// types read from d. Out of range string indices read as "".
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
	// Any profile's entry: the validator checks the scope's name apart.
	return otlpattr.Received("", vt(prof.GetSampleType()), vt(prof.GetPeriodType()))
}
