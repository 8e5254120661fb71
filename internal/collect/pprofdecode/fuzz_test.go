package pprofdecode

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime/pprof"
	"slices"
	"testing"

	gpprof "github.com/google/pprof/profile"
)

// FuzzParse feeds arbitrary bytes to the decoder. It must never panic; what
// it accepts must be internally consistent and, where google/pprof accepts
// the same protobuf too, must agree with it on samples and stacks.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.pb.gz")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		if raw, err := gunzipAll(data); err == nil {
			f.Add(raw)
		}
	}
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 0); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(handProfile()))
	f.Add([]byte{})
	f.Add([]byte{0x1f, 0x8b})

	var d, dInto Decoder
	var into Profile // reused across inputs, as the collector reuses it
	f.Fuzz(func(t *testing.T, data []byte) {
		d.MaxDecompressedSize = 4 << 20 // keep the fuzzer's memory small
		dInto.MaxDecompressedSize = d.MaxDecompressedSize
		input := slices.Clone(data)
		p, err := d.Decode(data)
		if !bytes.Equal(data, input) {
			t.Fatal("Decode modified its input")
		}
		errInto := dInto.DecodeInto(&into, data)
		if !bytes.Equal(data, input) {
			t.Fatal("DecodeInto modified its input")
		}
		if (err == nil) != (errInto == nil) {
			t.Fatalf("Decode error %v, DecodeInto error %v", err, errInto)
		}
		if err == nil && !reflect.DeepEqual(p, &into) {
			t.Fatalf("DecodeInto into a reused profile differs from Decode:\n%s\nwant:\n%s", render(&into), render(p))
		}
		if err != nil {
			if p != nil {
				t.Fatalf("Decode returned a profile with error %v", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("Decode returned an invalid profile: %v", err)
		}
		for i, s := range p.Samples {
			if cap(s.Locations) != len(s.Locations) || cap(s.Values) != len(s.Values) || cap(s.Labels) != len(s.Labels) {
				t.Fatalf("sample %d slices have spare capacity shared with the next sample", i)
			}
		}
		if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
			return
		}
		want, ok := parseWithPprof(data)
		if !ok {
			return
		}
		if len(want.Sample) != len(p.Samples) {
			t.Fatalf("%d samples, google/pprof finds %d", len(p.Samples), len(want.Sample))
		}
		for i, ws := range want.Sample {
			gs := p.Samples[i]
			if !slices.Equal(gs.Values, ws.Value) {
				t.Fatalf("sample %d values = %v, google/pprof finds %v", i, gs.Values, ws.Value)
			}
			var g, w []string
			for _, li := range gs.Locations {
				g = append(g, frames(p, p.Locations[li])...)
			}
			for _, wl := range ws.Location {
				w = append(w, wantFrames(wl)...)
			}
			if !slices.Equal(g, w) {
				t.Fatalf("sample %d stack = %q, google/pprof finds %q", i, g, w)
			}
		}
	})
}

// parseWithPprof is the reference decoding. google/pprof is stricter in some
// places and laxer in others, so only inputs both accept are compared, and
// a panic inside it is its problem, not a finding about this package.
func parseWithPprof(data []byte) (p *gpprof.Profile, ok bool) {
	defer func() {
		if recover() != nil {
			p, ok = nil, false
		}
	}()
	p, err := gpprof.ParseUncompressed(data)
	if err != nil {
		return nil, false
	}
	if err := p.CheckValid(); err != nil {
		return nil, false
	}
	return p, true
}

func gunzipAll(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}
