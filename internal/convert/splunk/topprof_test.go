package splunk

import (
	pprof "github.com/google/pprof/profile"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/pprofotel/profiler/pprofconv"
)

// toPprof is the conversion exporters/splunk gives Encode.
func toPprof(req *collectorpb.ExportProfilesServiceRequest, source string, profiles []string) (map[string]*pprof.Profile, error) {
	out, _, err := pprofconv.Convert([]pprofconv.Request{{Request: req, Source: source}}, pprofconv.Filter{Profiles: profiles})
	return out, err
}
