package labels

import "unsafe"

// runtime/pprof can install a goroutine's label set but not read it back.
// Restoring exactly the set a goroutine had before a span, and recognising
// whether the goroutine ending a span still carries the set the span
// installed, needs the runtime's own accessors. The runtime keeps them for
// packages outside the standard library (go.dev/issue/67401). The value is
// opaque here: it is only compared and stored back, never dereferenced.

//go:linkname goroutineLabelSet runtime/pprof.runtime_getProfLabel
func goroutineLabelSet() unsafe.Pointer

//go:linkname setGoroutineLabelSet runtime/pprof.runtime_setProfLabel
func setGoroutineLabelSet(unsafe.Pointer)
