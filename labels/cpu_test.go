package labels

import (
	"bytes"
	"context"
	"github.com/pprofotel/profiler/internal/testutil/cputest"
	"maps"
	"runtime/pprof"
	"slices"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// burnFor is how long each phase of the CPU test spins: about 20 samples at
// the default 100 Hz, the whole test staying near one second.
const burnFor = 200 * time.Millisecond

// minSamples is the fewest samples a phase must have for its share of
// labelled samples to mean something.
const minSamples = 5

// spin keeps a CPU busy for d of CPU time.
func spin(d time.Duration) { cputest.Spin(d) }

// One function per phase, so that the profile tells the phases apart.

//go:noinline
func burnInParent(d time.Duration) { spin(d) }

//go:noinline
func burnInChild(d time.Duration) { spin(d) }

//go:noinline
func burnAfterChild(d time.Duration) { spin(d) }

//go:noinline
func burnOutsideSpans(d time.Duration) { spin(d) }

func TestCPUSamplesCarrySpanLabels(t *testing.T) {
	sdk, _ := newSDK(t, sdktrace.AlwaysSample())
	tr := WrapTracerProvider(sdk).Tracer("test")

	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Fatalf("cannot start a CPU profile: %v", err)
	}
	var parentSC, childSC trace.SpanContext
	withAppLabels(func(ctx context.Context) {
		ctx, parent := tr.Start(ctx, "parent")
		parentSC = parent.SpanContext()
		burnInParent(burnFor)

		_, child := tr.Start(ctx, "child")
		childSC = child.SpanContext()
		burnInChild(burnFor)
		child.End()

		burnAfterChild(burnFor)
		parent.End()
		burnOutsideSpans(burnFor)
	})
	pprof.StopCPUProfile()

	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatalf("parse CPU profile: %v", err)
	}
	root := map[string]string{LocalRootSpanIDKey: parentSC.SpanID().String()}
	maps.Copy(root, appLabels)
	tests := []struct {
		fn   string
		want map[string]string
	}{
		{fn: "burnInParent", want: spanLabels(parentSC, root)},
		{fn: "burnInChild", want: spanLabels(childSC, root)},
		{fn: "burnAfterChild", want: spanLabels(parentSC, root)},
		{fn: "burnOutsideSpans", want: appLabels},
	}
	for _, tt := range tests {
		t.Run(tt.fn, func(t *testing.T) {
			var total, matching int64
			others := map[string]int64{}
			for _, s := range p.Sample {
				if !hasFunction(s, pkgPath+tt.fn) {
					continue
				}
				total += s.Value[0]
				got := sampleLabels(s)
				if maps.Equal(got, tt.want) {
					matching += s.Value[0]
				} else {
					others[labelString(got)] += s.Value[0]
				}
			}
			if total < minSamples {
				t.Fatalf("%d samples in %s, want at least %d", total, tt.fn, minSamples)
			}
			t.Logf("%d of %d samples carry the expected labels", matching, total)
			if matching*10 < total*9 {
				t.Errorf("%d of %d samples carry %v; others: %v", matching, total, tt.want, others)
			}
		})
	}
}

func labelString(m map[string]string) string {
	var b bytes.Buffer
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(k + "=" + m[k] + " ")
	}
	return b.String()
}
