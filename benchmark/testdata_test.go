package benchmark

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/pprofotel/profiler/benchmark/internal/gen"
)

var record = flag.Bool("record", false, "rewrite testdata/*.pb.gz from a fresh generated source")

// TestTestdata checks the recorded runtime profiles under testdata/, which
// let decoders be benchmarked and tested without driving the runtime. With
// -record it first rewrites them from gen.Large.
func TestTestdata(t *testing.T) {
	names := []string{"heap", "mutex", "block"}
	if *record {
		src := gen.New(gen.Large)
		data, err := snapshot(names)
		src.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if err := os.WriteFile(filepath.Join("testdata", n+".pb.gz"), data[n], 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name      string
		minStacks int
	}{
		{"heap", gen.Large.HeapStacks},
		{"mutex", gen.Large.MutexStacks * 9 / 10},
		{"block", gen.Large.BlockStacks * 9 / 10},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", tc.name+".pb.gz"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := gen.Measure(data)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		t.Logf("%s: %+v", tc.name, s)
		if s.GenStacks < tc.minStacks {
			t.Errorf("%s: %d generated stacks, want at least %d", tc.name, s.GenStacks, tc.minStacks)
		}
	}
}
