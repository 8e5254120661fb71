//go:build race

package gzipmem

// raceEnabled reports whether the race detector is on. It slows decoding
// and compression by an order of magnitude, so the larger tests sample
// their cases under it; the plain run still covers them all.
const raceEnabled = true
