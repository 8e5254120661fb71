package profiler_test

import (
	"context"
	"fmt"
	"log"
	"sort"
	"sync"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/pprofotel/profiler"
)

// The one line a service adds to main. With no configuration the profiler
// sends CPU, heap and goroutine profiles every minute over OTLP/HTTP to
// localhost:4318; the environment variables of the OTLP exporter
// specification point it elsewhere. Stop is given a deadline, so that a
// receiver that cannot be reached never holds the service's exit.
func ExampleStart() {
	p, err := profiler.Start(profiler.WithServiceName("checkout"))
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.Stop(ctx); err != nil {
			log.Print(err)
		}
	}()
	// ... serve.
}

// profileCounter is an Exporter of the application's own: it counts the
// profiles of every window by runtime profile, where a real one would send
// them to a destination of its choice.
type profileCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *profileCounter) Export(ctx context.Context, req *collectorpb.ExportProfilesServiceRequest) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rp := range req.GetResourceProfiles() {
		for _, sp := range rp.GetScopeProfiles() {
			for _, attr := range sp.GetScope().GetAttributes() {
				if attr.GetKey() == "pprofotel.profile.name" {
					c.counts[attr.GetValue().GetStringValue()] += len(sp.GetProfiles())
				}
			}
		}
	}
	return nil
}

func (c *profileCounter) Shutdown(context.Context) error { return nil }

// An application's own Exporter receives each window as one OTLP profiles
// request; the exporters of package exporters/... are the usual ones.
func ExampleWithExporter() {
	counter := &profileCounter{counts: map[string]int{}}
	p, err := profiler.Start(
		profiler.WithServiceName("checkout"),
		profiler.WithProfileTypes(profiler.HeapProfile, profiler.GoroutineProfile),
		profiler.WithExporter(counter),
	)
	if err != nil {
		log.Fatal(err)
	}
	// Stop exports the last, partial window before it returns.
	if err := p.Stop(context.Background()); err != nil {
		log.Fatal(err)
	}
	var names []string
	for name := range counter.counts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Printf("%s: %d profiles\n", name, counter.counts[name])
	}
	// Output:
	// goroutine: 1 profiles
	// heap: 4 profiles
}

// Stop bounds the last export with its context, so a service's shutdown
// never waits on an unreachable backend for longer than it allows.
func ExampleProfiler_Stop() {
	p, err := profiler.Start(profiler.WithExporter(&profileCounter{counts: map[string]int{}}))
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
