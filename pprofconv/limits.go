package pprofconv

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"maps"
	"math"
	"slices"

	pprof "github.com/google/pprof/profile"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/protobuf/proto"
)

// The expansion budget of Convert: the pprof form of the input may hold
// ExpansionPerByte units for each byte of the input's OTLP protobuf
// encoding, plus ExpansionBase. A pprof sample, each of its values and each
// location of its stack count one unit; each label value counts
// labelUnits, since pprof's encoder spends some 8 times as much memory on a
// label as on a location (about 160 bytes against 20).
//
// The profiler's own windows hold less than one unit per byte (see
// TestProfilerWindowsWithinBudget in cmd/pprofotel). The most a window of a
// Go program can reach is about 4: a sample of the deepest stack
// runtime/pprof records, 128 frames, with a span link of its own, costs
// some 30 bytes of OTLP. Input past 8 is made for the purpose: one stack of
// 20,000 locations cited by 4,000 samples, each with a span link of its
// own, is 104 KB of OTLP and 80 million pprof locations (2.7 GB); one
// attribute of 10,000 strings cited by 8,000 samples is 58 KB and 80
// million labels.
const (
	ExpansionPerByte = 8
	ExpansionBase    = 1 << 20
)

// labelUnits is what a label value counts against the expansion budget.
const labelUnits = 8

// budget counts down what the pprof form of the input may still hold.
type budget struct {
	limit, left int64
	input       int
}

// newBudget returns the expansion budget of reqs.
func newBudget(reqs []Request) *budget {
	n := 0
	for _, r := range reqs {
		n += proto.Size(r.Request)
	}
	limit := int64(ExpansionBase) + ExpansionPerByte*int64(n)
	return &budget{limit: limit, left: limit, input: n}
}

// spend takes n from the budget, or says that the input is past it.
func (b *budget) spend(n int) error {
	b.left -= int64(n)
	if b.left < 0 {
		return fmt.Errorf("the pprof form of the input would pass %d units (a location or a sample value 1, a label value %d; "+
			"%d per byte of its %d bytes of OTLP protobuf, plus %d): stacks or attributes cited by very many samples; "+
			"convert fewer windows at once if they are genuine", b.limit, labelUnits, ExpansionPerByte, b.input, ExpansionBase)
	}
	return nil
}

// Report says what Convert repaired or left out of its input.
type Report struct {
	// NegativeValues counts the sample values and periods below zero,
	// read as zero: a profiler writes none.
	NegativeValues int
	// Duplicates lists the windows left out because they had been read
	// already.
	Duplicates []Duplicate
}

// Duplicate is a window read twice and converted once.
type Duplicate struct {
	// Profile is the runtime profile of the window: "cpu", "heap", ...
	Profile string
	// Source is where the window was read again, First where it was
	// read first.
	Source, First string
}

// windowID tells a window apart from every other: by the profile ids of
// its Profiles, and by a digest of the samples it holds, since the parts
// of a window that Split cut share their profile ids.
type windowID struct {
	profile string
	ids     string
	digest  uint64
}

// identify returns the identity of the window of profile name held by sp
// and converted into p, or false when a Profile of sp has no profile id,
// as a producer other than pprofotel may leave it: such windows are never
// taken for one another.
func identify(seed maphash.Seed, name string, sp *profilespb.ScopeProfiles, p *pprof.Profile) (windowID, bool) {
	var ids []byte
	for _, prof := range sp.GetProfiles() {
		id := prof.GetProfileId()
		if !slices.ContainsFunc(id, func(b byte) bool { return b != 0 }) {
			return windowID{}, false
		}
		ids = append(ids, byte(len(id)))
		ids = append(ids, id...)
	}
	var h maphash.Hash
	h.SetSeed(seed)
	var buf []byte
	num := func(v uint64) { buf = binary.AppendUvarint(buf[:0], v); h.Write(buf) }
	str := func(s string) { num(uint64(len(s))); h.WriteString(s) }
	// Location and function ids are given in the order samples first
	// cite them, so the same samples give the same ids whatever the
	// order of the dictionary they were read through.
	for _, l := range p.Location {
		num(l.Address)
		if l.Mapping != nil {
			num(l.Mapping.ID)
			str(l.Mapping.File)
			str(l.Mapping.BuildID)
		}
		num(uint64(len(l.Line)))
		for _, ln := range l.Line {
			str(ln.Function.Name)
			str(ln.Function.Filename)
			num(uint64(ln.Line))
		}
	}
	for _, s := range p.Sample {
		num(uint64(len(s.Value)))
		for _, v := range s.Value {
			num(uint64(v))
		}
		num(uint64(len(s.Location)))
		for _, l := range s.Location {
			num(l.ID)
		}
		num(uint64(len(s.Label)))
		for _, k := range slices.Sorted(maps.Keys(s.Label)) {
			str(k)
			num(uint64(len(s.Label[k])))
			for _, v := range s.Label[k] {
				str(v)
			}
		}
		num(uint64(len(s.NumLabel)))
		for _, k := range slices.Sorted(maps.Keys(s.NumLabel)) {
			str(k)
			num(uint64(len(s.NumLabel[k])))
			for _, v := range s.NumLabel[k] {
				num(uint64(v))
			}
		}
	}
	return windowID{profile: name, ids: string(ids), digest: h.Sum64()}, true
}

// nanos returns a time or duration in nanoseconds as pprof holds it,
// held at the int64 maximum.
func nanos(v uint64) int64 { return int64(min(v, math.MaxInt64)) }

// nonNegative returns v, or zero, counted, for v below zero.
func (c *converter) nonNegative(v int64) int64 {
	if v < 0 {
		c.report.NegativeValues++
		return 0
	}
	return v
}

// addSaturated returns a+b for a and b not below zero, held at the int64
// maximum.
func addSaturated(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
