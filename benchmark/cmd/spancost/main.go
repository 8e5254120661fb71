// Command spancost measures the CPU the profiler adds to a request (issue
// 34, item 3): local root spans started and ended as fast as two
// goroutines can, through labels.WrapTracerProvider over the SDK's tracer
// provider, with the profiler started from the environment against
// PPROFOTEL_ENABLED=false. The CPU profile alone is on
// (PPROFOTEL_PROFILES=cpu), its windows discarded.
//
// It runs itself -runs times for each setting, alternated, each run
// starting -n spans with -ballast MiB of live heap, and reports each
// run's CPU time per span (getrusage, the whole process), the median of
// each setting and of the differences between runs taken side by side.
//
//	go run ./cmd/spancost -n 2000000 -runs 9
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	profiler "github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/labels"
)

func main() {
	n := flag.Int("n", 2_000_000, "spans a run, both goroutines together")
	runs := flag.Int("runs", 9, "runs of each setting, alternated")
	child := flag.Bool("child", false, "run once in this process and print the CPU per span")
	ballastMiB := flag.Int("ballast", 64, "MiB of live heap, without pointers, that both settings hold")
	flag.Parse()
	if *child {
		// The garbage collector runs each time the heap has grown by as
		// much as it held live: the profiler's own few MiB, in one
		// setting only, would space its cycles further apart there and
		// lower that setting's CPU per span. The ballast makes both
		// settings' live heap about the same.
		ballast = make([]byte, *ballastMiB<<20)
		ns, err := once(*n)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ns)
		return
	}
	if err := compare(*n, *runs, *ballastMiB); err != nil {
		log.Fatal(err)
	}
}

// compare runs the command as a child runs times per setting, alternated,
// and prints the figures.
func compare(n, runs, ballastMiB int) error {
	var on, off, diff []float64
	for i := range runs {
		a, err := child(n, ballastMiB, "true")
		if err != nil {
			return err
		}
		b, err := child(n, ballastMiB, "false")
		if err != nil {
			return err
		}
		fmt.Printf("run %d: on %.0f ns/span, off %.0f ns/span, added %.0f\n", i+1, a, b, a-b)
		on, off, diff = append(on, a), append(off, b), append(diff, a-b)
	}
	fmt.Printf("median: on %.0f, off %.0f, added %.0f ns of CPU a span (added: min %.0f, max %.0f)\n",
		median(on), median(off), median(diff), slices.Min(diff), slices.Max(diff))
	return nil
}

// child runs one measurement in a new process with PPROFOTEL_ENABLED set
// to enabled.
func child(n, ballastMiB int, enabled string) (float64, error) {
	cmd := exec.Command(os.Args[0], "-child", "-n", strconv.Itoa(n), "-ballast", strconv.Itoa(ballastMiB))
	cmd.Env = append(os.Environ(), "PPROFOTEL_ENABLED="+enabled, "PPROFOTEL_PROFILES=cpu")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, err
	}
	return strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
}

// once starts the profiler from the environment, runs n spans on two
// goroutines and returns the process's CPU time per span.
func once(n int) (float64, error) {
	p, err := profiler.Start(profiler.WithExporter(discard{}), profiler.WithServiceName("spancost"),
		profiler.WithProcessContext(false))
	if err != nil {
		return 0, err
	}
	sdk := sdktrace.NewTracerProvider()
	tracer := labels.WrapTracerProvider(sdk).Tracer("spancost")
	route := trace.WithAttributes(attribute.String("http.route", "/users/{id}"))
	spans(tracer, route, n/100) // warm up
	cpu0 := cpuTime()
	spans(tracer, route, n)
	cpu := cpuTime() - cpu0
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		return 0, err
	}
	return float64(cpu.Nanoseconds()) / float64(n), nil
}

// spans starts and ends n local root spans from two goroutines.
func spans(tracer trace.Tracer, opt trace.SpanStartOption, n int) {
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for range n / 2 {
				_, s := tracer.Start(context.Background(), "GET", opt)
				s.End()
			}
		})
	}
	wg.Wait()
}

// ballast is the child's live heap beside the spans' (see main).
var ballast []byte

// discard is an exporter that drops what it is given.
type discard struct{}

func (discard) Export(context.Context, *collectorpb.ExportProfilesServiceRequest) error { return nil }
func (discard) Shutdown(context.Context) error                                          { return nil }

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// cpuTime returns the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
