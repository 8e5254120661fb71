package pprofconv_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	pprof "github.com/google/pprof/profile"
	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
	"github.com/pprofotel/profiler/pprofconv"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// fixtureWindow builds the request of the fixture program's window number
// w (each a second long, following each other) for a process of service.
func fixtureWindow(service, instance string, w int) pprofconv.Request {
	res := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
		{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: service}}},
		{Key: "service.instance.id", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: instance}}},
	}}
	start := t0.Add(time.Duration(w) * time.Second)
	req := otlp.NewBuilder(res, nil).Build(start, start.Add(time.Second), otlptest.FixtureInputs())
	return pprofconv.Request{Source: fmt.Sprintf("%s/%s window %d", service, instance, w), Request: req}
}

// totals returns, per "profile/sample type", the sum of all values.
func totals(profiles map[string]*pprof.Profile) map[string]int64 {
	out := make(map[string]int64)
	for name, p := range profiles {
		for i, st := range p.SampleType {
			for _, s := range p.Sample {
				out[name+"/"+st.Type] += s.Value[i]
			}
		}
	}
	return out
}

func TestConvertMergesWindows(t *testing.T) {
	one, _, err := pprofconv.Convert([]pprofconv.Request{fixtureWindow("checkout", "a", 0)}, pprofconv.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	single := totals(one)
	snapshot := map[string]bool{"heap/inuse_objects": true, "heap/inuse_space": true, "goroutine/goroutine": true}

	reqs := []pprofconv.Request{
		fixtureWindow("checkout", "a", 0), fixtureWindow("checkout", "a", 1), fixtureWindow("checkout", "a", 2),
		fixtureWindow("checkout", "b", 1), fixtureWindow("cart", "c", 1),
	}
	tests := []struct {
		name string
		f    pprofconv.Filter
		// windows is the number of windows selected, processes the
		// number of processes among them.
		windows, processes int
		profiles           []string
		start              time.Time
	}{
		{"all", pprofconv.Filter{}, 5, 3, []string{"block", "cpu", "heap", "mutex"}, t0},
		{"service", pprofconv.Filter{Service: "checkout"}, 4, 2, []string{"block", "cpu", "heap", "mutex"}, t0},
		{"service and process", pprofconv.Filter{Service: "cart"}, 1, 1, []string{"block", "cpu", "heap", "mutex"}, t0.Add(time.Second)},
		{"from", pprofconv.Filter{Service: "checkout", Start: t0.Add(1500 * time.Millisecond)}, 3, 2, []string{"block", "cpu", "heap", "mutex"}, t0.Add(time.Second)},
		{"from boundary", pprofconv.Filter{Service: "checkout", Start: t0.Add(2 * time.Second)}, 1, 1, []string{"block", "cpu", "heap", "mutex"}, t0.Add(2 * time.Second)},
		{"to", pprofconv.Filter{Service: "checkout", End: t0.Add(time.Second)}, 1, 1, []string{"block", "cpu", "heap", "mutex"}, t0},
		{"profiles", pprofconv.Filter{Profiles: []string{"heap", "cpu"}}, 5, 3, []string{"cpu", "heap"}, t0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := pprofconv.Convert(reqs, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for n, p := range got {
				names = append(names, n)
				if p.TimeNanos != tt.start.UnixNano() {
					t.Errorf("%s starts at %v, want %v", n, time.Unix(0, p.TimeNanos).UTC(), tt.start)
				}
			}
			slices.Sort(names)
			if !slices.Equal(names, tt.profiles) {
				t.Fatalf("profiles %v, want %v", names, tt.profiles)
			}
			for k, v := range totals(got) {
				n := tt.windows
				if snapshot[k] {
					n = tt.processes // the latest of each process
				}
				if want := int64(n) * single[k]; v != want {
					t.Errorf("%s total = %d, want %d (%d x %d)", k, v, want, n, single[k])
				}
			}
		})
	}
}

func TestConvertNoWindow(t *testing.T) {
	got, _, err := pprofconv.Convert([]pprofconv.Request{fixtureWindow("checkout", "a", 0)}, pprofconv.Filter{Service: "nobody"})
	if err != nil || len(got) != 0 {
		t.Fatalf("Convert = %v, %v; want nothing", got, err)
	}
}

// TestConvertGolden pins the merged profiles of three windows of the
// fixture, stack by stack, in the form of otlptest.StackTotals.
func TestConvertGolden(t *testing.T) {
	reqs := []pprofconv.Request{fixtureWindow("checkout", "a", 0), fixtureWindow("checkout", "a", 1), fixtureWindow("checkout", "a", 2)}
	got, _, err := pprofconv.Convert(reqs, pprofconv.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, name := range []string{"block", "cpu", "heap", "mutex"} {
		p := got[name]
		fmt.Fprintf(&b, "%s: %v period %d %s/%s default %q\n", name, time.Duration(p.DurationNanos), p.Period, p.PeriodType.Type, p.PeriodType.Unit, p.DefaultSampleType)
		for i, st := range p.SampleType {
			fmt.Fprintf(&b, "  %s/%s\n", st.Type, st.Unit)
			tot := otlptest.StackTotals(p, i)
			keys := make([]string, 0, len(tot))
			for k := range tot {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				fmt.Fprintf(&b, "    %d %s\n", tot[k], k)
			}
		}
		for _, m := range p.Mapping {
			fmt.Fprintf(&b, "  mapping %s build id %q functions=%v filenames=%v lines=%v inlines=%v\n",
				m.File, m.BuildID, m.HasFunctions, m.HasFilenames, m.HasLineNumbers, m.HasInlineFrames)
		}
	}
	golden := filepath.Join("testdata", "fixture-merged.txt")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if b.String() != string(want) {
		t.Errorf("merged profiles differ from %s (go test -update rewrites it):\n%s", golden, b.String())
	}
}
