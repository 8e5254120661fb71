package profiler

import (
	"io"
	"log/slog"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
)

var burnSink uint64

//go:noinline
func burnWhileRecorded() { burnSink = burn(burnSink) }

//go:noinline
func burnWhileNotRecorded() { burnSink = burn(burnSink) }

// burn spins for about a millisecond.
func burn(x uint64) uint64 {
	for range 200_000 {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

// dutyCPU wraps the runtime's CPU profiler for TestCPUDutyCycleOnTheRuntime:
// a goroutine burns CPU in burnWhileRecorded while the CPU profile records
// and in burnWhileNotRecorded while it does not, switching under mu, which
// Start and Stop hold, so that no burn straddles a switch.
type dutyCPU struct {
	mu        sync.Mutex
	recording bool
	// started and stopped are taken under mu just before the runtime's
	// StartCPUProfile and StopCPUProfile.
	started, stopped []time.Time
	// burnsOff counts the burns while not recording.
	burnsOff int
}

func (d *dutyCPU) start(w io.Writer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.started = append(d.started, time.Now())
	if err := pprof.StartCPUProfile(w); err != nil {
		return err
	}
	d.recording = true
	return nil
}

func (d *dutyCPU) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = append(d.stopped, time.Now())
	pprof.StopCPUProfile()
	d.recording = false
}

func (d *dutyCPU) burn(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		d.mu.Lock()
		if d.recording {
			burnWhileRecorded()
		} else {
			burnWhileNotRecorded()
			d.burnsOff++
		}
		d.mu.Unlock()
	}
}

// cpuFunctions sums the CPU samples of req by the functions on their
// stacks.
func cpuFunctions(req *collectorpb.ExportProfilesServiceRequest, p *profilespb.Profile) map[string]int64 {
	d := req.GetDictionary()
	out := make(map[string]int64)
	for _, s := range p.GetSamples() {
		var n int64
		for _, v := range s.GetValues() {
			n += v
		}
		for _, li := range d.GetStackTable()[s.GetStackIndex()].GetLocationIndices() {
			for _, ln := range d.GetLocationTable()[li].GetLines() {
				name := d.GetStringTable()[d.GetFunctionTable()[ln.GetFunctionIndex()].GetNameStrindex()]
				out[name[strings.LastIndex(name, ".")+1:]] += n
			}
		}
	}
	return out
}

// TestCPUDutyCycleOnTheRuntime runs the real CPU profiler with a duty
// cycle of D out of a period P and checks what is exported: each window's
// CPU profile covers one recording of at least D (to its end, when the
// window ended first) within the window, as its time range and duration
// say; its samples come from that recording only, since the function that
// burns CPU outside it never shows; and the heap and goroutine profiles
// cover the whole window, window after window without a gap.
func TestCPUDutyCycleOnTheRuntime(t *testing.T) {
	const (
		period   = 800 * time.Millisecond
		duty     = 30
		duration = period * duty / 100
	)
	d := &dutyCPU{}
	r := newReceiver()
	endpoint := startReceiver(t, "http", r)

	p, err := Start(shortWindows(), withRuntime(nil, collect.CPUProfiler{Start: d.start, Stop: d.stop}),
		WithExporter(httpExporter(t, endpoint+"/v1development/profiles")), WithWindow(period), WithCPUDutyCycle(duty),
		WithProfileTypes(CPUProfile, HeapProfile, GoroutineProfile), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	burned := make(chan struct{})
	go func() { d.burn(stop); close(burned) }()
	r.wait(t, 4)
	close(stop)
	<-burned
	if err := p.Stop(stopContext(t)); err != nil {
		t.Fatal(err)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.burnsOff == 0 {
		t.Fatal("nothing burned while the CPU profile was off: the test proves nothing")
	}
	var prevEnd uint64
	recording, withCPU, recorded := 0, 0, int64(0)
	for i, req := range r.requests {
		var cpu *profilespb.Profile
		var start, end uint64
		for _, sp := range req.GetResourceProfiles()[0].GetScopeProfiles() {
			name := otlptest.ScopeName(sp.GetScope())
			for _, prof := range sp.GetProfiles() {
				if name == "cpu" {
					cpu = prof
					continue
				}
				s, e := prof.GetTimeUnixNano(), prof.GetTimeUnixNano()+prof.GetDurationNano()
				if start == 0 {
					start, end = s, e
				} else if s != start || e != end {
					t.Errorf("request %d: the %s profile covers %d–%d, another %d–%d; all but CPU cover the window", i, name, s, e, start, end)
				}
			}
		}
		if prevEnd != 0 && start != prevEnd {
			t.Errorf("request %d: the window starts at %d, the previous ended at %d", i, start, prevEnd)
		}
		prevEnd = end
		last := i == len(r.requests)-1
		if cpu == nil {
			continue // the window, Stop's perhaps, ended before its offset
		}
		withCPU++
		cs, ce := cpu.GetTimeUnixNano(), cpu.GetTimeUnixNano()+cpu.GetDurationNano()
		if cs < start || ce > end {
			t.Errorf("request %d: the CPU profile covers %d–%d, outside the window %d–%d", i, cs, ce, start, end)
		}
		if time.Duration(cpu.GetDurationNano()) < duration && ce != end {
			t.Errorf("request %d: the CPU profile covers %v, less than %v, and did not end with the window", i, time.Duration(cpu.GetDurationNano()), duration)
		}
		if !last && time.Duration(end-start) > 0 && time.Duration(cpu.GetDurationNano()) >= time.Duration(end-start) {
			t.Errorf("request %d: the CPU profile covers the whole window (%v)", i, time.Duration(end-start))
		}
		// The recording behind this profile: the runtime's profiler
		// started after the exported start and stopped after its end.
		for recording < len(d.started) && uint64(d.started[recording].UnixNano()) < cs {
			recording++
		}
		if recording >= len(d.stopped) {
			t.Errorf("request %d: no recording started within %d–%d", i, cs, ce)
			continue
		}
		if hs, he := uint64(d.started[recording].UnixNano()), uint64(d.stopped[recording].UnixNano()); hs > ce || he < ce {
			t.Errorf("request %d: the CPU profile covers %d–%d, the runtime recorded %d–%d", i, cs, ce, hs, he)
		}
		recording++
		fns := cpuFunctions(req, cpu)
		if n := fns["burnWhileNotRecorded"]; n != 0 {
			t.Errorf("request %d: %d samples in burnWhileNotRecorded, which ran only outside the recording", i, n)
		}
		recorded += fns["burnWhileRecorded"]
	}
	if withCPU < 2 || recorded == 0 {
		t.Errorf("%d of %d windows hold a CPU profile, with %d samples in burnWhileRecorded; want at least 2 and some", withCPU, len(r.requests), recorded)
	}
}
