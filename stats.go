package profiler

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/pprofotel/profiler/internal/collect"
)

// Stats counts what a profiler has done since Start. Every window ends in
// exactly one of exported, failed or dropped, or is still queued or being
// exported: WindowsCollected is at least WindowsExported + WindowsFailed +
// WindowsDropped + WindowsQueued.
type Stats struct {
	// WindowsCollected counts windows collected and converted into a
	// request, the last, partial one at Stop included. A window with no
	// profile to send (between two reads of the goroutine-leak profile
	// when it is the only type, or whose only profile was skipped) is not
	// counted.
	WindowsCollected int64
	// WindowsExported counts windows the receiver accepted in full.
	WindowsExported int64
	// WindowsFailed counts windows the exporter gave up on: a permanent
	// error (such as HTTP 400 or gRPC INVALID_ARGUMENT), retries that ran
	// out of time, Stop's deadline, or a window too large to split into
	// requests that fit the exporter's limit. Of a window split in several
	// requests, some may have arrived.
	WindowsFailed int64
	// WindowsDropped counts windows discarded unsent, oldest first, to keep
	// the queue within WithQueueLimits while the receiver was slow or
	// unreachable.
	WindowsDropped int64
	// WindowsQueued is the number of windows waiting to be exported now,
	// not counting the one being exported.
	WindowsQueued int64
	// ExportRetries counts export attempts repeated after a retryable
	// failure, as the exporter reports them (the OTLP and Splunk
	// exporters' WithRetry).
	ExportRetries int64
	// BytesSent sums the protobuf sizes of the requests the receiver
	// accepted, before compression, as the exporter reports them; for an
	// exporter that reports none, the size of each request it accepted.
	BytesSent int64
	// FilesRemoved counts the file exporter's files removed from its
	// directory, oldest first, to keep within its retention bounds
	// (package exporters/otlpprofilefile).
	FilesRemoved int64
	// CollectionTime is the time spent reading the runtime's profiles and
	// computing their deltas, summed over windows.
	CollectionTime time.Duration
	// ConversionTime is the time spent converting the profiles into OTLP
	// requests, summed over windows.
	ConversionTime time.Duration
	// CPUProfilesSkipped counts windows that went without a CPU profile
	// because someone else held the process's CPU profiler (the
	// application's own pprof.StartCPUProfile, or /debug/pprof/profile);
	// each window tries again.
	CPUProfilesSkipped int64
	// GoroutineProfilesSkipped counts windows that went without a
	// goroutine profile because more goroutines ran than WithMaxGoroutines
	// allows; each window checks again.
	GoroutineProfilesSkipped int64
	// ProfilesLeftOut counts runtime profiles that could not be read or
	// decoded and were left out of their window; the window's other
	// profiles were sent.
	ProfilesLeftOut int64
	// GoroutinesLeaked is the number of leaked goroutines that the latest
	// goroutine-leak profile found (GoroutineLeakProfile; 0 until it is
	// first taken). A leaked goroutine never ends, so it only grows.
	GoroutinesLeaked int64
	// OffCPUSkipped counts traced stretches of the off-CPU profile that
	// did not run: the application ran the execution tracer with
	// runtime/trace.Start (/debug/pprof/trace, say), or more goroutines
	// than the profile traces (50,000).
	OffCPUSkipped int64
	// OffCPUTruncated counts traced stretches read only in part: more
	// trace than a stretch's byte budget, more waits than a window keeps,
	// a trace ended early or unreadable past some point. Values are
	// scaled by the time actually read.
	OffCPUTruncated int64
	// SlowRequestsExplained counts the slow requests (WithSlowRequestThreshold)
	// explained in the slow-request profile that comes with OffCPUProfile.
	SlowRequestsExplained int64
	// SlowRequestsDropped counts the requests that ran long and were not
	// explained: more watched at once (16) or more slow in a window
	// (1,000, the slowest kept) than the profile explains, its trace budget
	// spent, the execution tracer in use elsewhere, or no trace of the
	// request's goroutine read.
	SlowRequestsDropped int64
	// RoutesOverflowed counts requests whose route was sent as
	// "_other", their window having WithMaxRoutes others already: in
	// the request counts and in the "route" attribute of their samples.
	RoutesOverflowed int64
	// RoutesUnknown counts requests whose route changed after they
	// started (a span renamed or given its http.route later), whose
	// life overlapped a stretch of the CPU or off-CPU profile, and that
	// came when their window held as many such requests as it may until
	// the samples of that stretch are read: 524,288 for the CPU profile's
	// parts, 262,144 for the off-CPU profile's stretches. Their samples
	// in that profile may carry the route they started with; they keep
	// their span links.
	RoutesUnknown int64
	// RequestsAgedOut counts requests the profiler stopped following
	// before they ended: running for an hour, or beyond the 65,536 that
	// it follows running at once (the oldest go first). They are not
	// counted when they end; their samples keep the route they
	// started with.
	RequestsAgedOut int64
	// StringsRepaired counts strings that were not valid UTF-8, which
	// proto3 requires of every string a request carries, and were sent
	// with U+FFFD in place of each run of invalid bytes rather than
	// costing their window: pprof label keys and values set by the
	// application, function, file and mapping names, and resource
	// attributes (OTEL_RESOURCE_ATTRIBUTES, WithResource), counted once
	// at Start. A profile's string counts once per window it is sent in,
	// however many samples cite it. The first repair of the resource and
	// the first of the profiles are logged, the rest only counted.
	StringsRepaired int64
}

