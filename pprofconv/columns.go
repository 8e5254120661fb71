package pprofconv

import (
	"fmt"

	pprof "github.com/google/pprof/profile"
)

// column is one sample type of a pprof profile and the OTLP Profile of the
// scope its values come from.
type column struct {
	pprof.ValueType
	// profile is the index of the OTLP Profile in the scope.
	profile int
	// snapshot marks values that are the state at the end of the window,
	// not what happened during it: merging windows keeps the latest
	// instead of adding them up.
	snapshot bool
}

// snapshotTypes are the sample types, by runtime profile, that hold the
// state at the end of a window: the live heap as of the last GC, and the
// goroutines. Every other sample type holds what happened during the window
// (CPU time, allocations, contention), and windows add up.
var snapshotTypes = map[string]map[string]bool{
	"heap":      {"inuse_objects": true, "inuse_space": true},
	"goroutine": {"goroutine": true},
}

// columns maps the OTLP Profiles of a scope to the sample types of the pprof
// profile rebuilt from it. This is the one place that knows how the profiler
// encodes a multi-valued pprof profile in OTLP, which today is: the scope
// holds one Profile per pprof sample type (the CPU profile two, samples/count
// and cpu/nanoseconds, as runtime/pprof writes them), and the scope
// attribute pprof.scope.sample_type_order gives, for each Profile, the index
// of its sample type in the pprof profile. Without the attribute the
// Profiles keep their order.
//
// name is the runtime profile name of the scope, types the sample type of
// each Profile, order the attribute's values or nil if the scope lacks it.
func columns(name string, types []pprof.ValueType, order []int64) ([]column, error) {
	n := len(types)
	if order == nil {
		order = make([]int64, n)
		for i := range order {
			order[i] = int64(i)
		}
	}
	if len(order) != n {
		return nil, fmt.Errorf("%s has %d entries for %d profiles", attrSampleTypeOrder, len(order), n)
	}
	cols := make([]column, n)
	set := make([]bool, n)
	for j, pos := range order {
		if pos < 0 || pos >= int64(n) || set[pos] {
			return nil, fmt.Errorf("%s %v is not a permutation of 0..%d", attrSampleTypeOrder, order, n-1)
		}
		set[pos] = true
		cols[pos] = column{ValueType: types[j], profile: j, snapshot: snapshotTypes[name][types[j].Type]}
	}
	return cols, nil
}
