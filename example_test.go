package profiler_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/pprofotel/profiler"
)

// The one line a service adds to main. With no configuration the profiler
// sends CPU, heap and goroutine profiles every minute over OTLP/HTTP to
// localhost:4318; the environment variables of the OTLP exporter
// specification point it elsewhere.
func ExampleStart() {
	p, err := profiler.Start(profiler.WithServiceName("checkout"))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Stop(context.Background())
}

// Writing windows to files needs no Collector: each window becomes one
// request file that the OTLP tooling can read.
func ExampleWithExporter() {
	dir, err := os.MkdirTemp("", "profiles-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	p, err := profiler.Start(
		profiler.WithServiceName("checkout"),
		profiler.WithProfileTypes(profiler.HeapProfile, profiler.GoroutineProfile),
		profiler.WithExporter(profiler.ExporterFile),
		profiler.WithFileDir(dir),
	)
	if err != nil {
		log.Fatal(err)
	}
	// Stop writes the last, partial window before it returns.
	if err := p.Stop(context.Background()); err != nil {
		log.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "profiles-*.pb"))
	fmt.Println("windows written:", len(files))
	// Output: windows written: 1
}

// Stop bounds the last export with its context, so a service's shutdown
// never waits on an unreachable backend for longer than it allows.
func ExampleProfiler_Stop() {
	p, err := profiler.Start(profiler.WithExporter(profiler.ExporterNone))
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		log.Printf("profiles not delivered: %v", err)
	}
	fmt.Println("stopped")
	// Output: stopped
}

// Mutex and block profiling change process-wide runtime rates, so they are
// opt-in.
func ExampleWithProfileTypes() {
	p, err := profiler.Start(
		profiler.WithExporter(profiler.ExporterNone),
		profiler.WithProfileTypes(profiler.CPUProfile, profiler.HeapProfile, profiler.GoroutineProfile,
			profiler.MutexProfile, profiler.BlockProfile),
		profiler.WithMutexProfileFraction(5),
		profiler.WithBlockProfileRate(int(time.Microsecond*100)),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Stop(context.Background())
}
