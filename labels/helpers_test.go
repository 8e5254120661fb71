package labels

import (
	"bytes"
	"context"
	"maps"
	"runtime/pprof"
	"slices"
	"testing"

	"github.com/google/pprof/profile"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

const pkgPath = "github.com/pprofotel/profiler/labels."

// newSDK returns an SDK provider with sampler and a recorder of its spans.
func newSDK(t *testing.T, sampler sdktrace.Sampler) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler), sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}

// goroutineProfile takes and decodes the goroutine profile.
func goroutineProfile(t *testing.T) *profile.Profile {
	t.Helper()
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 0); err != nil {
		t.Errorf("write goroutine profile: %v", err)
		return &profile.Profile{}
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Errorf("parse goroutine profile: %v", err)
		return &profile.Profile{}
	}
	return p
}

// hasFunction reports whether s has a frame of the function named fn.
func hasFunction(s *profile.Sample, fn string) bool {
	for _, loc := range s.Location {
		for _, line := range loc.Line {
			if line.Function != nil && line.Function.Name == fn {
				return true
			}
		}
	}
	return false
}

// sampleLabels flattens the string labels of a sample.
func sampleLabels(s *profile.Sample) map[string]string {
	m := map[string]string{}
	for k, vs := range s.Label {
		if len(vs) != 1 {
			panic("label " + k + " has several values")
		}
		m[k] = vs[0]
	}
	return m
}

// labelsIn returns the labels of the goroutine whose stack holds fn, which
// must be exactly one goroutine. It reports failures with t.Errorf, not
// t.Fatalf, so that goroutines other than the test's may call it.
func labelsIn(t *testing.T, fn string) map[string]string {
	t.Helper()
	var found []map[string]string
	for _, s := range goroutineProfile(t).Sample {
		if hasFunction(s, pkgPath+fn) {
			for range s.Value[0] {
				found = append(found, sampleLabels(s))
			}
		}
	}
	if len(found) != 1 {
		t.Errorf("found %d goroutines in %s, want 1: %v", len(found), fn, found)
		return nil
	}
	return found[0]
}

// currentLabels returns the labels the calling goroutine carries, as the
// goroutine profile reports them.
//
//go:noinline
func currentLabels(t *testing.T) map[string]string {
	t.Helper()
	return labelsIn(t, "currentLabels")
}

// contextLabels returns the pprof labels carried by ctx.
func contextLabels(ctx context.Context) map[string]string {
	m := map[string]string{}
	pprof.ForLabels(ctx, func(k, v string) bool {
		m[k] = v
		return true
	})
	return m
}

// spanLabels returns want plus the ids of sc. The local root is the one
// want names, or else the span itself.
func spanLabels(sc trace.SpanContext, want map[string]string) map[string]string {
	m := maps.Clone(want)
	if m == nil {
		m = map[string]string{}
	}
	m[TraceIDKey] = sc.TraceID().String()
	m[SpanIDKey] = sc.SpanID().String()
	if _, ok := m[LocalRootSpanIDKey]; !ok {
		m[LocalRootSpanIDKey] = sc.SpanID().String()
	}
	return m
}

// rootOf returns the label naming root as the local root.
func rootOf(root trace.Span) map[string]string {
	return map[string]string{LocalRootSpanIDKey: root.SpanContext().SpanID().String()}
}

func checkLabels(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if want == nil {
		want = map[string]string{}
	}
	if !maps.Equal(got, want) {
		t.Errorf("%s: labels %v, want %v", what, got, want)
	}
}

// otherGoroutine is a goroutine that runs the functions it is given, one at
// a time, and waits in parked in between, where labelsIn can find it.
type otherGoroutine struct {
	work   chan func()
	done   chan struct{}
	exited chan struct{}
}

// startOther starts a goroutine with the labels of ctx.
func startOther(t *testing.T, ctx context.Context) *otherGoroutine {
	g := &otherGoroutine{work: make(chan func()), done: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		defer close(g.exited)
		pprof.Do(ctx, pprof.Labels(), func(context.Context) { parked(g) })
	}()
	t.Cleanup(func() {
		close(g.work)
		<-g.exited
	})
	return g
}

// parked runs g's work until g.work is closed.
//
//go:noinline
func parked(g *otherGoroutine) {
	for f := range g.work {
		f()
		g.done <- struct{}{}
	}
}

// run runs f on g and waits for it.
func (g *otherGoroutine) run(f func()) {
	g.work <- f
	<-g.done
}

// labels returns g's labels while it waits.
func (g *otherGoroutine) labels(t *testing.T) map[string]string {
	t.Helper()
	return labelsIn(t, "parked")
}

// endedNames returns the names of the spans rec saw end.
func endedNames(rec *tracetest.SpanRecorder) []string {
	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
	}
	slices.Sort(names)
	return names
}
