package benchmark

import (
	"fmt"
	"testing"

	"github.com/pprofotel/profiler/benchmark/internal/gen"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
	"github.com/pprofotel/profiler/pprofconv"
)

// TestPipelinesAgree checks that what the benchmarks compare is the same
// work: on the same runtime output, ours sends a valid request whose
// per-type totals equal those of the naive google/pprof delta.
func TestPipelinesAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the runtime's profiles")
	}
	src := gen.New(gen.Config{HeapStacks: 300, MutexStacks: 30, BlockStacks: 30})
	defer src.Close()
	seq := &sequence{src: src, names: []string{"heap", "mutex", "block"}}
	base, err := seq.window(0)
	if err != nil {
		t.Fatal(err)
	}
	o, err := newOurs(seq.names, base)
	if err != nil {
		t.Fatal(err)
	}
	n, err := newNaive(seq.names, base)
	if err != nil {
		t.Fatal(err)
	}
	for w := 1; w <= 3; w++ {
		data, err := seq.window(w)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.window(data); err != nil {
			t.Fatal(err)
		}
		if _, err := n.window(data); err != nil {
			t.Fatal(err)
		}
		if err := otlptest.Validate(o.req); err != nil {
			t.Fatalf("window %d: ours is not a valid request: %v", w, err)
		}
		got, _, err := pprofconv.Convert([]pprofconv.Request{{Source: fmt.Sprint("window ", w), Request: o.req}}, pprofconv.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		for i, name := range seq.names {
			want := n.last[i]
			for typ, st := range want.SampleType {
				var wantSum, gotSum int64
				for _, s := range want.Sample {
					wantSum += s.Value[typ]
				}
				if p := got[name]; p != nil {
					for _, s := range p.Sample {
						gotSum += s.Value[typ]
					}
				}
				if gotSum != wantSum {
					t.Errorf("window %d %s %s: ours %d, naive %d", w, name, st.Type, gotSum, wantSum)
				}
				if name == "heap" && st.Type == "alloc_objects" && wantSum == 0 {
					t.Errorf("window %d: no heap allocations in the delta; the generator did not run", w)
				}
			}
		}
	}
}
