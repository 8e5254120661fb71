package profiler

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/collect"
)

// readMetrics collects the profiler's metrics from reader, keyed by name,
// with their units.
func readMetrics(t *testing.T, reader *sdkmetric.ManualReader) (values map[string]float64, units map[string]string) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	values = make(map[string]float64)
	units = make(map[string]string)
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != ScopeName {
			continue
		}
		if sm.Scope.Version != Version {
			t.Errorf("meter version %q, want %q", sm.Scope.Version, Version)
		}
		for _, m := range sm.Metrics {
			units[m.Name] = m.Unit
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if len(d.DataPoints) != 1 {
					t.Fatalf("%s: %d data points", m.Name, len(d.DataPoints))
				}
				values[m.Name] = float64(d.DataPoints[0].Value)
			case metricdata.Sum[float64]:
				if len(d.DataPoints) != 1 {
					t.Fatalf("%s: %d data points", m.Name, len(d.DataPoints))
				}
				values[m.Name] = d.DataPoints[0].Value
			case metricdata.Gauge[int64]:
				if len(d.DataPoints) != 1 {
					t.Fatalf("%s: %d data points", m.Name, len(d.DataPoints))
				}
				values[m.Name] = float64(d.DataPoints[0].Value)
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return values, units
}

// asMetrics gives s as the values its metrics must report.
func asMetrics(s Stats) map[string]float64 {
	return map[string]float64{
		"pprofotel.windows.collected": float64(s.WindowsCollected),
		"pprofotel.windows.exported":  float64(s.WindowsExported),
		"pprofotel.windows.failed":    float64(s.WindowsFailed),
		"pprofotel.windows.dropped":   float64(s.WindowsDropped),
		"pprofotel.windows.queued":    float64(s.WindowsQueued),
		"pprofotel.export.retries":    float64(s.ExportRetries),
		"pprofotel.export.bytes":      float64(s.BytesSent),
		"pprofotel.collection.time":   s.CollectionTime.Seconds(),
		"pprofotel.conversion.time":   s.ConversionTime.Seconds(),
		"pprofotel.goroutines.leaked": float64(s.GoroutinesLeaked),
		"pprofotel.files.removed":     float64(s.FilesRemoved),
		"pprofotel.strings.repaired":  float64(s.StringsRepaired),
	}
}

