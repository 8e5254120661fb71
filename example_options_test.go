package profiler_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/pprofotel/profiler"
)

// The names printed here are the ones PPROFOTEL_PROFILES accepts.
func ExampleProfileType_String() {
	for _, t := range []profiler.ProfileType{
		profiler.CPUProfile,
		profiler.HeapProfile,
		profiler.GoroutineProfile,
		profiler.MutexProfile,
		profiler.BlockProfile,
		profiler.OffCPUProfile,
		profiler.GoroutineLeakProfile,
	} {
		fmt.Println(t)
	}
	// Output:
	// cpu
	// heap
	// goroutine
	// mutex
	// block
	// offcpu
	// goroutineleak
}

// A service built with Go 1.26 and 1.27 alike asks for the goroutine-leak
// profile only where the Go it runs on offers it: Start would fail
// otherwise. Each goroutine-leak profile runs a full garbage collection, so
// it is taken once per WithGoroutineLeakInterval, here every 10 minutes.
func ExampleProfileType_Available() {
	types := []profiler.ProfileType{profiler.CPUProfile, profiler.HeapProfile, profiler.GoroutineProfile}
	if err := profiler.GoroutineLeakProfile.Available(); err == nil {
		types = append(types, profiler.GoroutineLeakProfile)
	} else {
		log.Printf("no goroutine leaks reported: %v", err)
	}
	p, err := profiler.Start(
		profiler.WithServiceName("checkout"),
		profiler.WithProfileTypes(types...),
		profiler.WithGoroutineLeakInterval(10*time.Minute),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Stop(context.Background())
	// ... serve; p.Stats().GoroutinesLeaked counts the leaks found so far.
}

// A service that wants every CPU sample records continuously, paying the
// runtime's CPU profiler all the time; one that wants to pay less records
// for a smaller share of each window. A share over 100 % is refused by
// Start, naming the option and the value.
func ExampleWithCPUDutyCycle() {
	_, err := profiler.Start(
		profiler.WithWindow(30*time.Second),
		profiler.WithCPUDutyCycle(150),
	)
	fmt.Println(err)
	// Output:
	// profiler: WithCPUDutyCycle(150): duty cycle must be a percentage from 1 to 100
}

// WithMaxGoroutines(0) keeps the goroutine profile however many goroutines
// run, for a service that accepts that the runtime holds them up while it
// writes it (about 6 µs per goroutine); a negative limit is refused.
func ExampleWithMaxGoroutines() {
	_, err := profiler.Start(profiler.WithMaxGoroutines(-1))
	fmt.Println(err)
	// Output:
	// profiler: WithMaxGoroutines(-1): must not be negative (0 sets no limit)
}
