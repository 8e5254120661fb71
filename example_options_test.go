package profiler_test

import (
	"fmt"

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
}
