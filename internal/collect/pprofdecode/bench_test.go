package pprofdecode

import (
	"bytes"
	"runtime"
	"runtime/pprof"
	"sync"
	"testing"

	gpprof "github.com/google/pprof/profile"
)

var (
	benchOnce    sync.Once
	benchProfile []byte
	benchSink    [][]byte
)

// Three distinct callers per level give 3^depth distinct allocation stacks.

//go:noinline
func benchBranchA(depth, path int) { benchAllocTree(depth, path) }

//go:noinline
func benchBranchB(depth, path int) { benchAllocTree(depth, path) }

//go:noinline
func benchBranchC(depth, path int) { benchAllocTree(depth, path) }

//go:noinline
func benchAllocTree(depth, path int) {
	if depth == 0 {
		benchSink = append(benchSink, make([]byte, 16+path%512))
		return
	}
	switch path % 3 {
	case 0:
		benchBranchA(depth-1, path/3)
	case 1:
		benchBranchB(depth-1, path/3)
	default:
		benchBranchC(depth-1, path/3)
	}
}

// heapProfileWithManyStacks returns a gzip-compressed heap profile with
// several thousand distinct stacks, recorded with every allocation sampled.
func heapProfileWithManyStacks(b *testing.B) []byte {
	benchOnce.Do(func() {
		const depth = 8 // 6561 leaf stacks
		paths := 1
		for range depth {
			paths *= 3
		}
		defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
		runtime.MemProfileRate = 1
		for path := range paths {
			benchAllocTree(depth, path)
		}
		runtime.GC()
		runtime.GC()
		var buf bytes.Buffer
		if err := pprof.Lookup("heap").WriteTo(&buf, 0); err == nil {
			benchProfile = buf.Bytes()
		}
		benchSink = nil
	})
	if benchProfile == nil {
		b.Fatal("writing the heap profile failed")
	}
	return benchProfile
}

func BenchmarkParse(b *testing.B) {
	gz := heapProfileWithManyStacks(b)
	raw, err := gunzipAll(gz)
	if err != nil {
		b.Fatal(err)
	}
	p, err := Parse(gz)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("heap profile: %d samples, %d locations, %d bytes gzipped, %d bytes raw", len(p.Samples), len(p.Locations), len(gz), len(raw))

	for _, in := range []struct {
		name string
		data []byte
	}{{"gzip", gz}, {"raw", raw}} {
		b.Run(in.name+"/Parse", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, err := Parse(in.data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(in.name+"/Decoder", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			var d Decoder
			for b.Loop() {
				if _, err := d.Decode(in.data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(in.name+"/google-pprof", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, err := gpprof.ParseData(in.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
