package profiler

import (
	"context"
	"encoding/hex"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"

	"github.com/pprofotel/profiler/internal/cputest"
	"github.com/pprofotel/profiler/internal/otlptest"
	"github.com/pprofotel/profiler/labels"
	"github.com/pprofotel/profiler/pprofconv"
)

//go:noinline
func spinParent(d time.Duration) int { return spin(d) }

//go:noinline
func spinChild(d time.Duration) int { return spin(d) }

//go:noinline
func spinParentAgain(d time.Duration) int { return spin(d) }

//go:noinline
func spin(d time.Duration) int {
	cputest.Spin(d)
	return 0
}

// linkedSample is what a sample of the exported request says about where
// it was taken.
type linkedSample struct {
	funcs          []string
	traceID        string
	spanID         string
	attrs          map[string]string
	samplesCounted int64
	// values and timestamps are the sample's own: one value, or one per
	// timestamp (the off-CPU profile's waits).
	values     []int64
	timestamps []uint64
	// profile is the Profile the sample belongs to.
	profile *profilespb.Profile
}

// cpuSamples returns the CPU samples/count samples of req with their
// functions, link and attributes resolved.
func cpuSamples(req *collectorpb.ExportProfilesServiceRequest) []linkedSample {
	return profileSamples(req, "cpu", "samples")
}

// profileSamples returns the samples of the given sample type of runtime
// profile name in req, with their functions, link and attributes resolved.
func profileSamples(req *collectorpb.ExportProfilesServiceRequest, name, sampleType string) []linkedSample {
	d := req.GetDictionary()
	str := d.GetStringTable()
	var out []linkedSample
	for _, sp := range req.GetResourceProfiles()[0].GetScopeProfiles() {
		if scopeName(sp.GetScope().GetAttributes()) != name {
			continue
		}
		for _, p := range sp.GetProfiles() {
			if str[p.GetSampleType().GetTypeStrindex()] != sampleType {
				continue
			}
			for _, s := range p.GetSamples() {
				ls := linkedSample{attrs: map[string]string{}, samplesCounted: s.GetValues()[0],
					values: s.GetValues(), timestamps: s.GetTimestampsUnixNano(), profile: p}
				for _, li := range d.GetStackTable()[s.GetStackIndex()].GetLocationIndices() {
					for _, ln := range d.GetLocationTable()[li].GetLines() {
						ls.funcs = append(ls.funcs, str[d.GetFunctionTable()[ln.GetFunctionIndex()].GetNameStrindex()])
					}
				}
				if s.GetLinkIndex() != 0 {
					l := d.GetLinkTable()[s.GetLinkIndex()]
					ls.traceID, ls.spanID = hex.EncodeToString(l.GetTraceId()), hex.EncodeToString(l.GetSpanId())
				}
				for _, ai := range s.GetAttributeIndices() {
					a := d.GetAttributeTable()[ai]
					ls.attrs[str[a.GetKeyStrindex()]] = a.GetValue().GetStringValue()
				}
				out = append(out, ls)
			}
		}
	}
	return out
}

func scopeName(attrs []*commonpb.KeyValue) string {
	for _, kv := range attrs {
		if kv.GetKey() == "pprofotel.profile.name" {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

// TestCPUSamplesLinkToTheirSpans runs CPU work inside nested spans of the
// real OTel SDK, wrapped by labels.WrapTracerProvider, and checks the links
// in what the profiler exported: the parent's work links to the parent, the
// child's to the child, the parent's work after the child ended to the
// parent again, and the application's own pprof label is still there.
func TestCPUSamplesLinkToTheirSpans(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	tracer := labels.WrapTracerProvider(tp).Tracer("links-test")

	dir := t.TempDir()
	p, err := Start(WithPeriod(time.Hour), WithCPUProfileDuration(time.Hour), WithProfileTypes(CPUProfile), WithExporter(ExporterFile), WithFileDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	var parentSC, childSC trace.SpanContext
	pprof.Do(context.Background(), pprof.Labels("tenant", "acme"), func(ctx context.Context) {
		ctx, parent := tracer.Start(ctx, "parent")
		parentSC = parent.SpanContext()
		spinParent(400 * time.Millisecond)
		_, child := tracer.Start(ctx, "child")
		childSC = child.SpanContext()
		spinChild(400 * time.Millisecond)
		child.End()
		spinParentAgain(400 * time.Millisecond)
		parent.End()
	})
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	var samples []linkedSample
	for _, req := range fileRequests(t, dir) {
		samples = append(samples, cpuSamples(req)...)
	}

	for _, tc := range []struct {
		fn   string
		want trace.SpanContext
	}{
		{"spinParent", parentSC},
		{"spinChild", childSC},
		{"spinParentAgain", parentSC},
	} {
		var total, linked int64
		for _, s := range samples {
			if !inStack(s.funcs, tc.fn) {
				continue
			}
			total += s.samplesCounted
			if s.traceID == tc.want.TraceID().String() && s.spanID == tc.want.SpanID().String() {
				linked += s.samplesCounted
			}
			if s.attrs["tenant"] != "acme" {
				t.Errorf("%s: a sample lost the application's label tenant=acme: %v", tc.fn, s.attrs)
			}
			if _, ok := s.attrs[labels.TraceIDKey]; ok {
				t.Errorf("%s: trace_id stayed a sample attribute; it belongs in the link", tc.fn)
			}
		}
		if total < 5 {
			t.Fatalf("%s: only %d CPU samples; the test cannot judge", tc.fn, total)
		}
		if float64(linked) < 0.9*float64(total) {
			t.Errorf("%s: %d of %d samples link to span %s, want at least 90%%", tc.fn, linked, total, tc.want.SpanID())
		}
	}
}

// fileRequests reads the requests the file exporter wrote into dir, in the
// order written, and checks each with the strict validator.
func fileRequests(t *testing.T, dir string) []*collectorpb.ExportProfilesServiceRequest {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.pb"))
	sort.Strings(files)
	var out []*collectorpb.ExportProfilesServiceRequest
	for _, f := range files {
		reqs, err := pprofconv.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reqs {
			if err := otlptest.Validate(r.Request); err != nil {
				t.Errorf("%s: %v", f, err)
			}
			out = append(out, r.Request)
		}
	}
	return out
}

func inStack(funcs []string, fn string) bool {
	for _, f := range funcs {
		if strings.HasSuffix(f, "."+fn) {
			return true
		}
	}
	return false
}
