package collect

import (
	"os"
	"testing"
	"time"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
)

// FuzzMergeParts merges two profiles decoded from any bytes, as the
// collector merges the parts of a window's CPU profile: it never panics,
// the merged profile is valid, and each value's total is the parts' sum,
// or the second part is refused for its other sample types.
func FuzzMergeParts(f *testing.F) {
	cpu, err := os.ReadFile("pprofdecode/testdata/cpu.pb.gz")
	if err != nil {
		f.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	part := cpuPart(f, t0, map[string]int64{"00000000000000a1": 2, "00000000000000b2": 1})
	f.Add(cpu, cpu)
	f.Add(part, cpu)
	f.Add(part, part)
	f.Add(cpu, []byte{})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var d pprofdecode.Decoder
		d.MaxDecompressedSize = 4 << 20
		var parts cpuParts
		want := []int64(nil)
		for i, data := range [][]byte{a, b} {
			p, err := d.Decode(data)
			if err != nil {
				continue
			}
			if err := parts.add(p); err != nil {
				if i == 0 {
					t.Fatalf("first part refused: %v", err)
				}
				continue
			}
			if want == nil {
				want = make([]int64, len(p.SampleTypes))
			}
			for _, s := range p.Samples {
				for j, v := range s.Values {
					want[j] += v
				}
			}
		}
		merged := parts.take()
		if merged == nil {
			return
		}
		if err := merged.Validate(); err != nil {
			t.Fatal(err)
		}
		got := make([]int64, len(merged.SampleTypes))
		for _, s := range merged.Samples {
			for j, v := range s.Values {
				got[j] += v
			}
		}
		for j := range want {
			if got[j] != want[j] {
				t.Fatalf("value %d totals %d, want %d", j, got[j], want[j])
			}
		}
	})
}
