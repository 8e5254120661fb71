package offcpu_test

import (
	"context"
	"log"
	"time"

	"github.com/pprofotel/profiler"
	_ "github.com/pprofotel/profiler/offcpu" // links the off-CPU profile in
)

// The off-CPU profile shows where goroutines wait, from the execution
// trace. A program links it in by importing this package for its side
// effect, as this file does, and asks for it. Here the trace runs a
// quarter of every window instead of the default tenth; waits are scaled
// to the whole window.
func Example() {
	p, err := profiler.Start(
		profiler.WithProfileTypes(profiler.CPUProfile, profiler.OffCPUProfile),
		profiler.WithOffCPUDutyCycle(25),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Stop(ctx)
	}()
}
