package pprofconv_test

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/internal/testutil/otlptest"
	"github.com/pprofotel/profiler/pprofconv"
	"google.golang.org/protobuf/proto"
)

// writeWindows stands in for the profiler's file exporter: it writes two
// windows of a program into dir, as protobuf files.
func writeWindows(dir string) {
	for w := range 2 {
		start := t0.Add(time.Duration(w) * time.Second)
		req := otlp.NewBuilder(nil, nil).Build(start, start.Add(time.Second), otlptest.FixtureInputs())
		data, err := proto.Marshal(req)
		if err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("profiles-%d.pb", w)), data, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// Convert the windows the file exporter wrote into one pprof file per
// runtime profile, for go tool pprof.
func Example() {
	dir, _ := os.MkdirTemp("", "profiles")
	defer os.RemoveAll(dir)
	writeWindows(dir)

	reqs, err := pprofconv.ReadPath(dir)
	if err != nil {
		log.Fatal(err)
	}
	profiles, _, err := pprofconv.Convert(reqs, pprofconv.Filter{Profiles: []string{"heap"}})
	if err != nil {
		log.Fatal(err)
	}
	heap := profiles["heap"]
	if err := pprofconv.WriteFile(filepath.Join(dir, pprofconv.FileName("heap")), heap); err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(reqs), "windows")
	for _, st := range heap.SampleType {
		fmt.Print(st.Type, " ")
	}
	fmt.Println()
	// Output:
	// 2 windows
	// alloc_objects alloc_space inuse_objects inuse_space
}

// Write a CPU profile for go build -pgo from the CPU samples of a window,
// here one held in memory.
func ExamplePGO() {
	start := t0
	req := otlp.NewBuilder(nil, nil).Build(start, start.Add(time.Second), otlptest.FixtureInputs())
	data, err := proto.Marshal(req)
	if err != nil {
		log.Fatal(err)
	}

	reqs, err := pprofconv.Read(bytes.NewReader(data), "window")
	if err != nil {
		log.Fatal(err)
	}
	profiles, _, err := pprofconv.Convert(reqs, pprofconv.Filter{Profiles: []string{"cpu"}})
	if err != nil {
		log.Fatal(err)
	}
	pgo, err := pprofconv.PGO(profiles["cpu"])
	if err != nil {
		log.Fatal(err)
	}
	if err := pgo.Write(io.Discard); err != nil { // or WriteFile(path, pgo)
		log.Fatal(err)
	}
	fmt.Println(len(profiles["cpu"].Sample), "samples with span labels,", len(pgo.Sample), "without")
	// Output:
	// 3 samples with span labels, 2 without
}
