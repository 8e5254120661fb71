package profiler

import (
	"context"
	"fmt"
	"strings"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
)

// Exporter sends the profiler's windows somewhere: each window is one OTLP
// profiles request, with one shared dictionary, as the OpenTelemetry
// profiles signal defines it (v1development). The exporter packages under
// github.com/pprofotel/profiler/exporters implement it for OTLP over gRPC
// and HTTP, for files and for Splunk; an application may implement it too,
// to send windows anywhere else (see the example).
//
// The profiler calls Export from one goroutine at a time, in the order of
// the windows, and never after Shutdown. Export must honour ctx: Stop's
// deadline reaches it through ctx, and an Export that has not returned
// when ctx ends is given up, its window reported as not delivered. Export
// must not keep or change req after it returns. An error means the window
// did not arrive (in full); retrying, if any, is the exporter's business.
// Shutdown is called once, by Stop, after the last Export, and should
// release what the exporter holds within ctx's deadline. An exporter may
// also implement [CollectionDefaulter].
//
// The profiles signal of OpenTelemetry is Alpha: the request type follows
// the proto's v1development releases, so this interface changes with them.
type Exporter interface {
	Export(ctx context.Context, req *collectorpb.ExportProfilesServiceRequest) error
	Shutdown(ctx context.Context) error
}

// CollectionDefaulter is implemented by an [Exporter] whose destination
// expects particular profile types or a particular window length (the
// Splunk exporter does, from Splunk's own variables). The profiler uses
// them for what neither an option nor a variable sets: profiles are the
// names PPROFOTEL_PROFILES takes, and an empty list or a zero window
// leaves the profiler's default.
type CollectionDefaulter interface {
	CollectionDefaults() (profiles []string, window time.Duration)
}

// exporterDefaults returns the profile types and window that exp asks for,
// parsed into the profiler's terms, or none.
func exporterDefaults(exp Exporter) (types []ProfileType, window time.Duration, err error) {
	d, ok := exp.(CollectionDefaulter)
	if !ok {
		return nil, 0, nil
	}
	names, window := d.CollectionDefaults()
	if len(names) > 0 {
		if types, err = parseProfileList(strings.Join(names, ",")); err != nil {
			return nil, 0, fmt.Errorf("profiler: the exporter's collection defaults: %w", err)
		}
	}
	return types, window, nil
}
