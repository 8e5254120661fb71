package benchmark

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	gpprof "github.com/google/pprof/profile"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/convert/otlp"
)

// BenchmarkConvertHeap converts one recorded runtime heap profile
// (testdata/heap.pb.gz: the gzipped bytes runtime/pprof wrote, thousands of
// stacks 20 to 60 frames deep) into the bytes of an OTLP profiles request,
// next to github.com/google/pprof/pprofdecode.Parse of the same bytes, which only
// decodes. Run both in one invocation and compare:
//
//	go test -run '^$' -bench ConvertHeap -benchmem
func BenchmarkConvertHeap(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "heap.pb.gz"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("pprofotel/pprof-to-otlp-bytes", func(b *testing.B) {
		var dec pprofdecode.Decoder
		builder := otlp.NewBuilder(nil, &commonpb.InstrumentationScope{Name: "bench"})
		start := time.Unix(1_800_000_000, 0)
		var out []byte
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			p, err := dec.Decode(data)
			if err != nil {
				b.Fatal(err)
			}
			req := builder.Build(start, start.Add(time.Minute), []otlp.Input{{Name: "heap", Profile: p}})
			if out, err = (proto.MarshalOptions{}).MarshalAppend(out[:0], req); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(out)), "otlp-bytes")
	})
	b.Run("google-pprof/Parse", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := gpprof.ParseData(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
