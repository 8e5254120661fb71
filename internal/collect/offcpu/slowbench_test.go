package offcpu

import (
	"bytes"
	"context"
	"fmt"
	"runtime/trace"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	xtrace "golang.org/x/exp/trace"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/internal/testutil/cputest"
	"github.com/pprofotel/profiler/internal/testutil/waittest"
	"github.com/pprofotel/profiler/labels"
)

// blockedAtStart is where TestWaitOpenAtTraceStart's goroutine waits.
//
//go:noinline
func blockedAtStart(mu *sync.Mutex) { mu.Lock(); mu.Unlock() }

// TestWaitOpenAtTraceStart checks what the runtime writes of a goroutine
// already waiting when a trace starts and woken within the trace's first
// generation, which is what a request turned long finds: nothing of its
// wait, neither stack nor reason (go.dev/issue/65634), unless a short
// trace is started and stopped first, whose end writes the stack of every
// goroutine that did not run in it (startTrace's first trace).
func TestWaitOpenAtTraceStart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		first     bool
		wantStack bool
	}{
		{"trace.Start alone", false, false},
		{"a short trace first", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			mu.Lock()
			done := make(chan struct{})
			go func() { blockedAtStart(&mu); close(done) }()
			time.Sleep(20 * time.Millisecond)
			var traces [][]byte
			if tc.first {
				var b bytes.Buffer
				if err := trace.Start(&b); err != nil {
					t.Fatal(err)
				}
				trace.Stop()
				traces = append(traces, b.Bytes())
			}
			var b bytes.Buffer
			if err := trace.Start(&b); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
			mu.Unlock()
			<-done
			trace.Stop()
			traces = append(traces, b.Bytes())
			stacked := false
			for _, data := range traces {
				r, err := xtrace.NewReader(bytes.NewReader(data))
				if err != nil {
					t.Fatal(err)
				}
				for {
					ev, err := r.ReadEvent()
					if err != nil {
						break
					}
					if ev.Kind() != xtrace.EventStateTransition {
						continue
					}
					st := ev.StateTransition()
					if st.Resource.Kind != xtrace.ResourceGoroutine {
						continue
					}
					if from, to := st.Goroutine(); from != xtrace.GoUndetermined || to != xtrace.GoWaiting {
						continue
					}
					frames := slices.Collect(st.Stack.Frames())
					if slices.ContainsFunc(frames, func(f xtrace.StackFrame) bool {
						return f.Func == "github.com/pprofotel/profiler/internal/collect/offcpu.blockedAtStart"
					}) {
						stacked = true
						if got := reasonFromStack(frames); got != "sync" {
							t.Errorf("reason from the stack %q, want sync", got)
						}
					}
				}
			}
			if stacked != tc.wantStack {
				t.Errorf("the waiting goroutine's stack written: %v, want %v", stacked, tc.wantStack)
			}
		})
	}
}

// BenchmarkWatchStart measures what starting a trace for a watched
// request costs, with as many other goroutines parked: the stretch's
// trace.Start alone, and with the short trace before it that gives the
// stacks of the goroutines already waiting (startTrace); and the bytes of
// that short trace.
func BenchmarkWatchStart(b *testing.B) {
	for _, parked := range []int{0, 1_000, 10_000} {
		for _, first := range []bool{false, true} {
			b.Run(fmt.Sprintf("goroutines=%d/first=%v", parked, first), func(b *testing.B) {
				stop := make(chan struct{})
				for range parked {
					go func() { <-stop }()
				}
				defer close(stop)
				r := &Recorder{cfg: Config{MaxTraceBytes: DefaultMaxTraceBytes}}
				var firstBytes int
				for b.Loop() {
					sink, ft := r.startTrace(first, nil)
					if sink == nil {
						b.Fatal("tracer busy")
					}
					stopTrace()
					sink.close()
					firstBytes = len(ft)
				}
				b.ReportMetric(float64(firstBytes), "first-trace-B")
			})
		}
	}
}

