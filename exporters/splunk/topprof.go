package splunk

import (
	pprof "github.com/google/pprof/profile"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/pprofotel/profiler/pprofconv"
)

// toPprof reads the profiles named out of req with pprofconv, the
// project's one conversion from OTLP back to pprof.
func toPprof(req *collectorpb.ExportProfilesServiceRequest, source string, profiles []string) (map[string]*pprof.Profile, error) {
	out, _, err := pprofconv.Convert([]pprofconv.Request{{Request: req, Source: source}}, pprofconv.Filter{Profiles: profiles})
	return out, err
}
