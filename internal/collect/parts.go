package collect

import (
	"encoding/binary"
	"errors"
	"slices"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/labelkey"
)

// cpuParts gathers the parts of one window's CPU profile into one
// profile, which owns its memory: a part is decoded into memory the next
// decode reuses. Mappings, functions and locations (a program counter in
// a mapping) that recur from part to part are kept once, and samples of
// the same stack and labels are summed, so that the window sends what
// one recording of it would have.
type cpuParts struct {
	p         *pprofdecode.Profile
	end       int64 // when the last part ended, in Unix nanoseconds
	mappings  map[pprofdecode.Mapping]int32
	functions map[pprofdecode.Function]int32
	locations map[locationKey]int32
	samples   map[string]int
	key       []byte
}

// locationKey is a location's identity across parts: its program counter
// in its mapping. Locations without an address are not merged.
type locationKey struct {
	mapping int32
	address uint64
}

// add merges part into the window's profile. A part whose sample types
// differ from the first's is refused.
func (c *cpuParts) add(part *pprofdecode.Profile) error {
	if c.p == nil {
		c.start(part)
	} else if !slices.Equal(c.p.SampleTypes, part.SampleTypes) || c.p.Period != part.Period {
		return errors.New("a part of the CPU profile has other sample types or period than the first")
	}
	c.end = max(c.end, part.TimeNanos+part.DurationNanos)
	c.p.DurationNanos = c.end - c.p.TimeNanos
	mappings := make([]int32, len(part.Mappings))
	for i, m := range part.Mappings {
		mappings[i] = intern(c.mappings, m, &c.p.Mappings)
	}
	functions := make([]int32, len(part.Functions))
	for i, f := range part.Functions {
		functions[i] = intern(c.functions, f, &c.p.Functions)
	}
	locations := make([]int32, len(part.Locations))
	for i, l := range part.Locations {
		locations[i] = c.location(l, mappings, functions)
	}
	for i := range part.Samples {
		c.sample(&part.Samples[i], locations)
	}
	return nil
}

// start begins the window's profile with part's header.
func (c *cpuParts) start(part *pprofdecode.Profile) {
	c.p = &pprofdecode.Profile{
		SampleTypes:       slices.Clone(part.SampleTypes),
		DefaultSampleType: part.DefaultSampleType,
		PeriodType:        part.PeriodType,
		Period:            part.Period,
		TimeNanos:         part.TimeNanos,
		Comments:          slices.Clone(part.Comments),
	}
	c.mappings = make(map[pprofdecode.Mapping]int32)
	c.functions = make(map[pprofdecode.Function]int32)
	c.locations = make(map[locationKey]int32)
	c.samples = make(map[string]int)
}

// intern returns the index of v in *all, appending it when seen is
// without it.
func intern[T comparable](seen map[T]int32, v T, all *[]T) int32 {
	if i, ok := seen[v]; ok {
		return i
	}
	i := int32(len(*all))
	seen[v] = i
	*all = append(*all, v)
	return i
}

// location returns the index of l, whose mapping and functions are the
// part's indexes, in the window's profile.
func (c *cpuParts) location(l pprofdecode.Location, mappings, functions []int32) int32 {
	if l.Mapping >= 0 && int(l.Mapping) < len(mappings) {
		l.Mapping = mappings[l.Mapping]
	} else {
		l.Mapping = -1
	}
	k := locationKey{l.Mapping, l.Address}
	if i, ok := c.locations[k]; ok && l.Address != 0 {
		return i
	}
	lines := slices.Clone(l.Lines)
	for j := range lines {
		if f := lines[j].Function; f >= 0 && int(f) < len(functions) {
			lines[j].Function = functions[f]
		} else {
			lines[j].Function = -1
		}
	}
	l.Lines = lines
	i := int32(len(c.p.Locations))
	c.p.Locations = append(c.p.Locations, l)
	if l.Address != 0 {
		c.locations[k] = i
	}
	return i
}

// sample adds s, whose locations are the part's indexes, to the window's
// profile, or its values to those of the sample with its stack and labels.
func (c *cpuParts) sample(s *pprofdecode.Sample, locations []int32) {
	stack := make([]int32, 0, len(s.Locations))
	for _, l := range s.Locations {
		if l >= 0 && int(l) < len(locations) {
			stack = append(stack, locations[l])
		}
	}
	c.key = binary.AppendUvarint(c.key[:0], uint64(len(stack)))
	for _, l := range stack {
		c.key = binary.AppendUvarint(c.key, uint64(l))
	}
	c.key = appendLabels(c.key, s.Labels)
	if i, ok := c.samples[string(c.key)]; ok {
		for j, v := range s.Values {
			if j < len(c.p.Samples[i].Values) {
				c.p.Samples[i].Values[j] += v
			}
		}
		return
	}
	c.samples[string(c.key)] = len(c.p.Samples)
	c.p.Samples = append(c.p.Samples, pprofdecode.Sample{
		Locations: stack,
		Values:    slices.Clone(s.Values),
		Labels:    slices.Clone(s.Labels),
	})
}

// take returns the window's profile, nil when no part was added, and
// empties c for the next window.
func (c *cpuParts) take() *pprofdecode.Profile {
	p := c.p
	*c = cpuParts{}
	return p
}

// sampledRoots returns the local root span ids that p's samples name,
// once per sample that names one.
func sampledRoots(p *pprofdecode.Profile) []string {
	var ids []string
	for i := range p.Samples {
		ls := p.Samples[i].Labels
		if j := labelIndex(ls, labelkey.LocalRootSpanID); j >= 0 {
			ids = append(ids, ls[j].Str)
		}
	}
	return ids
}
