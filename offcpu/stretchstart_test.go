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
// up to its duration within 10 %, what was traced of it the mutex wait
// under the handler but for at most 20 % of its duration. Issue 29's proof
// (integration/endpoints_test.go) found requests that began about 20 ms
// before a stretch, at the 10 s cycles of the default window, explained by
// the last 30–60 µs of their span only (on_cpu, in labels' End).
//
// What no trace covered is explained as untraced: on a loaded machine
// starting the tracer stops the world for tens of milliseconds, and a
// request that turns long while no trace runs is untraced until its watch
// trace starts. That is a matter of load, not of explaining: the test
// bounds what is traced and not the mutex wait, and asks only that most
// of the requests' time, all together, was traced.
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
				case s.Attrs["goroutine_state"] == "off_cpu" && s.Attrs["wait_reason"] == "sync" && s.InStack("lockHandler"):
					mutex[ids] += time.Duration(v)
				}
			}
		}
	}
	var (
		explained            int
		allTook, allUntraced time.Duration
	)
	for ids, r := range slow {
		got, ok := all[ids]
		if !ok {
			continue
		}
		explained++
		allTook += r.took
		allUntraced += untraced[ids]
		traced := got - untraced[ids]
		if got < r.took*90/100 || got > r.took*110/100 || traced-mutex[ids] > r.took*20/100 {
			t.Errorf("request %s, %v into the run (phase %v of its second): explained %v of its %v, %v of it traced, %v the mutex wait under lockHandler; want its duration ± 10 %%, what was traced the mutex wait but for at most 20 %% of the duration; its samples (values, timestamps in Unix ns; the request started at %d):\n%s",
				ids, r.start.Sub(begin), r.start.Sub(begin)%time.Second, got, r.took, traced, mutex[ids], r.start.UnixNano(), strings.Join(parts[ids], "\n"))
		}
	}
	t.Logf("%d of %d slow requests explained, %v of their %v untraced; Stats: %d explained, %d dropped",
		explained, len(slow), allUntraced, allTook, p.Stats().SlowRequestsExplained, p.Stats().SlowRequestsDropped)
	if explained == 0 {
		t.Fatal("no slow request explained")
	}
	if allUntraced > allTook/2 {
		t.Errorf("%v of the explained requests' %v untraced, want less than half", allUntraced, allTook)
	}
}
