package pprofdecode

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"

	gpprof "github.com/google/pprof/profile"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var heapSink [][]byte

//go:noinline
func allocForHeapProfile() {
	for i := 0; i < 256; i++ {
		heapSink = append(heapSink, make([]byte, 64<<10))
	}
}

//go:noinline
func labeledWorker(started *sync.WaitGroup, release <-chan struct{}) {
	started.Done()
	<-release
}

//go:noinline
func contend(mu *sync.Mutex, n int) {
	for i := 0; i < n; i++ {
		mu.Lock()
		runtime.Gosched()
		mu.Unlock()
	}
}

// runtimeProfile returns what runtime/pprof writes for name, after running
// code that puts something recognisable into that profile.
func runtimeProfile(t *testing.T, name string) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch name {
	case "heap", "allocs":
		allocForHeapProfile()
		runtime.GC()
		defer func() { heapSink = nil }()
	case "goroutine":
		release := make(chan struct{})
		defer close(release)
		var started sync.WaitGroup
		for _, w := range []string{"w1", "w2", "w3"} {
			started.Add(1)
			labels := pprof.Labels("worker", w, "trace_id", "4bf92f3577b34da6a3ce929d0e0e4736")
			go pprof.Do(context.Background(), labels, func(context.Context) {
				labeledWorker(&started, release)
			})
		}
		started.Wait()
	case "mutex":
		defer runtime.SetMutexProfileFraction(runtime.SetMutexProfileFraction(1))
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			wg.Go(func() { contend(&mu, 200) })
		}
		wg.Wait()
	case "block":
		runtime.SetBlockProfileRate(1)
		defer runtime.SetBlockProfileRate(0)
		ch := make(chan int)
		go func() {
			runtime.Gosched()
			ch <- 1
		}()
		<-ch
	case "cpu":
		if err := pprof.StartCPUProfile(&buf); err != nil {
			t.Skipf("CPU profiling unavailable: %v", err)
		}
		x := 0
		for i := 0; i < 50_000_000; i++ {
			x += i % 7
		}
		pprof.StopCPUProfile()
		if x < 0 {
			t.Log(x)
		}
		return buf.Bytes()
	}
	if err := pprof.Lookup(name).WriteTo(&buf, 0); err != nil {
		t.Fatalf("writing %s profile: %v", name, err)
	}
	return buf.Bytes()
}

func TestParseRuntimeProfiles(t *testing.T) {
	var d Decoder // shared on purpose: every case also exercises reuse
	tests := []struct {
		name string
		// mustHave, when set, is a function that some sample's stack
		// must contain, proving the profile has real content.
		mustHave  string
		wantLabel string
	}{
		{name: "heap", mustHave: "allocForHeapProfile"},
		{name: "allocs", mustHave: "allocForHeapProfile"},
		{name: "goroutine", mustHave: "labeledWorker", wantLabel: `worker="w2"`},
		{name: "mutex"},
		{name: "block"},
		{name: "threadcreate"},
		{name: "cpu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := runtimeProfile(t, tt.name)
			want, err := gpprof.ParseData(data)
			if err != nil {
				t.Fatalf("google/pprof cannot parse runtime output: %v", err)
			}
			got, err := d.Decode(data)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			comparePprof(t, got, want)

			parsed, err := Parse(data)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(parsed, got) {
				t.Errorf("Parse and a reused Decoder disagree")
			}

			if tt.mustHave != "" && !hasFunctionInStack(got, tt.mustHave) {
				t.Errorf("no sample stack contains %s", tt.mustHave)
			}
			if tt.wantLabel != "" && !hasLabel(got, tt.wantLabel, "labeledWorker") {
				t.Errorf("no sample with labeledWorker carries label %s", tt.wantLabel)
			}
		})
	}
}

func hasFunctionInStack(p *Profile, suffix string) bool {
	for _, s := range p.Samples {
		for _, li := range s.Locations {
			for _, ln := range p.Locations[li].Lines {
				if ln.Function >= 0 && strings.HasSuffix(p.Functions[ln.Function].Name, suffix) {
					return true
				}
			}
		}
	}
	return false
}

