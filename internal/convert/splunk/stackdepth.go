package splunk

import (
	"strconv"
	"strings"
)

// maxProfStackDepth is the runtime's ceiling for GODEBUG=profstackdepth.
const maxProfStackDepth = 1024

// MemoryStackDepth reads profstackdepth from a GODEBUG value as the runtime
// does: the last setting wins, values above 1024 mean 1024, and a value the
// runtime would not accept leaves the default. Settings made with
// //go:debug lines in the main package are not in the environment and so
// not seen here.
func MemoryStackDepth(godebug string) int {
	depth := DefaultMemoryStackDepth
	for _, kv := range strings.Split(godebug, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k != "profstackdepth" {
			continue
		}
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			depth = min(n, maxProfStackDepth)
		}
	}
	return depth
}