// Stats returns the profiler's counts so far. It may be called at any time,
// also after Stop; a disabled profiler counts nothing.
func (p *Profiler) Stats() Stats {
	if p == nil || p.pipe == nil {
		return Stats{}
	}
	queued := p.pipe.queued()
	return Stats{
		WindowsCollected: p.collected.Load(),
		WindowsExported:  p.sent.Exported.Load(),
		WindowsFailed:    p.sent.Failed.Load(),
		WindowsDropped:   p.sent.Dropped.Load(),
		WindowsQueued:    int64(queued),
		ExportRetries:    p.sent.Retries.Load(),
		BytesSent:        p.sent.BytesSent.Load(),
		FilesRemoved:     p.sent.FilesRemoved.Load(),
		CollectionTime:   time.Duration(p.collectNanos.Load()),
		ConversionTime:   time.Duration(p.convertNanos.Load()),

		CPUProfilesSkipped:       p.omitted.CPUProfilesSkipped.Load(),
		GoroutineProfilesSkipped: p.omitted.GoroutineProfilesSkipped.Load(),
		ProfilesLeftOut:          p.omitted.ProfilesLeftOut.Load(),
		OffCPUSkipped:            p.omitted.OffCPU.Skipped.Load(),
		OffCPUTruncated:          p.omitted.OffCPU.Truncated.Load(),
		SlowRequestsExplained:    p.omitted.OffCPU.SlowRequestsExplained.Load(),
		SlowRequestsDropped:      p.omitted.OffCPU.SlowRequestsDropped.Load(),
		RoutesOverflowed:         p.omitted.RoutesOverflowed.Load(),
		RoutesUnknown:            p.omitted.RoutesUnknown.Load(),
		RequestsAgedOut:          p.omitted.RequestsAgedOut.Load(),

		GoroutinesLeaked: p.leaked.Load(),
		StringsRepaired:  p.repaired.Load(),
	}
}

// countLeaks records how many leaked goroutines the goroutine-leak profile
// of w found, if w has one.
func (p *Profiler) countLeaks(w collect.Window) {
	for _, prof := range w.Profiles {
		if prof.Name != collect.GoroutineLeak {
			continue
		}
		var n int64
		for _, s := range prof.Data.Samples {
			n += s.Values[0]
		}
		p.leaked.Store(n)
	}
}

// statsMetric is one of the profiler's own metrics: an asynchronous
// instrument reported from a field of Stats.
type statsMetric struct {
	name, unit, description string
	kind                    metricKind
	// value reads the field; seconds for a duration.
	value func(Stats) float64
}

type metricKind int

const (
	counter       metricKind = iota // cumulative since Start
	upDownCounter                   // a level that rises and falls
	gauge                           // the latest value
)

