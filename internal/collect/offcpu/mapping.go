package offcpu

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"sync"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
)

// executableMapping is the main executable's text, as the runtime's own
// profiles name it: the off-CPU profile's locations point at it, so that
// readers find the binary (go tool pprof's "Main binary filename not
// available" otherwise) and the OTLP builder adds its build id, as for
// every other profile type. It is read once: the executable's mappings do
// not move while the process runs.
var executableMapping = sync.OnceValue(func() pprofdecode.Mapping {
	path, err := os.Executable()
	if err != nil {
		path = ""
	}
	m := pprofdecode.Mapping{
		File:         path,
		HasFunctions: true, HasFilenames: true, HasLineNumbers: true, HasInlineFrames: true,
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil || path == "" {
		// No /proc (not Linux): the whole address space, so that every
		// frame maps to the executable, which a Go program mostly is.
		m.Limit = ^uint64(0)
		return m
	}
	if start, limit, offset, ok := textRange(maps, path); ok {
		m.Start, m.Limit, m.Offset = start, limit, offset
	} else {
		m.Limit = ^uint64(0)
	}
	return m
})

// textRange returns the address range of path's executable mappings in
// maps, the text of /proc/self/maps, and the file offset of the first.
func textRange(maps []byte, path string) (start, limit, offset uint64, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// address perms offset dev inode path
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 6 || bytes.IndexByte(fields[1], 'x') < 0 || string(fields[5]) != path {
			continue
		}
		lo, hi, found := bytes.Cut(fields[0], []byte("-"))
		if !found {
			continue
		}
		s, err1 := strconv.ParseUint(string(lo), 16, 64)
		l, err2 := strconv.ParseUint(string(hi), 16, 64)
		off, err3 := strconv.ParseUint(string(fields[2]), 16, 64)
		if err1 != nil || err2 != nil || err3 != nil || l <= s {
			continue
		}
		if !ok || s < start {
			start, offset = s, off
		}
		limit = max(limit, l)
		ok = true
	}
	return start, limit, offset, ok
}

// exeMappingIndex is the mapping of a location at pc: 0, the executable's,
// when pc is in its text; -1, none, for a frame of a shared library.
func exeMappingIndex(pc uint64) int32 {
	if m := executableMapping(); pc >= m.Start && pc < m.Limit {
		return 0
	}
	return -1
}
