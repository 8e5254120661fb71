package gen

import (
	"bytes"
	"compress/gzip"
	"io"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
)

// Size describes a pprof profile as the runtime wrote it.
type Size struct {
	Gzipped   int // bytes as written (runtime/pprof gzips)
	Raw       int // bytes of the protobuf
	Samples   int
	Locations int
	Functions int
	// GenStacks counts the samples whose stack goes through the generator.
	GenStacks int
	// MaxDepth is the largest number of frames, inlined ones included, of
	// any sample.
	MaxDepth int
}

// Measure decodes a gzipped pprof profile and sizes it.
func Measure(gz []byte) (Size, error) {
	s := Size{Gzipped: len(gz)}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return s, err
	}
	n, err := io.Copy(io.Discard, zr)
	if err != nil {
		return s, err
	}
	s.Raw = int(n)
	p, err := pprofdecode.Parse(gz)
	if err != nil {
		return s, err
	}
	s.Samples, s.Locations, s.Functions = len(p.Samples), len(p.Locations), len(p.Functions)
	const prefix = "github.com/pprofotel/profiler/benchmark/internal/gen.frame"
	for _, smp := range p.Samples {
		depth, gen := 0, false
		for _, li := range smp.Locations {
			for _, ln := range p.Locations[li].Lines {
				depth++
				if ln.Function >= 0 && len(p.Functions[ln.Function].Name) > len(prefix) && p.Functions[ln.Function].Name[:len(prefix)] == prefix {
					gen = true
				}
			}
		}
		s.MaxDepth = max(s.MaxDepth, depth)
		if gen {
			s.GenStacks++
		}
	}
	return s, nil
}