// statsMetrics is the one table of the profiler's metrics: their names,
// units and descriptions, and the Stats field each reports. The counters
// are cumulative since Start.
var statsMetrics = []statsMetric{
	{"pprofotel.windows.collected", "{window}", "Profile windows collected and converted.", counter,
		func(s Stats) float64 { return float64(s.WindowsCollected) }},
	{"pprofotel.windows.exported", "{window}", "Profile windows the receiver accepted.", counter,
		func(s Stats) float64 { return float64(s.WindowsExported) }},
	{"pprofotel.windows.failed", "{window}", "Profile windows the exporter gave up on.", counter,
		func(s Stats) float64 { return float64(s.WindowsFailed) }},
	{"pprofotel.windows.dropped", "{window}", "Profile windows dropped unsent to bound the queue, oldest first.", counter,
		func(s Stats) float64 { return float64(s.WindowsDropped) }},
	{"pprofotel.windows.queued", "{window}", "Profile windows waiting to be exported.", upDownCounter,
		func(s Stats) float64 { return float64(s.WindowsQueued) }},
	{"pprofotel.export.retries", "{retry}", "Export attempts repeated after a retryable failure.", counter,
		func(s Stats) float64 { return float64(s.ExportRetries) }},
	{"pprofotel.export.bytes", "By", "Protobuf size of the requests the receiver accepted, before compression.", counter,
		func(s Stats) float64 { return float64(s.BytesSent) }},
	{"pprofotel.files.removed", "{file}", "Files the file exporter removed, oldest first, to keep within its retention bounds.", counter,
		func(s Stats) float64 { return float64(s.FilesRemoved) }},
	{"pprofotel.collection.time", "s", "Time spent reading runtime profiles and computing deltas.", counter,
		func(s Stats) float64 { return s.CollectionTime.Seconds() }},
	{"pprofotel.conversion.time", "s", "Time spent converting profiles into OTLP requests.", counter,
		func(s Stats) float64 { return s.ConversionTime.Seconds() }},
	{"pprofotel.cpu_profiles.skipped", "{window}", "Windows without a CPU profile because the CPU profiler was in use elsewhere.", counter,
		func(s Stats) float64 { return float64(s.CPUProfilesSkipped) }},
	{"pprofotel.goroutine_profiles.skipped", "{window}", "Windows without a goroutine profile because more goroutines ran than the limit allows.", counter,
		func(s Stats) float64 { return float64(s.GoroutineProfilesSkipped) }},
	{"pprofotel.profiles.left_out", "{profile}", "Runtime profiles that could not be read or decoded and were left out of their window.", counter,
		func(s Stats) float64 { return float64(s.ProfilesLeftOut) }},
	{"pprofotel.goroutines.leaked", "{goroutine}", "Leaked goroutines the latest goroutine-leak profile found.", gauge,
		func(s Stats) float64 { return float64(s.GoroutinesLeaked) }},
	{"pprofotel.offcpu.skipped", "{stretch}", "Off-CPU stretches not traced: the execution tracer was in use elsewhere, or too many goroutines.", counter,
		func(s Stats) float64 { return float64(s.OffCPUSkipped) }},
	{"pprofotel.offcpu.truncated", "{stretch}", "Off-CPU stretches read only in part.", counter,
		func(s Stats) float64 { return float64(s.OffCPUTruncated) }},
	{"pprofotel.slow_requests.explained", "{request}", "Slow requests explained in the slow-request profile.", counter,
		func(s Stats) float64 { return float64(s.SlowRequestsExplained) }},
	{"pprofotel.slow_requests.dropped", "{request}", "Requests that ran long and were not explained.", counter,
		func(s Stats) float64 { return float64(s.SlowRequestsDropped) }},
	{"pprofotel.routes.overflowed", "{request}", "Requests counted under the route _other because their window had the most routes allowed.", counter,
		func(s Stats) float64 { return float64(s.RoutesOverflowed) }},
	{"pprofotel.routes.unknown", "{request}", "Requests renamed after they started whose samples kept the route they started with: more ended than the profiler remembers.", counter,
		func(s Stats) float64 { return float64(s.RoutesUnknown) }},
	{"pprofotel.requests.aged_out", "{request}", "Requests no longer followed before they ended: running an hour, or beyond those followed at once.", counter,
		func(s Stats) float64 { return float64(s.RequestsAgedOut) }},
	{"pprofotel.strings.repaired", "{string}", "Strings that were not valid UTF-8, sent with U+FFFD in place of the invalid bytes.", counter,
		func(s Stats) float64 { return float64(s.StringsRepaired) }},
}

// registerMetrics reports Stats as the metrics of statsMetrics on mp, or
// on the global MeterProvider when mp is nil, until the returned
// registration is unregistered. Times are float64 seconds; the rest are
// int64.
func (p *Profiler) registerMetrics(mp metric.MeterProvider) (metric.Registration, error) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(ScopeName, metric.WithInstrumentationVersion(Version))
	instruments := make([]metric.Observable, len(statsMetrics))
	for i, sm := range statsMetrics {
		var (
			inst metric.Observable
			err  error
		)
		switch {
		case sm.unit == "s":
			inst, err = m.Float64ObservableCounter(sm.name, metric.WithUnit(sm.unit), metric.WithDescription(sm.description))
		case sm.kind == upDownCounter:
			inst, err = m.Int64ObservableUpDownCounter(sm.name, metric.WithUnit(sm.unit), metric.WithDescription(sm.description))
		case sm.kind == gauge:
			inst, err = m.Int64ObservableGauge(sm.name, metric.WithUnit(sm.unit), metric.WithDescription(sm.description))
		default:
			inst, err = m.Int64ObservableCounter(sm.name, metric.WithUnit(sm.unit), metric.WithDescription(sm.description))
		}
		if err != nil {
			return nil, err
		}
		instruments[i] = inst
	}
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := p.Stats()
		for i, sm := range statsMetrics {
			switch inst := instruments[i].(type) {
			case metric.Float64Observable:
				o.ObserveFloat64(inst, sm.value(s))
			case metric.Int64Observable:
				o.ObserveInt64(inst, int64(sm.value(s)))
			}
		}
		return nil
	}, instruments...)
}
