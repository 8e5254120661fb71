package otlp_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/convert/otlp"
	"google.golang.org/protobuf/proto"
)

// syntheticHeap returns a heap-like profile with stacks stacks of 20 to 60
// frames drawn from a program of a few thousand functions, so that stacks
// share callers as real ones do.
func syntheticHeap(stacks int) *pprofdecode.Profile {
	r := rand.New(rand.NewPCG(1, 2))
	const nFuncs = 3000
	p := &pprofdecode.Profile{
		SampleTypes: []pprofdecode.ValueType{
			{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
			{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"},
		},
		PeriodType: pprofdecode.ValueType{Type: "space", Unit: "bytes"},
		Period:     524288,
		Mappings:   []pprofdecode.Mapping{{Start: 0x400000, Limit: 0x4000000, File: "/app/server", BuildID: "c0ffee", HasFunctions: true}},
	}
	for i := range nFuncs {
		p.Functions = append(p.Functions, pprofdecode.Function{
			Name: fmt.Sprintf("pkg%d.Func%d", i%50, i), Filename: fmt.Sprintf("pkg%d/file%d.go", i%50, i%200), StartLine: int64(i),
		})
		lines := []pprofdecode.Line{{Function: int32(i), Line: int64(i%300 + 1)}}
		if i%7 == 0 {
			lines = append([]pprofdecode.Line{{Function: int32((i + 1) % nFuncs), Line: 3}}, lines...)
		}
		p.Locations = append(p.Locations, pprofdecode.Location{Mapping: 0, Address: 0x400000 + uint64(i)*64, Lines: lines})
	}
	for range stacks {
		depth := 20 + r.IntN(41)
		s := pprofdecode.Sample{Locations: make([]int32, depth), Values: make([]int64, 4)}
		// A common root path followed by a random tail.
		for j := range depth {
			if j >= depth-10 {
				s.Locations[j] = int32(depth - j)
			} else {
				s.Locations[j] = int32(r.IntN(nFuncs))
			}
		}
		n := int64(r.IntN(4))
		s.Values[0], s.Values[1] = n, n*512
		s.Values[2], s.Values[3] = int64(r.IntN(3)), int64(r.IntN(3))*512
		s.Labels = []pprofdecode.Label{{Key: "bytes", Num: 512, IsNum: true}}
		p.Samples = append(p.Samples, s)
	}
	return p
}

func BenchmarkBuild(b *testing.B) {
	inputs := []otlp.Input{{Name: "heap", Profile: syntheticHeap(5000)}}
	builder := otlp.NewBuilder(testResource(), testScope())
	b.ReportAllocs()
	for b.Loop() {
		builder.Build(windowStart, windowEnd, inputs)
	}
}

func BenchmarkBuildMarshal(b *testing.B) {
	inputs := []otlp.Input{{Name: "heap", Profile: syntheticHeap(5000)}}
	builder := otlp.NewBuilder(testResource(), testScope())
	b.ReportAllocs()
	var size int
	for b.Loop() {
		buf, err := proto.Marshal(builder.Build(windowStart, windowEnd, inputs))
		if err != nil {
			b.Fatal(err)
		}
		size = len(buf)
	}
	b.ReportMetric(float64(size), "bytes/request")
}
