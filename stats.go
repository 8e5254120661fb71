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
	// request, the last, partial one at Stop included. A window in which
	// the encoding finds nothing to send (the Splunk encoding, when no
	// sample was taken) is not counted.
	WindowsCollected int64
	// WindowsExported counts windows the receiver accepted in full.
	WindowsExported int64
	// WindowsFailed counts windows the exporter gave up on: a permanent
	// error (such as HTTP 400 or gRPC INVALID_ARGUMENT), retries that ran
	// out of time, Stop's deadline, or a window too large to split into
	// requests that fit WithMaxRequestBytes. Of a window split in several
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
	// failure (see WithRetry).
	ExportRetries int64
	// BytesSent sums the protobuf sizes of the requests the receiver
	// accepted, before compression.
	BytesSent int64
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
		CollectionTime:   time.Duration(p.collectNanos.Load()),
		ConversionTime:   time.Duration(p.convertNanos.Load()),

		CPUProfilesSkipped:       p.omitted.CPUSkipped.Load(),
		GoroutineProfilesSkipped: p.omitted.GoroutineSkipped.Load(),
		ProfilesLeftOut:          p.omitted.Errors.Load(),
		OffCPUSkipped:            p.omitted.OffCPU.Skipped.Load(),
		OffCPUTruncated:          p.omitted.OffCPU.Truncated.Load(),

		GoroutinesLeaked: p.leaked.Load(),
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

// Names of the profiler's own metrics, all asynchronous and reported from
// Stats. The counters are cumulative since Start.
const (
	metricWindowsCollected = "pprofotel.windows.collected"
	metricWindowsExported  = "pprofotel.windows.exported"
	metricWindowsFailed    = "pprofotel.windows.failed"
	metricWindowsDropped   = "pprofotel.windows.dropped"
	metricWindowsQueued    = "pprofotel.windows.queued"
	metricExportRetries    = "pprofotel.export.retries"
	metricExportBytes      = "pprofotel.export.bytes"
	metricCollectionTime   = "pprofotel.collection.time"
	metricConversionTime   = "pprofotel.conversion.time"
	metricCPUSkipped       = "pprofotel.cpu_profiles.skipped"
	metricGoroutineSkipped = "pprofotel.goroutine_profiles.skipped"
	metricProfilesLeftOut  = "pprofotel.profiles.left_out"

	metricGoroutinesLeaked = "pprofotel.goroutines.leaked"
	metricOffCPUSkipped    = "pprofotel.offcpu.skipped"
	metricOffCPUTruncated  = "pprofotel.offcpu.truncated"
)

// registerMetrics reports Stats as metrics of mp, or of the global
// MeterProvider when mp is nil, until the returned registration is
// unregistered.
func (p *Profiler) registerMetrics(mp metric.MeterProvider) (metric.Registration, error) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(ScopeName, metric.WithInstrumentationVersion(Version))
	counter := func(name, unit, desc string) (metric.Int64ObservableCounter, error) {
		return m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	}
	collected, err1 := counter(metricWindowsCollected, "{window}", "Profile windows collected and converted.")
	exported, err2 := counter(metricWindowsExported, "{window}", "Profile windows the receiver accepted.")
	failed, err3 := counter(metricWindowsFailed, "{window}", "Profile windows the exporter gave up on.")
	dropped, err4 := counter(metricWindowsDropped, "{window}", "Profile windows dropped unsent to bound the queue, oldest first.")
	retries, err5 := counter(metricExportRetries, "{retry}", "Export attempts repeated after a retryable failure.")
	sent, err6 := counter(metricExportBytes, "By", "Protobuf size of the requests the receiver accepted, before compression.")
	queued, err7 := m.Int64ObservableUpDownCounter(metricWindowsQueued, metric.WithUnit("{window}"),
		metric.WithDescription("Profile windows waiting to be exported."))
	collecting, err8 := m.Float64ObservableCounter(metricCollectionTime, metric.WithUnit("s"),
		metric.WithDescription("Time spent reading runtime profiles and computing deltas."))
	converting, err9 := m.Float64ObservableCounter(metricConversionTime, metric.WithUnit("s"),
		metric.WithDescription("Time spent converting profiles into OTLP requests."))
	cpuSkipped, err10 := counter(metricCPUSkipped, "{window}", "Windows without a CPU profile because the CPU profiler was in use elsewhere.")
	leftOut, err11 := counter(metricProfilesLeftOut, "{profile}", "Runtime profiles that could not be read or decoded and were left out of their window.")
	leaked, err12 := m.Int64ObservableGauge(metricGoroutinesLeaked, metric.WithUnit("{goroutine}"),
		metric.WithDescription("Leaked goroutines the latest goroutine-leak profile found."))
	offCPUSkipped, err13 := counter(metricOffCPUSkipped, "{stretch}", "Off-CPU stretches not traced: the execution tracer was in use elsewhere, or too many goroutines.")
	offCPUTruncated, err14 := counter(metricOffCPUTruncated, "{stretch}", "Off-CPU stretches read only in part.")
	goroutineSkipped, err15 := counter(metricGoroutineSkipped, "{window}", "Windows without a goroutine profile because more goroutines ran than the limit allows.")
	for _, err := range []error{err1, err2, err3, err4, err5, err6, err7, err8, err9, err10, err11, err12, err13, err14, err15} {
		if err != nil {
			return nil, err
		}
	}
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := p.Stats()
		o.ObserveInt64(collected, s.WindowsCollected)
		o.ObserveInt64(exported, s.WindowsExported)
		o.ObserveInt64(failed, s.WindowsFailed)
		o.ObserveInt64(dropped, s.WindowsDropped)
		o.ObserveInt64(queued, s.WindowsQueued)
		o.ObserveInt64(retries, s.ExportRetries)
		o.ObserveInt64(sent, s.BytesSent)
		o.ObserveFloat64(collecting, s.CollectionTime.Seconds())
		o.ObserveFloat64(converting, s.ConversionTime.Seconds())
		o.ObserveInt64(cpuSkipped, s.CPUProfilesSkipped)
		o.ObserveInt64(leftOut, s.ProfilesLeftOut)
		o.ObserveInt64(leaked, s.GoroutinesLeaked)
		o.ObserveInt64(offCPUSkipped, s.OffCPUSkipped)
		o.ObserveInt64(offCPUTruncated, s.OffCPUTruncated)
		o.ObserveInt64(goroutineSkipped, s.GoroutineProfilesSkipped)
		return nil
	}, collected, exported, failed, dropped, queued, retries, sent, collecting, converting, cpuSkipped, leftOut, leaked,
		offCPUSkipped, offCPUTruncated, goroutineSkipped)
}
