package pprofconv_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/pprofotel/profiler/internal/convert/otlpjson"
	"github.com/pprofotel/profiler/pprofconv"
	"google.golang.org/protobuf/proto"
)

// lengthPrefixed returns msgs as the Collector's file exporter writes them
// with format proto: each preceded by its length, a big-endian uint32.
func lengthPrefixed(msgs ...[]byte) []byte {
	var out []byte
	for _, m := range msgs {
		out = binary.BigEndian.AppendUint32(out, uint32(len(m)))
		out = append(out, m...)
	}
	return out
}

// zstdCompress compresses data as the file exporter's compression zstd does.
func zstdCompress(t testing.TB, data []byte) []byte {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return enc.EncodeAll(data, nil)
}

// TestReadLengthPrefixed reads the protobuf output of the Collector's file
// exporter, in every form its settings give it, and what is wrong with it.
func TestReadLengthPrefixed(t *testing.T) {
	reqs := []pprofconv.Request{fixtureWindow("checkout", "a", 0), fixtureWindow("checkout", "a", 1), fixtureWindow("cart", "c", 2)}
	var bins, lines [][]byte
	for _, r := range reqs {
		bin, err := proto.Marshal(r.Request)
		if err != nil {
			t.Fatal(err)
		}
		line, err := otlpjson.Marshal(r.Request, false)
		if err != nil {
			t.Fatal(err)
		}
		bins = append(bins, bin)
		lines = append(lines, line)
	}
	one := lengthPrefixed(bins[0])
	three := lengthPrefixed(bins...)
	// Offsets of the second and third requests in three.
	at1, at2 := 4+len(bins[0]), 8+len(bins[0])+len(bins[1])
	tooLong := binary.BigEndian.AppendUint32(nil, 1<<20)

	tests := []struct {
		name        string
		data        []byte
		wantSources []string // the requests read, in order: reqs[0], reqs[1], ...
		wantErr     string
	}{
		{name: "one request", data: one, wantSources: []string{"in"}},
		{name: "several", data: three, wantSources: []string{"in@0", "in@" + itoa(at1), "in@" + itoa(at2)}},
		{name: "zero-length request between two", data: lengthPrefixed(bins[0], nil, bins[1]),
			wantSources: []string{"in@0", "in@" + itoa(at1+4)}},
		{name: "zero-length request alone", data: lengthPrefixed(nil),
			wantErr: "in: holds only empty requests: no OTLP profiles to read"},
		{name: "truncated length", data: append(bytes.Clone(one), 0, 0),
			wantErr: "in@" + itoa(len(one)) + ": truncated: 2 bytes at offset " + itoa(len(one)) + " where a 4-byte request length should be"},
		{name: "truncated length alone", data: []byte{0, 0, 1},
			wantErr: "in@0: truncated: 3 bytes at offset 0 where a 4-byte request length should be"},
		{name: "truncated request", data: three[:at2+4+len(bins[2])/2],
			wantErr: "in@" + itoa(at2) + ": truncated, or not the length-prefixed protobuf of a Collector's file exporter: the length at offset " + itoa(at2) + " says " + itoa(len(bins[2])) + " bytes, " + itoa(len(bins[2])/2) + " follow"},
		{name: "length over the input", data: append(bytes.Clone(tooLong), bins[0]...),
			wantErr: "in@0: truncated, or not the length-prefixed protobuf of a Collector's file exporter: the length at offset 0 says 1048576 bytes, " + itoa(len(bins[0])) + " follow"},
		{name: "length the largest uint32 with a high byte below 8", data: append([]byte{7, 0xff, 0xff, 0xff}, bins[0]...),
			wantErr: "in@0: truncated, or not the length-prefixed protobuf of a Collector's file exporter: the length at offset 0 says 134217727 bytes"},
		{name: "not a request", data: lengthPrefixed(bins[0], []byte("hello")),
			wantErr: "in@" + itoa(at1) + ": not an OTLP profiles request in protobuf, or truncated"},
		{name: "each compressed with zstd", data: lengthPrefixed(zstdCompress(t, bins[0]), zstdCompress(t, bins[1])),
			wantSources: []string{"in@0", "in@" + itoa(4+len(zstdCompress(t, bins[0])))}},
		{name: "json, each compressed with zstd", data: lengthPrefixed(zstdCompress(t, lines[0]), zstdCompress(t, lines[1])),
			wantSources: []string{"in@0", "in@" + itoa(4+len(zstdCompress(t, lines[0])))}},
		{name: "all compressed with zstd", data: zstdCompress(t, three), wantSources: []string{"in@0", "in@" + itoa(at1), "in@" + itoa(at2)}},
		{name: "json lines, all compressed with zstd", data: zstdCompress(t, bytes.Join(lines, nil)), wantSources: []string{"in:1", "in:2", "in:3"}},
		{name: "corrupt zstd", data: lengthPrefixed(zstdCompress(t, bins[0])[:20]),
			wantErr: "in@0: compressed with zstd, and cannot be decompressed"},
		// A frame of one raw byte declaring a window of 128 MiB.
		{name: "zstd window over 8 MiB", data: []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x88, 0x09, 0x00, 0x00, 'x'},
			wantErr: "in: compressed with zstd with a window over 8 MiB, which no Collector writes"},
		{name: "zstd window over 8 MiB, one request", data: lengthPrefixed([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x88, 0x09, 0x00, 0x00, 'x'}),
			wantErr: "in@0: compressed with zstd with a window over 8 MiB, which no Collector writes"},
		{name: "compressed with zstd twice", data: zstdCompress(t, zstdCompress(t, three)),
			wantErr: "in: compressed with zstd twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pprofconv.Read(bytes.NewReader(tt.data), "in")
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("Read = %d requests, error %v; want an error starting %q", len(got), err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.wantSources) {
				t.Fatalf("read %d requests, want %d", len(got), len(tt.wantSources))
			}
			for i, r := range got {
				if r.Source != tt.wantSources[i] {
					t.Errorf("request %d source %q, want %q", i, r.Source, tt.wantSources[i])
				}
				if !proto.Equal(r.Request, reqs[i].Request) {
					t.Errorf("request %d differs from what was written", i)
				}
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestReadPathMixed reads a directory holding a file of the profiler's (one
// request in protobuf) and one of the Collector's (length-prefixed protobuf),
// and converts them: the result is what the same windows give read from
// the profiler's files alone.
func TestReadPathMixed(t *testing.T) {
	var direct []pprofconv.Request
	var collector [][]byte
	dir := t.TempDir()
	for w := range 3 {
		r := fixtureWindow("checkout", "a", w)
		direct = append(direct, r)
		bin, err := proto.Marshal(r.Request)
		if err != nil {
			t.Fatal(err)
		}
		if w == 0 {
			if err := os.WriteFile(filepath.Join(dir, "profiles-0.pb"), bin, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		collector = append(collector, bin)
	}
	if err := os.WriteFile(filepath.Join(dir, "profiles-1.pb"), lengthPrefixed(collector...), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := pprofconv.ReadPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, r := range got {
		sources = append(sources, filepath.Base(r.Source))
	}
	want := "profiles-0.pb profiles-1.pb@0 profiles-1.pb@" + itoa(4+len(collector[0]))
	if strings.Join(sources, " ") != want {
		t.Errorf("read %v, want %s", sources, want)
	}
	fromFiles, _, err := pprofconv.Convert(got, pprofconv.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	fromMemory, _, err := pprofconv.Convert(direct, pprofconv.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	gotTotals, wantTotals := totals(fromFiles), totals(fromMemory)
	if len(gotTotals) == 0 || len(gotTotals) != len(wantTotals) {
		t.Fatalf("totals %v, want %v", gotTotals, wantTotals)
	}
	for k, v := range wantTotals {
		if gotTotals[k] != v {
			t.Errorf("%s: total %d, want %d", k, gotTotals[k], v)
		}
	}
}

// TestReadZstdBomb checks that input compressed with zstd is refused once
// it decompresses past MaxInputSize, however small it is compressed, with
// memory bound by that limit.
func TestReadZstdBomb(t *testing.T) {
	var buf bytes.Buffer
	enc, err := zstd.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for range pprofconv.MaxInputSize>>20 + 1 {
		enc.Write(zeros)
	}
	enc.Close()
	bomb := buf.Bytes()
	tests := []struct {
		name string
		data []byte
	}{
		{"whole input", bomb},
		{"one request", lengthPrefixed(bomb)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			n := allocated(func() { _, err = pprofconv.Read(bytes.NewReader(tt.data), "in") })
			want := "compressed with zstd, and longer decompressed than 128 MiB"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Read of %d bytes: error %v, want one containing %q", len(tt.data), err, want)
			}
			if n > 3*pprofconv.MaxInputSize {
				t.Errorf("refusing %d bytes allocated %d MiB, want at most 3 times MaxInputSize", len(tt.data), n>>20)
			}
			t.Logf("%d bytes compressed: refused after allocating %d MiB", len(tt.data), n>>20)
		})
	}
}

// TestReadZstdMemory checks the memory that reading requests compressed
// one by one takes, against the size of the decompressed requests.
func TestReadZstdMemory(t *testing.T) {
	bin, err := proto.Marshal(fixtureWindow("checkout", "a", 0).Request)
	if err != nil {
		t.Fatal(err)
	}
	var msgs [][]byte
	for range 100 {
		msgs = append(msgs, zstdCompress(t, bin))
	}
	data := lengthPrefixed(msgs...)
	var reqs []pprofconv.Request
	n := allocated(func() { reqs, err = pprofconv.Read(bytes.NewReader(data), "in") })
	if err != nil || len(reqs) != 100 {
		t.Fatalf("read %d requests, error %v; want 100", len(reqs), err)
	}
	// Reading the same requests uncompressed, for comparison.
	plain := allocated(func() { _, err = pprofconv.Read(bytes.NewReader(lengthPrefixed(bin)), "in") }) * 100
	t.Logf("100 requests of %d bytes, compressed to %d: %d KiB allocated, %d KiB uncompressed", len(bin), len(msgs[0]), n>>10, plain>>10)
	if n > 128*uint64(100*len(bin)) {
		t.Errorf("allocated %d bytes, more than 128 times the %d decompressed", n, 100*len(bin))
	}
}