// BenchmarkSlowCapture runs a service-like load under a recorder at the
// default duty cycle: 8 workers serving requests in root spans, each 1 ms
// of CPU, one in 20 waiting 200 ms on a contended mutex (about 700
// requests a second, 7 slow ones live at any time), and, as
// the request tracker does, the requests that run half the threshold
// reported to the recorder (Watch, Ended). With budget=off nothing is
// reported (what cpu,offcpu costs today); the others set the slow-request
// trace budget (bytes a second). It reports the process's CPU per request
// (getrusage), the share of slow requests (those that lasted the
// threshold, by design or waiting for a CPU) explained, the requests
// served, the trace read, and the slow-request profile's OTLP bytes per
// request explained. Each budget runs slowCaptureRun with a burst of one second's
// budget.
func BenchmarkSlowCapture(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	tracer := labels.WrapTracerProvider(tp).Tracer("bench")
	for _, budget := range []int{0, 16 << 10, 64 << 10, 256 << 10, 1 << 30} {
		name := "budget=off"
		if budget > 0 {
			name = fmt.Sprintf("budget=%dKiBps", budget>>10)
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				var stats Stats
				// A burst of a second's budget (at least what a start
				// needs), so that the rate, not the burst, decides.
				// Every slow request may be explained: the run is one
				// window.
				r := Start(time.Now(), Config{Stats: &stats, SlowTraceRate: budget, SlowTraceBurst: max(budget, 128<<10), MaxSlow: 1 << 20})
				var served, slow int64
				cpu0 := cpuTime()
				start := time.Now()
				var wg sync.WaitGroup
				const workers = 8
				var counts [workers][2]int64
				for w := range workers {
					wg.Go(func() {
						for i := 0; time.Since(start) < slowCaptureRun; i++ {
							isSlow := (i+w)%20 == 0
							t0 := time.Now()
							_, span := tracer.Start(context.Background(), "req")
							sc := span.SpanContext()
							ids := sc.TraceID().String() + sc.SpanID().String()
							watched := make(chan bool, 1)
							timer := time.AfterFunc(DefaultSlowThreshold/2, func() {
								if budget > 0 {
									r.Watch(ids, "req", t0)
								}
								watched <- budget > 0
							})
							cputest.Spin(time.Millisecond)
							if isSlow {
								waittest.OnMutex(200 * time.Millisecond)
							}
							span.End()
							end := time.Now()
							if !timer.Stop() && <-watched {
								r.Ended(ids, "req", t0, end)
							}
							counts[w][0]++
							if end.Sub(t0) >= DefaultSlowThreshold {
								// Slow, by design or because it waited
								// for a CPU that long.
								counts[w][1]++
							}
						}
					})
				}
				wg.Wait()
				if _, err := r.Collect(time.Now(), true); err != nil {
					b.Fatal(err)
				}
				for _, c := range counts {
					served += c[0]
					slow += c[1]
				}
				cpu := cpuTime() - cpu0
				b.ReportMetric(float64(cpu.Microseconds())/float64(served), "cpu-µs/req")
				b.ReportMetric(float64(served)/time.Since(start).Seconds(), "req/s")
				b.ReportMetric(float64(r.readTotal)/time.Since(start).Seconds()/1024, "trace-KiB/s")
				if n := stats.SlowRequestsExplained.Load(); slow > 0 && n > 0 {
					b.ReportMetric(100*float64(n)/float64(slow), "explained-%")
					// What the explanations weigh on the wire.
					req := otlp.NewBuilder(nil, nil).Build(start, time.Now(), []otlp.Input{{Name: "slowrequests", Profile: r.Slow()}})
					b.ReportMetric(float64(proto.Size(req))/float64(n), "otlp-B/explained")
				}
			}
		})
	}
}

// slowCaptureRun is how long BenchmarkSlowCapture runs each budget.
const slowCaptureRun = 10 * time.Second

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
