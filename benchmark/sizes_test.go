package benchmark

import (
	"runtime/pprof"
	"testing"

	"github.com/pprofotel/profiler/benchmark/internal/gen"
)

func pprofLookup(name string) *pprof.Profile { return pprof.Lookup(name) }

// BenchmarkSourceSize reports the size of the generated profiles the other
// benchmarks run on; it times nothing of interest.
func BenchmarkSourceSize(b *testing.B) {
	largeSource()
	for _, name := range []string{"heap", "mutex", "block"} {
		b.Run(name, func(b *testing.B) {
			var s gen.Size
			for range b.N {
				data, err := snapshot([]string{name})
				if err != nil {
					b.Fatal(err)
				}
				if s, err = gen.Measure(data[name]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(s.Gzipped), "gz-B")
			b.ReportMetric(float64(s.Raw), "raw-B")
			b.ReportMetric(float64(s.Samples), "samples")
			b.ReportMetric(float64(s.GenStacks), "gen-stacks")
			b.ReportMetric(float64(s.Locations), "locations")
			b.ReportMetric(float64(s.Functions), "functions")
		})
	}
}
