package offcpu_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
)

// TestSlowRequestsAroundStretchStarts serves slow requests one after the
// other (a root span whose handler waits 200 ms on a contended mutex, then
// 90 ms of rest) for four seconds of one-second windows, whose off-CPU
// cycles start with a traced stretch of 100 ms: the requests start at every
// phase of the cycle, some just before a stretch starts, waiting into it.
// Every request explained must be explained as it was: its values adding
// up to its duration within 10 %, and no more than 20 % of it off CPU
// elsewhere than in the mutex wait under the handler. Issue 29's proof
// (integration/routes_test.go) found requests that began about 20 ms
// before a stretch, at the 10 s cycles of the default window, explained by
// the last 30–60 µs of their span only (on_cpu, in labels' End).
//
// On a loaded machine a request also spends time runnable or running
// before it reaches the mutex, and starting the tracer stops the world for
// tens of milliseconds: what no trace covered is explained as untraced,
// and the time before a trace found the request as the state it found,
// without a place when the short trace could not give its stack. Those
// are matters of load, not wrong explanations; the test asks that, all
// requests together, at least a third of their time is the mutex wait.
func TestSlowRequestsAroundStretchStarts(t *testing.T) {
	t.Setenv("PPROFOTEL_PROFILES", "cpu,offcpu")
	tracer, p, dir := startToFiles(t, profiler.WithWindow(time.Second))
	type served struct {
		start time.Time
		took  time.Duration
	}
	slow := make(map[string]served)
	begin := time.Now()
	for time.Since(begin) < 4*time.Second {
		start := time.Now()
		_, span := tracer.Start(context.Background(), "GET /lock")
		lockHandler(200 * time.Millisecond)
		span.End()
		sc := span.SpanContext()
		slow[sc.TraceID().String()+"/"+sc.SpanID().String()] = served{start, time.Since(start)}
		time.Sleep(90 * time.Millisecond)
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	all := make(map[string]time.Duration)
	mutex := make(map[string]time.Duration)
	untraced := make(map[string]time.Duration)
	elsewhere := make(map[string]time.Duration)
	parts := make(map[string][]string)
	for _, req := range otlptest.ReadDir(t, dir) {
		for _, s := range otlptest.Samples(req, "slowrequests", "wall") {
			ids := s.TraceID + "/" + s.SpanID
			parts[ids] = append(parts[ids], fmt.Sprintf("%s %s before_trace=%s %v at %v", s.Attrs["goroutine_state"], s.Attrs["wait_reason"], s.Attrs["before_trace"], s.Values, s.Timestamps))
			for _, v := range s.Values {
				all[ids] += time.Duration(v)
				switch {
				case s.Attrs["goroutine_state"] == "untraced":
					untraced[ids] += time.Duration(v)
				case s.Attrs["goroutine_state"] != "off_cpu":
				case s.Attrs["wait_reason"] == "sync" && s.InStack("lockHandler"):
					mutex[ids] += time.Duration(v)
				case s.Attrs["before_trace"] == "true" && s.Attrs["wait_reason"] == "":
					// Found waiting, place unknown.
				default:
					elsewhere[ids] += time.Duration(v)
				}
			}
		}
	}
	var (
		explained                      int
		allTook, allUntraced, allMutex time.Duration
	)
	for ids, r := range slow {
		got, ok := all[ids]
		if !ok {
			continue
		}
		explained++
		allTook += r.took
		allUntraced += untraced[ids]
		allMutex += mutex[ids]
		if got < r.took*90/100 || got > r.took*110/100 || elsewhere[ids] > r.took*20/100 {
			t.Errorf("request %s, %v into the run (phase %v of its second): explained %v of its %v, %v of it the mutex wait under lockHandler, %v off CPU elsewhere; want its duration ± 10 %%, at most 20 %% off CPU elsewhere; its samples (values, timestamps in Unix ns; the request started at %d):\n%s",
				ids, r.start.Sub(begin), r.start.Sub(begin)%time.Second, got, r.took, mutex[ids], elsewhere[ids], r.start.UnixNano(), strings.Join(parts[ids], "\n"))
		}
	}
	t.Logf("%d of %d slow requests explained, %v of their %v the mutex wait, %v untraced; Stats: %d explained, %d dropped",
		explained, len(slow), allMutex, allTook, allUntraced, p.Stats().SlowRequestsExplained, p.Stats().SlowRequestsDropped)
	if explained == 0 {
		t.Fatal("no slow request explained")
	}
	if allMutex < allTook/3 {
		t.Errorf("%v of the explained requests' %v the mutex wait under lockHandler, want at least a third", allMutex, allTook)
	}
}