func hasLabel(p *Profile, label, function string) bool {
	for _, s := range p.Samples {
		one := &Profile{Samples: []Sample{s}, Locations: p.Locations, Functions: p.Functions}
		if hasFunctionInStack(one, function) && slices.Contains(labelStrings(s.Labels), label) {
			return true
		}
	}
	return false
}

// TestParseTestdata decodes the runtime profiles kept in testdata and
// compares them with golden dumps and with google/pprof.
func TestParseTestdata(t *testing.T) {
	files, err := filepath.Glob("testdata/*.pb.gz")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata profiles: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(data)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want, err := gpprof.ParseData(data)
			if err != nil {
				t.Fatal(err)
			}
			comparePprof(t, got, want)

			golden := strings.TrimSuffix(file, ".pb.gz") + ".golden"
			text := render(got)
			if *update {
				if err := os.WriteFile(golden, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			wantText, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if text != string(wantText) {
				t.Errorf("decoded %s differs from %s:\n%s", file, golden, text)
			}
		})
	}
}

// TestParseSparseIDs renumbers the ids of a runtime profile so that they are
// neither dense nor in order, which forces the map-based id lookup.
func TestParseSparseIDs(t *testing.T) {
	data, err := os.ReadFile("testdata/goroutine.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	gp, err := gpprof.ParseData(data)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range gp.Mapping {
		m.ID = uint64(1000 + 7*(len(gp.Mapping)-i))
	}
	for i, f := range gp.Function {
		f.ID = uint64(1<<40 + 3*(len(gp.Function)-i))
	}
	for i, l := range gp.Location {
		l.ID = uint64(len(gp.Location) - i) // dense but reversed
	}
	var buf bytes.Buffer
	if err := gp.WriteUncompressed(&buf); err != nil {
		t.Fatal(err)
	}
	want, err := gpprof.ParseData(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	comparePprof(t, got, want)
	if !hasLabel(got, `worker="w1"`, "main.main.func1") {
		t.Errorf("labels lost after renumbering")
	}
}

// TestDecoderResultOwnsMemory checks that a profile returned by Decode is
// unaffected by later calls that reuse the Decoder's buffers.
func TestDecoderResultOwnsMemory(t *testing.T) {
	var d Decoder
	first, err := os.ReadFile("testdata/heap.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.Decode(first)
	if err != nil {
		t.Fatal(err)
	}
	before := render(p)
	for _, f := range []string{"testdata/goroutine.pb.gz", "testdata/cpu.pb.gz"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Decode(data); err != nil {
			t.Fatal(err)
		}
	}
	clear(first)
	if after := render(p); after != before {
		t.Errorf("profile changed after the Decoder was reused:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// Appending to one sample's slices must not spill into the next sample.
	if len(p.Samples) < 2 {
		t.Fatal("heap testdata needs at least two samples")
	}
	next := slices.Clone(p.Samples[1].Values)
	_ = append(p.Samples[0].Values, 1, 2, 3, 4, 5)
	if !slices.Equal(p.Samples[1].Values, next) {
		t.Errorf("append to sample 0 overwrote sample 1")
	}
}

// TestDecodeIntoMatchesDecode decodes profiles of every kind, one after the
// other, into the same reused Profile and checks each against Decode.
func TestDecodeIntoMatchesDecode(t *testing.T) {
	files := []string{"heap", "goroutine", "cpu", "heap", "heap"}
	var d Decoder
	var p Profile
	for i, name := range files {
		data, err := os.ReadFile("testdata/" + name + ".pb.gz")
		if err != nil {
			t.Fatal(err)
		}
		if i == 4 { // the uncompressed form too
			if data, err = gunzipAll(data); err != nil {
				t.Fatal(err)
			}
		}
		want, err := Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.DecodeInto(&p, data); err != nil {
			t.Fatalf("%s: DecodeInto: %v", name, err)
		}
		if !reflect.DeepEqual(&p, want) {
			t.Errorf("%s (call %d): DecodeInto differs from Decode:\n%s\nwant:\n%s", name, i, render(&p), render(want))
		}
	}
	if err := d.DecodeInto(&p, []byte{0x1f, 0x8b}); err == nil {
		t.Error("DecodeInto accepted a truncated gzip header")
	}
}

// TestDecodeIntoReusesMemory checks that decoding a profile like the last
// one into the same Profile allocates only the string table.
func TestDecodeIntoReusesMemory(t *testing.T) {
	gz, err := os.ReadFile("testdata/heap.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	data, err := gunzipAll(gz)
	if err != nil {
		t.Fatal(err)
	}
	var d Decoder
	var p Profile
	if err := d.DecodeInto(&p, data); err != nil {
		t.Fatal(err)
	}
	samples := len(p.Samples)
	allocs := testing.AllocsPerRun(10, func() {
		if err := d.DecodeInto(&p, data); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 1 {
		t.Errorf("DecodeInto of %d samples into a reused Profile: %v allocations, want 1 (the string table)", samples, allocs)
	}
	// Decode of the same input allocates the profile's own memory.
	decodeAllocs := testing.AllocsPerRun(10, func() {
		if _, err := d.Decode(data); err != nil {
			t.Fatal(err)
		}
	})
	if decodeAllocs <= allocs {
		t.Errorf("Decode: %v allocations, DecodeInto: %v; want DecodeInto to allocate less", decodeAllocs, allocs)
	}
}

// TestAppendDenseIDs compares the fast path of location id decoding with a
// plain reading of the same varints: it must take exactly the leading ids
// of one or two bytes in 1..nLocs, and stop before the first other one.
func TestAppendDenseIDs(t *testing.T) {
	for _, nLocs := range []uint64{300, 40000} {
		testAppendDenseIDs(t, nLocs)
	}
}

func testAppendDenseIDs(t *testing.T, nLocs uint64) {
	reference := func(b []byte) (idx []int32, pos int) {
		for pos < len(b) {
			id, size := binary.Uvarint(b[pos:])
			if size <= 0 || size > 2 || id == 0 || id > nLocs {
				break
			}
			idx = append(idx, int32(id-1))
			pos += size
		}
		return idx, pos
	}
	tests := []struct {
		name string
		ids  []uint64 // written as varints, then tail appended
		tail []byte
	}{
		{"empty", nil, nil},
		{"one byte", []uint64{1, 2, 127}, nil},
		{"two bytes", []uint64{128, 300, 129}, nil},
		{"mixed", []uint64{5, 200, 7, 255, 1}, nil},
		{"last byte alone", []uint64{200, 9}, nil},
		{"zero", []uint64{3, 0, 4}, nil},
		{"out of range", []uint64{3, 301, 4}, nil},
		{"out of range, one byte", []uint64{nLocs, 1, 127}, nil},
		{"three bytes", []uint64{3, 1 << 14, 4}, nil},
		{"three bytes in range of two", []uint64{3, 1<<14 + 5, 4}, nil},
		{"truncated two bytes", []uint64{3}, []byte{0x85}},
		{"truncated after two", []uint64{3, 200}, []byte{0xff}},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		var ids []uint64
		for range r.IntN(40) {
			switch r.IntN(20) {
			case 0:
				ids = append(ids, uint64(r.IntN(1<<17)))
			default:
				ids = append(ids, 1+uint64(r.Uint64N(nLocs)))
			}
		}
		tests = append(tests, struct {
			name string
			ids  []uint64
			tail []byte
		}{fmt.Sprint("random ", i), ids, []byte{0x80}[:r.IntN(2)]})
	}
	for _, tt := range tests {
		var b []byte
		for _, id := range tt.ids {
			b = binary.AppendUvarint(b, id)
		}
		b = append(b, tt.tail...)
		wantIdx, wantPos := reference(b)
		for _, prefix := range []int{0, 3} { // the caller's earlier ids
			locs := make([]int32, prefix+len(b))
			n, pos := appendDenseIDs(locs, prefix, b, 0, len(b), nLocs)
			if n-prefix != len(wantIdx) || pos != wantPos || !slices.Equal(locs[prefix:n], wantIdx) {
				t.Errorf("%d locations, %s, %d before: got %v up to byte %d, want %v up to byte %d (input % x)",
					nLocs, tt.name, prefix, locs[prefix:n], pos, wantIdx, wantPos, b)
			}
		}
	}
}
