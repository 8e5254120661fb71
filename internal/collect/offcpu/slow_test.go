package offcpu

import (
	"context"
	"runtime/trace"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/testutil/cputest"
	"github.com/pprofotel/profiler/internal/testutil/waittest"
	"github.com/pprofotel/profiler/labels"
)

// handleLock is a request handler that waits on a contended mutex.
//
//go:noinline
func handleLock(d time.Duration) { waittest.OnMutex(d) }

// handleCPU is a request handler that computes.
//
//go:noinline
func handleCPU(d time.Duration) { cputest.Spin(d) }

// handleFast is a request handler that returns at once.
//
//go:noinline
func handleFast(d time.Duration) { waittest.InSleep(d) }

// served is a request run under a root span, as the request tracker sees
// it.
type served struct {
	ids        string
	start, end time.Time
}

// serve runs handler(d) inside a root span of tracer, and plays the
// request tracker: it reports the request to r as long once it has run
// longAfter (from another goroutine, as the tracker's sweeper does), and
// its end once it ended, if it was reported.
func serve(t *testing.T, r *Recorder, tracer oteltrace.Tracer, handler func(time.Duration), d, longAfter time.Duration) served {
	t.Helper()
	start := time.Now()
	_, span := tracer.Start(context.Background(), "GET /x")
	sc := span.SpanContext()
	ids := sc.TraceID().String() + sc.SpanID().String()
	long := make(chan bool, 1)
	done := make(chan struct{})
	go func() {
		select {
		case <-time.After(longAfter):
			r.Watch(ids, start)
			long <- true
		case <-done:
			long <- false
		}
	}()
	handler(d)
	span.End()
	end := time.Now()
	close(done)
	if <-long {
		r.Ended(ids, start, end)
	}
	return served{ids: ids, start: start, end: end}
}

// explained sums the slow-request profile's values linked to ids: in all,
// and those of samples in state, for reason, whose stack holds fn.
func explained(p *pprofdecode.Profile, ids, state, reason, fn string) (all, matching time.Duration, n int) {
	if p == nil {
		return 0, 0, 0
	}
	for _, s := range p.Samples {
		if label(s, labels.TraceIDKey)+label(s, labels.SpanIDKey) != ids {
			continue
		}
		n++
		v := time.Duration(s.Values[0])
		all += v
		if label(s, StateKey) == state && label(s, ReasonKey) == reason && fnIn(p, s, fn) {
			matching += v
		}
		var sum int64
		for _, e := range s.Events {
			sum += e.Value
		}
		if sum != s.Values[0] {
			panic("a sample's value is not the sum of its events")
		}
	}
	return all, matching, n
}

func TestSlowRequestExplained(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	tracer := labels.WrapTracerProvider(tp).Tracer("slow-test")
	for _, tc := range []struct {
		name string
		// duty is the off-CPU duty cycle: 1 % rests when the request
		// comes (the watch starts a trace), 100 % traces all along.
		duty           int
		handler        func(time.Duration)
		d              time.Duration
		state, reason  string
		fn             string
		wantBeforeMark bool
	}{
		{"mutex, tracer started by the watch", 1, handleLock, 200 * time.Millisecond, "off_cpu", "sync", "handleLock", true},
		{"mutex, inside a duty stretch", 100, handleLock, 200 * time.Millisecond, "off_cpu", "sync", "handleLock", false},
		{"CPU, tracer started by the watch", 1, handleCPU, 200 * time.Millisecond, "on_cpu", "", "handleCPU", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer SetDutyCycle(tc.duty)()
			var stats Stats
			r := Start(time.Now(), Config{Stats: &stats})
			if tc.duty < 100 {
				// Past the first stretch (at most a 100th of the cycle):
				// the recorder rests.
				for deadline := time.Now().Add(5 * time.Second); trace.IsEnabled() && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
				}
				if trace.IsEnabled() {
					t.Fatal("the recorder still traces: cannot test a watch that starts the tracer")
				}
			}
			slow := serve(t, r, tracer, tc.handler, tc.d, DefaultSlowThreshold/2)
			fast := serve(t, r, tracer, handleFast, time.Millisecond, DefaultSlowThreshold/2)
			// Watched, but ended under the threshold.
			short := serve(t, r, tracer, handleFast, DefaultSlowThreshold*3/4, DefaultSlowThreshold/4)
			if _, err := r.Collect(time.Now(), true); err != nil {
				t.Fatal(err)
			}
			p := r.Slow()
			dur := slow.end.Sub(slow.start)
			all, matching, _ := explained(p, slow.ids, tc.state, tc.reason, tc.fn)
			if all < dur*90/100 || all > dur*110/100 {
				t.Errorf("the slow request's samples add up to %v, want its duration %v ± 10%%", all, dur)
			}
			if matching < dur*80/100 {
				t.Errorf("%v of %v in %s %q under %s, want at least 80%%:\n%s", matching, dur, tc.state, tc.reason, tc.fn, describe(p))
			}
			marked := false
			for _, s := range p.Samples {
				marked = marked || label(s, labels.SpanIDKey) == slow.ids[32:] && label(s, BeforeTraceKey) == "true"
			}
			if marked != tc.wantBeforeMark {
				t.Errorf("a part marked before the trace: %v, want %v", marked, tc.wantBeforeMark)
			}
			for _, other := range []served{fast, short} {
				if _, _, n := explained(p, other.ids, "", "", ""); n != 0 {
					t.Errorf("a request of %v carries %d samples", other.end.Sub(other.start), n)
				}
			}
			if got := stats.SlowExplained.Load(); got != 1 {
				t.Errorf("SlowExplained = %d, want 1", got)
			}
		})
	}
}

// describe lists a slow-request profile's samples, for failure messages.
func describe(p *pprofdecode.Profile) string {
	if p == nil {
		return "(no profile)"
	}
	var b strings.Builder
	for _, s := range p.Samples {
		leaf := ""
		if len(s.Locations) > 0 {
			for _, ln := range p.Locations[s.Locations[0]].Lines {
				leaf = p.Functions[ln.Function].Name
			}
		}
		b.WriteString(label(s, StateKey) + " " + label(s, ReasonKey) + " before=" + label(s, BeforeTraceKey) + " " +
			time.Duration(s.Values[0]).String() + " " + leaf + "\n")
	}
	return b.String()
}