func TestStatsAndMetrics(t *testing.T) {
	r := newReceiver()
	endpoint := startReceiver(t, "http", r)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	p, err := Start(shortWindows(), WithExporter(httpExporter(t, endpoint+"/v1development/profiles")),
		WithWindow(20*time.Millisecond), WithProfileTypes(GoroutineProfile, HeapProfile),
		WithMeterProvider(mp), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	poll(t, "three windows exported", func() bool { return p.Stats().WindowsExported >= 3 })

	// The profiler keeps running, so a reading lies between the stats just
	// before and just after it.
	before := asMetrics(p.Stats())
	got, units := readMetrics(t, reader)
	after := asMetrics(p.Stats())
	wantUnits := map[string]string{
		"pprofotel.windows.collected": "{window}", "pprofotel.windows.exported": "{window}",
		"pprofotel.windows.failed": "{window}", "pprofotel.windows.dropped": "{window}",
		"pprofotel.windows.queued": "{window}", "pprofotel.export.retries": "{retry}",
		"pprofotel.export.bytes": "By", "pprofotel.collection.time": "s", "pprofotel.conversion.time": "s",
		"pprofotel.goroutines.leaked": "{goroutine}", "pprofotel.files.removed": "{file}", "pprofotel.strings.repaired": "{string}",
		"pprofotel.routes.overflowed": "{request}", "pprofotel.routes.unknown": "{request}",
		"pprofotel.requests.aged_out": "{request}",
	}
	for name, unit := range wantUnits {
		v, ok := got[name]
		if !ok {
			t.Errorf("metric %s not reported", name)
			continue
		}
		if units[name] != unit {
			t.Errorf("%s: unit %q, want %q", name, units[name], unit)
		}
		lo, hi := min(before[name], after[name]), max(before[name], after[name])
		if v < lo || v > hi {
			t.Errorf("%s = %v, stats said %v then %v", name, v, before[name], after[name])
		}
	}
	if got["pprofotel.windows.collected"] < 3 || got["pprofotel.export.bytes"] <= 0 || got["pprofotel.collection.time"] <= 0 || got["pprofotel.conversion.time"] <= 0 {
		t.Errorf("metrics report nothing done: %v", got)
	}

	// No window may be lost: Stop is given as long as a busy machine
	// needs to send the last one, not the default five seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	s := checkAccounting(t, p)
	if s.WindowsFailed != 0 || s.WindowsDropped != 0 || s.ExportRetries != 0 {
		t.Errorf("a healthy receiver: failed %d, dropped %d, retries %d", s.WindowsFailed, s.WindowsDropped, s.ExportRetries)
	}
	r.mu.Lock()
	var bytes int64
	for _, req := range r.requests {
		bytes += int64(proto.Size(req))
	}
	n := int64(len(r.requests))
	r.mu.Unlock()
	if n != s.WindowsExported || bytes != s.BytesSent {
		t.Errorf("the receiver got %d requests, %d bytes; stats say %d windows, %d bytes", n, bytes, s.WindowsExported, s.BytesSent)
	}
	if s.CollectionTime <= 0 || s.ConversionTime <= 0 {
		t.Errorf("collection time %v, conversion time %v", s.CollectionTime, s.ConversionTime)
	}

	// Stop unregistered the metrics; Stats still answers.
	if after, _ := readMetrics(t, reader); len(after) != 0 {
		t.Errorf("metrics still reported after Stop: %v", after)
	}
	if p.Stats() != s {
		t.Errorf("Stats changed after Stop: %+v, then %+v", s, p.Stats())
	}
	mp.Shutdown(context.Background())
	checkNoProfilerGoroutines(t)
}

// checkNoProfilerGoroutines looks for the goroutines of a profiler (its
// loop, its sender, the HTTP exporter's connections) among all goroutines,
// allowing those that are ending up to a minute to go (a guard, not a
// timing assertion). The test's receiver runs until cleanup, so counting
// goroutines would not do.
func checkNoProfilerGoroutines(t *testing.T) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for range 6000 {
		stacks := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "profiler.(*Profiler).loop") &&
			!strings.Contains(stacks, "delivery.(*Queue[...]).run") &&
			!strings.Contains(stacks, "(*persistConn)") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("profiler goroutines left after Stop:\n%s", buf[:runtime.Stack(buf, true)])
}

func TestStatsOfDisabledProfiler(t *testing.T) {
	t.Setenv("PPROFOTEL_ENABLED", "false")
	p, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s != (Stats{}) {
		t.Errorf("a disabled profiler counts %+v", s)
	}
	var nilProfiler *Profiler
	if s := nilProfiler.Stats(); s != (Stats{}) {
		t.Errorf("a nil profiler counts %+v", s)
	}
}

// TestWindowsWithNothingToSend runs windows in which the CPU profiler
// records nothing: there is no request to send for them, and they must not
// count as collected windows that never end.
func TestWindowsWithNothingToSend(t *testing.T) {
	for _, tt := range []struct {
		name          string
		exporter      Exporter
		wantCollected bool
	}{
		{"discarding", noneExporter{}, false},
		{"to files", fileExporter(t, t.TempDir()), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// A CPU profiler that writes nothing: no CPU profile in any
			// window.
			silent := collect.CPUProfiler{Start: func(io.Writer) error { return nil }, Stop: func() {}}
			p, err := Start(shortWindows(), withRuntime(nil, silent), WithExporter(tt.exporter), WithProfileTypes(CPUProfile),
				WithWindow(5*time.Millisecond), WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(30 * time.Millisecond) // a few windows; any number will do
			if err := p.Stop(stopContext(t)); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			s := p.Stats()
			if s.WindowsCollected != s.WindowsExported+s.WindowsFailed+s.WindowsDropped+s.WindowsQueued {
				t.Errorf("collected %d windows, but exported %d + failed %d + dropped %d + queued %d",
					s.WindowsCollected, s.WindowsExported, s.WindowsFailed, s.WindowsDropped, s.WindowsQueued)
			}
			if got := s.WindowsCollected > 0; got != tt.wantCollected {
				t.Errorf("collected %d windows; want some: %v", s.WindowsCollected, tt.wantCollected)
			}
		})
	}
}
