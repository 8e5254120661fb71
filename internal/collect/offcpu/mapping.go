package offcpu

import (
	"bytes"
	"os"
	"runtime/pprof"
	"sync"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
)

// executableMappings are the main executable's mappings exactly as the
// runtime's own profiles state them (range, offset, file, GNU build id,
// HasFunctions): the off-CPU and slow-request profiles' locations point at
// them, so that the OTLP builder finds one mapping of the executable in a
// window, with its build ids, whatever the profile, and readers find the
// binary (go tool pprof's "Main binary filename not available" otherwise).
// They are read once, from a threadcreate profile, which runtime/pprof
// writes with every mapping of the process: the executable's mappings do
// not move while the process runs.
var executableMappings = sync.OnceValue(func() []pprofdecode.Mapping {
	path, err := os.Executable()
	if err != nil {
		path = ""
	}
	var buf bytes.Buffer
	if err := pprof.Lookup("threadcreate").WriteTo(&buf, 0); err == nil && path != "" {
		if p, err := pprofdecode.Parse(buf.Bytes()); err == nil {
			if ms := mappingsOf(p.Mappings, path); len(ms) > 0 {
				return ms
			}
		}
	}
	// No mapping of the executable (no /proc, not Linux): the whole
	// address space, so that every frame maps to the executable, which a
	// Go program mostly is.
	return []pprofdecode.Mapping{{File: path, Limit: ^uint64(0), HasFunctions: true}}
})

// mappingsOf returns the mappings of file among ms, each marked as having
// functions: every location the trace gives is symbolized, as the
// runtime's CPU and heap profiles mark the executable's mapping.
func mappingsOf(ms []pprofdecode.Mapping, file string) []pprofdecode.Mapping {
	var out []pprofdecode.Mapping
	for _, m := range ms {
		if m.File == file && m.Limit > m.Start {
			m.HasFunctions = true
			out = append(out, m)
		}
	}
	return out
}

// exeMappingIndex is the mapping of a location at pc: the index of the
// executable's mapping that holds pc, or -1, none, for a frame of a shared
// library.
func exeMappingIndex(pc uint64) int32 {
	for i, m := range executableMappings() {
		if pc >= m.Start && pc < m.Limit {
			return int32(i)
		}
	}
	return -1
}
