package pprofconv

import (
	"fmt"

	pprof "github.com/google/pprof/profile"
	"github.com/pprofotel/profiler/internal/otlpattr"
)

// column is one sample type of a pprof profile and where its values come
// from: an OTLP Profile of the scope, or another column scaled by the
// period.
type column struct {
	pprof.ValueType
	// profile is the index of the OTLP Profile in the scope, or -1 for a
	// sample type the profiler did not send because scaledFrom gives it.
	profile int
	// scaledFrom is the index of the column whose values times the
	// profile's period are this column's, or -1.
	scaledFrom int
	// snapshot marks values that are the state at the end of the window,
	// not what happened during it: merging windows keeps the latest
	// instead of adding them up.
	snapshot bool
}

// snapshotTypes are the sample types, by runtime profile, that hold the
// state at the end of a window: the live heap as of the last GC, the
// goroutines, and the goroutines leaked so far. Every other sample type
// holds what happened during the window (CPU time, allocations,
// contention), and windows add up.
var snapshotTypes = map[string]map[string]bool{
	"heap":          {"inuse_objects": true, "inuse_space": true},
	"goroutine":     {"goroutine": true},
	"goroutineleak": {"goroutineleak": true},
}

// sentType returns what an OTLP Profile of runtime profile name with the
// given sample and period types stands for (otlpattr.Received).
func sentType(name string, sample, period pprof.ValueType) otlpattr.SampleType {
	return otlpattr.Received(name,
		otlpattr.ValueType{Type: sample.Type, Unit: sample.Unit},
		otlpattr.ValueType{Type: period.Type, Unit: period.Unit})
}

// columns maps the OTLP Profiles of a scope to the sample types of the pprof
// profile rebuilt from it. This is the one place that knows how the profiler
// encodes a multi-valued pprof profile in OTLP: the scope holds one Profile
// per sample type it sends, named as otlpattr.SampleTypes says (the mutex and
// block profiles' contentions become mutex_contentions and
// block_contentions, ...), and the scope attribute
// pprof.scope.sample_type_order gives, for each Profile, the index of its
// sample type in the pprof profile. Sample types the profiler leaves out
// because another gives them (the CPU profile's cpu/nanoseconds, which is
// samples/count times the period) take the indices the attribute leaves
// free, in the table's order. Without the attribute the Profiles keep their
// order.
//
// sent is what each Profile stands for (see sentType), order the
// attribute's values or nil if the scope lacks it.
func columns(name string, sent []otlpattr.SampleType, order []int64) ([]column, error) {
	unsent := otlpattr.Unsent(sent)
	n := len(sent) + len(unsent)
	if order == nil {
		order = make([]int64, len(sent))
		for i := range order {
			order[i] = int64(i)
		}
	}
	if len(order) != len(sent) {
		return nil, fmt.Errorf("%s has %d entries for %d profiles", attrSampleTypeOrder, len(order), len(sent))
	}
	cols := make([]column, n)
	set := make([]bool, n)
	for j, pos := range order {
		if pos < 0 || pos >= int64(n) || set[pos] {
			return nil, fmt.Errorf("%s %v is not a set of distinct indices in 0..%d", attrSampleTypeOrder, order, n-1)
		}
		set[pos] = true
		t := sent[j].Pprof
		cols[pos] = column{
			ValueType:  pprof.ValueType{Type: t.Type, Unit: t.Unit},
			profile:    j,
			scaledFrom: -1,
			snapshot:   snapshotTypes[name][t.Type],
		}
	}
	free := 0
	for _, st := range unsent {
		for set[free] {
			free++
		}
		set[free] = true
		from := -1
		for i, c := range cols {
			if c.profile >= 0 && c.Type == st.ScaledFrom {
				from = i
			}
		}
		cols[free] = column{
			ValueType:  pprof.ValueType{Type: st.Pprof.Type, Unit: st.Pprof.Unit},
			profile:    -1,
			scaledFrom: from,
			snapshot:   snapshotTypes[name][st.Pprof.Type],
		}
	}
	return cols, nil
}
