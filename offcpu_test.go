package profiler

import (
	"context"
	"encoding/hex"
	"path/filepath"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/pprofotel/profiler/internal/otlptest"
	"github.com/pprofotel/profiler/labels"
	"github.com/pprofotel/profiler/pprofconv"
)

//go:noinline
func waitOnChannel(d time.Duration) {
	ch := make(chan struct{})
	go func() { time.Sleep(d); close(ch) }()
	<-ch
}

//go:noinline
func waitOnMutex(d time.Duration) {
	var mu sync.Mutex
	mu.Lock()
	go func() { time.Sleep(d); mu.Unlock() }()
	mu.Lock()
}

//go:noinline
func waitInSleep(d time.Duration) { time.Sleep(d) }

// offCPUWait is one wait of an exported off-CPU profile.
type offCPUWait struct {
	funcs           []string
	reason          string
	traceID, spanID string
	nanos           int64
	at              uint64
	windowStart     uint64
	windowEnd       uint64
}

// offCPUWaits returns every wait of req's off-CPU profile, one per
// value and timestamp.
func offCPUWaits(t *testing.T, req *collectorpb.ExportProfilesServiceRequest) []offCPUWait {
	t.Helper()
	d := req.GetDictionary()
	str := d.GetStringTable()
	var out []offCPUWait
	for _, sp := range req.GetResourceProfiles()[0].GetScopeProfiles() {
		if scopeName(sp.GetScope().GetAttributes()) != "offcpu" {
			continue
		}
		for _, p := range sp.GetProfiles() {
			st, pt := p.GetSampleType(), p.GetPeriodType()
			if got := str[st.GetTypeStrindex()] + "/" + str[st.GetUnitStrindex()]; got != "off_cpu/nanoseconds" {
				t.Fatalf("off-CPU sample type %s, want off_cpu/nanoseconds", got)
			}
			if p.GetPeriod() != 0 || pt.GetTypeStrindex() != 0 {
				t.Errorf("off-CPU profile has period %d of type %q; it has none", p.GetPeriod(), str[pt.GetTypeStrindex()])
			}
			for _, s := range p.GetSamples() {
				w := offCPUWait{windowStart: p.GetTimeUnixNano(), windowEnd: p.GetTimeUnixNano() + p.GetDurationNano()}
				for _, li := range d.GetStackTable()[s.GetStackIndex()].GetLocationIndices() {
					for _, ln := range d.GetLocationTable()[li].GetLines() {
						w.funcs = append(w.funcs, str[d.GetFunctionTable()[ln.GetFunctionIndex()].GetNameStrindex()])
					}
				}
				if s.GetLinkIndex() != 0 {
					l := d.GetLinkTable()[s.GetLinkIndex()]
					w.traceID, w.spanID = hex.EncodeToString(l.GetTraceId()), hex.EncodeToString(l.GetSpanId())
				}
				for _, ai := range s.GetAttributeIndices() {
					if a := d.GetAttributeTable()[ai]; str[a.GetKeyStrindex()] == "wait_reason" {
						w.reason = a.GetValue().GetStringValue()
					}
				}
				if len(s.GetValues()) != len(s.GetTimestampsUnixNano()) {
					t.Fatalf("off-CPU sample with %d values and %d timestamps", len(s.GetValues()), len(s.GetTimestampsUnixNano()))
				}
				for i, v := range s.GetValues() {
					w.nanos, w.at = v, s.GetTimestampsUnixNano()[i]
					out = append(out, w)
				}
			}
		}
	}
	return out
}

// TestOffCPUWaitsByStackReasonAndSpan is the off-CPU profile end to end: a
// goroutine inside a span waits on a channel, a mutex and a sleep, and the
// exported profile holds each wait on its stack, with its reason, linked
// to the span, timed inside the window.
func TestOffCPUWaitsByStackReasonAndSpan(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	tracer := labels.WrapTracerProvider(tp).Tracer("offcpu-test")

	dir := t.TempDir()
	p, err := Start(WithPeriod(time.Hour), WithProfileTypes(OffCPUProfile), WithOffCPUDutyCycle(100),
		WithExporter(ExporterFile), WithFileDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	waits := []struct {
		fn, reason string
		wait       func(time.Duration)
		d          time.Duration
		took       time.Duration
	}{
		{"waitOnChannel", "chan receive", waitOnChannel, 300 * time.Millisecond, 0},
		{"waitOnMutex", "sync", waitOnMutex, 200 * time.Millisecond, 0},
		{"waitInSleep", "sleep", waitInSleep, 100 * time.Millisecond, 0},
	}
	_, span := tracer.Start(context.Background(), "request")
	for i := range waits {
		t0 := time.Now()
		waits[i].wait(waits[i].d)
		waits[i].took = time.Since(t0)
	}
	span.End()
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	files, _ := filepath.Glob(filepath.Join(dir, "*.pb"))
	var got []offCPUWait
	for _, f := range files {
		reqs, err := pprofconv.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reqs {
			if err := otlptest.Validate(r.Request); err != nil {
				t.Errorf("%s: %v", f, err)
			}
			got = append(got, offCPUWaits(t, r.Request)...)
		}
	}
	sc := span.SpanContext()
	for _, w := range waits {
		var total time.Duration
		for _, g := range got {
			if !inStack(g.funcs, w.fn) {
				continue
			}
			if g.reason != w.reason {
				t.Errorf("%s: a wait of %v with reason %q, want %q", w.fn, time.Duration(g.nanos), g.reason, w.reason)
				continue
			}
			if g.traceID != sc.TraceID().String() || g.spanID != sc.SpanID().String() {
				t.Errorf("%s: wait linked to %s/%s, want span %s/%s", w.fn, g.traceID, g.spanID, sc.TraceID(), sc.SpanID())
			}
			if g.at < g.windowStart || g.at >= g.windowEnd {
				t.Errorf("%s: wait at %d, outside the window [%d, %d)", w.fn, g.at, g.windowStart, g.windowEnd)
			}
			total += time.Duration(g.nanos)
		}
		// A wait lasts until the goroutine runs again: on a busy machine
		// that includes waiting for a CPU after the wake-up, so the
		// reference is how long the call took (at least its nominal time).
		if w.took < w.d {
			t.Fatalf("%s took %v, less than the %v it waits", w.fn, w.took, w.d)
		}
		if total < w.took*95/100 || total > w.took*105/100 {
			t.Errorf("%s: %v waited in %q, want %v ± 5%% (the call took %v)", w.fn, total, w.reason, w.d, w.took)
		}
	}
}
