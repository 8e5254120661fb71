package otlp

import (
	"fmt"
	"slices"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	"google.golang.org/protobuf/proto"
)

// DefaultMaxRequestBytes is the largest request, in bytes of its protobuf
// encoding, that Split lets through whole by default: 4 MiB, the default
// receive limit of a gRPC server and so of the OpenTelemetry Collector's
// OTLP/gRPC receiver. (The Collector's OTLP/HTTP receiver accepts 20 MiB by
// default, so the gRPC limit is the one that binds.)
const DefaultMaxRequestBytes = 4 << 20

// Split returns req as parts whose protobuf encodings are at most maxBytes
// each and that together carry exactly the samples of req. A request that
// fits is returned as is, as the only part.
//
// A request is cut along its ScopeProfiles first: consecutive scopes are
// packed into a part while it fits. A scope that does not fit on its own is
// cut along its samples: each piece keeps the scope and all its Profiles,
// with their sample types, times and profile ids, and a share of every
// Profile's samples, so the pieces of one Profile can be told apart only by
// their samples. Every part has its own dictionary, holding only what its
// samples refer to.
//
// Split reports an error when some sample cannot be sent within maxBytes
// even alone; it never drops samples. It does not modify req, and the parts
// share messages that hold no dictionary indices (resources, scopes, links,
// attribute values) with it, so neither may be modified afterwards.
func Split(req *collectorpb.ExportProfilesServiceRequest, maxBytes int) ([]*collectorpb.ExportProfilesServiceRequest, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("otlp: split: maximum request size %d bytes must be positive", maxBytes)
	}
	if proto.Size(req) <= maxBytes {
		return []*collectorpb.ExportProfilesServiceRequest{req}, nil
	}
	s := splitter{req: req, max: maxBytes}
	// cur are the pieces of the part being packed and curPart their
	// assembled request, known to fit.
	var cur []piece
	var curPart *collectorpb.ExportProfilesServiceRequest
	for r, rp := range req.GetResourceProfiles() {
		for i, sp := range rp.GetScopeProfiles() {
			whole := s.wholeScope(r, i, sp)
			if len(cur) > 0 {
				if part, ok := s.fit(append(slices.Clip(cur), whole)); ok {
					cur, curPart = append(cur, whole), part
					continue
				}
				s.parts = append(s.parts, curPart)
				cur, curPart = nil, nil
			}
			if part, ok := s.fit([]piece{whole}); ok {
				cur, curPart = []piece{whole}, part
				continue
			}
			if err := s.cut(whole); err != nil {
				return nil, err
			}
		}
	}
	if curPart != nil {
		s.parts = append(s.parts, curPart)
	}
	return s.parts, nil
}

// piece is a share of the samples of one ScopeProfiles.
type piece struct {
	resource, scope int
	// samples[j] are the samples of Profiles[j] the piece carries.
	samples [][]*profilespb.Sample
	// payload tells whether the piece carries the Profiles' original
	// payloads, which go with the first piece of a scope only.
	payload bool
}

func (p piece) numSamples() int {
	n := 0
	for _, s := range p.samples {
		n += len(s)
	}
	return n
}

type splitter struct {
	req   *collectorpb.ExportProfilesServiceRequest
	max   int
	parts []*collectorpb.ExportProfilesServiceRequest
}

func (s *splitter) wholeScope(r, i int, sp *profilespb.ScopeProfiles) piece {
	p := piece{resource: r, scope: i, payload: true, samples: make([][]*profilespb.Sample, len(sp.GetProfiles()))}
	for j, prof := range sp.GetProfiles() {
		p.samples[j] = prof.GetSamples()
	}
	return p
}

// fit assembles pieces into one request and reports whether it is small
// enough.
func (s *splitter) fit(pieces []piece) (*collectorpb.ExportProfilesServiceRequest, bool) {
	part := assemble(s.req, pieces)
	return part, proto.Size(part) <= s.max
}

// cut halves the samples of p, which does not fit, until every piece
// fits, and adds the pieces to the parts in order. Sample k of every
// Profile goes into the same half where possible: the Profiles of a scope
// are the sample types of one pprof profile, so their k-th samples tend to
// share a stack, and keeping them together keeps the dictionaries small.
func (s *splitter) cut(p piece) error {
	n := p.numSamples()
	if n <= 1 {
		sp := s.req.ResourceProfiles[p.resource].ScopeProfiles[p.scope]
		return fmt.Errorf("otlp: split: resource_profiles[%d].scope_profiles[%d] (scope %q): %d sample(s) need more than the maximum request size of %d bytes",
			p.resource, p.scope, sp.GetScope().GetName(), n, s.max)
	}
	first := piece{resource: p.resource, scope: p.scope, payload: p.payload, samples: make([][]*profilespb.Sample, len(p.samples))}
	second := piece{resource: p.resource, scope: p.scope, samples: make([][]*profilespb.Sample, len(p.samples))}
	// Walk the samples in the interleaved order k-major, j-minor and give
	// the first half of that order to the first piece. Because the order
	// visits each Profile's samples in sequence, every Profile's share is
	// a prefix and the rest a suffix of its samples.
	taken := 0
	longest := 0
	for _, ss := range p.samples {
		longest = max(longest, len(ss))
	}
	cut := make([]int, len(p.samples))
	for k := 0; k < longest && taken < n/2; k++ {
		for j, ss := range p.samples {
			if k < len(ss) && taken < n/2 {
				cut[j] = k + 1
				taken++
			}
		}
	}
	for j, ss := range p.samples {
		first.samples[j] = ss[:cut[j]:cut[j]]
		second.samples[j] = ss[cut[j]:]
	}
	for _, half := range []piece{first, second} {
		if part, ok := s.fit([]piece{half}); ok {
			s.parts = append(s.parts, part)
		} else if err := s.cut(half); err != nil {
			return err
		}
	}
	return nil
}

// assemble builds the request holding pieces, in order, with a pruned
// dictionary. Consecutive pieces of the same resource share one
// ResourceProfiles.
func assemble(req *collectorpb.ExportProfilesServiceRequest, pieces []piece) *collectorpb.ExportProfilesServiceRequest {
	pr := newPruner(req.GetDictionary())
	out := &collectorpb.ExportProfilesServiceRequest{}
	var rp *profilespb.ResourceProfiles
	lastResource := -1
	for _, pc := range pieces {
		src := req.ResourceProfiles[pc.resource]
		if pc.resource != lastResource {
			rp = &profilespb.ResourceProfiles{Resource: src.Resource, SchemaUrl: src.SchemaUrl}
			out.ResourceProfiles = append(out.ResourceProfiles, rp)
			lastResource = pc.resource
		}
		sp := src.ScopeProfiles[pc.scope]
		outScope := &profilespb.ScopeProfiles{
			Scope:     sp.Scope,
			SchemaUrl: sp.SchemaUrl,
			Profiles:  make([]*profilespb.Profile, len(sp.Profiles)),
		}
		for j, prof := range sp.Profiles {
			outScope.Profiles[j] = pr.markProfile(prof, pc.samples[j], pc.payload)
		}
		rp.ScopeProfiles = append(rp.ScopeProfiles, outScope)
	}
	out.Dictionary = pr.finish()
	for _, rp := range out.ResourceProfiles {
		for _, sp := range rp.ScopeProfiles {
			for _, prof := range sp.Profiles {
				pr.remapProfile(prof)
			}
		}
	}
	return out
}

// pruner copies the part of a dictionary that a set of Profiles refers to.
// Profiles are first copied with their old indices (markProfile), then the
// reachable entries are renumbered in their original order (finish), and
// the copies are rewritten to the new indices (remapProfile). Index 0 of
// every table is always kept: it is the required zero entry.
type pruner struct {
	d *profilespb.ProfilesDictionary
	// Old index -> new index, -1 while unreachable.
	strs, mappings, locations, functions, links, attrs, stacks []int32
}

func newPruner(d *profilespb.ProfilesDictionary) *pruner {
	if d == nil {
		d = &profilespb.ProfilesDictionary{}
	}
	return &pruner{
		d:         d,
		strs:      unmarked(len(d.StringTable)),
		mappings:  unmarked(len(d.MappingTable)),
		locations: unmarked(len(d.LocationTable)),
		functions: unmarked(len(d.FunctionTable)),
		links:     unmarked(len(d.LinkTable)),
		attrs:     unmarked(len(d.AttributeTable)),
		stacks:    unmarked(len(d.StackTable)),
	}
}

func unmarked(n int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = -1
	}
	if n > 0 {
		s[0] = 0
	}
	return s
}

// mark records that old index i of a table is reachable. Indices out of
// range are left as they are; they stay invalid after remapping.
func mark(table []int32, i int32) {
	if i >= 0 && int(i) < len(table) {
		table[i] = 0
	}
}

// remap returns the new index of old index i, or i itself when it was out
// of range, so that a broken reference stays visibly broken.
func remap(table []int32, i int32) int32 {
	if i >= 0 && int(i) < len(table) && table[i] >= 0 {
		return table[i]
	}
	return i
}

func (p *pruner) markAttrs(idxs []int32) {
	for _, a := range idxs {
		mark(p.attrs, a)
	}
}

func (p *pruner) markValueType(vt *profilespb.ValueType) *profilespb.ValueType {
	if vt == nil {
		return nil
	}
	mark(p.strs, vt.TypeStrindex)
	mark(p.strs, vt.UnitStrindex)
	return &profilespb.ValueType{TypeStrindex: vt.TypeStrindex, UnitStrindex: vt.UnitStrindex}
}

// markProfile copies prof with the given samples, still with old indices,
// and marks what they reach.
func (p *pruner) markProfile(prof *profilespb.Profile, samples []*profilespb.Sample, payload bool) *profilespb.Profile {
	out := &profilespb.Profile{
		SampleType:             p.markValueType(prof.SampleType),
		TimeUnixNano:           prof.TimeUnixNano,
		DurationNano:           prof.DurationNano,
		PeriodType:             p.markValueType(prof.PeriodType),
		Period:                 prof.Period,
		ProfileId:              prof.ProfileId,
		DroppedAttributesCount: prof.DroppedAttributesCount,
		AttributeIndices:       append([]int32(nil), prof.AttributeIndices...),
	}
	if payload {
		out.OriginalPayloadFormat = prof.OriginalPayloadFormat
		out.OriginalPayload = prof.OriginalPayload
	}
	p.markAttrs(prof.AttributeIndices)
	if len(samples) > 0 {
		out.Samples = make([]*profilespb.Sample, len(samples))
		msgs := make([]profilespb.Sample, len(samples))
		for k, s := range samples {
			m := &msgs[k]
			m.StackIndex = s.GetStackIndex()
			m.LinkIndex = s.GetLinkIndex()
			m.Values = s.GetValues()
			m.TimestampsUnixNano = s.GetTimestampsUnixNano()
			m.AttributeIndices = append([]int32(nil), s.GetAttributeIndices()...)
			mark(p.stacks, m.StackIndex)
			mark(p.links, m.LinkIndex)
			p.markAttrs(m.AttributeIndices)
			out.Samples[k] = m
		}
	}
	return out
}

// finish follows the references from the marked stacks down to the strings,
// numbers the reachable entries and returns the pruned dictionary.
func (p *pruner) finish() *profilespb.ProfilesDictionary {
	p.markReachable()
	for _, t := range [][]int32{p.strs, p.mappings, p.locations, p.functions, p.links, p.attrs, p.stacks} {
		renumber(t)
	}
	d := p.d
	out := &profilespb.ProfilesDictionary{}
	for i, s := range d.StringTable {
		if p.strs[i] >= 0 {
			out.StringTable = append(out.StringTable, s)
		}
	}
	out.MappingTable = keep(d.MappingTable, p.mappings, p.mapping)
	out.LocationTable = keep(d.LocationTable, p.locations, p.location)
	out.FunctionTable = keep(d.FunctionTable, p.functions, p.function)
	for i, l := range d.LinkTable {
		if p.links[i] >= 0 {
			out.LinkTable = append(out.LinkTable, l) // holds no indices
		}
	}
	out.AttributeTable = keep(d.AttributeTable, p.attrs, p.attribute)
	out.StackTable = keep(d.StackTable, p.stacks, func(st *profilespb.Stack) *profilespb.Stack {
		return &profilespb.Stack{LocationIndices: p.remapAll(p.locations, st.LocationIndices)}
	})
	return out
}

// markReachable marks what the stacks marked so far reach: their
// locations, and the mappings, functions, attributes and strings those
// cite.
func (p *pruner) markReachable() {
	d := p.d
	for i, st := range d.StackTable {
		if p.stacks[i] >= 0 && st != nil {
			for _, l := range st.LocationIndices {
				mark(p.locations, l)
			}
		}
	}
	for i, loc := range d.LocationTable {
		if p.locations[i] < 0 || loc == nil {
			continue
		}
		mark(p.mappings, loc.MappingIndex)
		p.markAttrs(loc.AttributeIndices)
		for _, ln := range loc.Lines {
			mark(p.functions, ln.GetFunctionIndex())
		}
	}
	for i, f := range d.FunctionTable {
		if p.functions[i] >= 0 && f != nil {
			mark(p.strs, f.NameStrindex)
			mark(p.strs, f.SystemNameStrindex)
			mark(p.strs, f.FilenameStrindex)
		}
	}
	for i, m := range d.MappingTable {
		if p.mappings[i] >= 0 && m != nil {
			mark(p.strs, m.FilenameStrindex)
			p.markAttrs(m.AttributeIndices)
		}
	}
	for i, a := range d.AttributeTable {
		if p.attrs[i] >= 0 && a != nil {
			mark(p.strs, a.KeyStrindex)
			mark(p.strs, a.UnitStrindex)
		}
	}
}

// renumber gives the marked entries of t their new indices, in order.
func renumber(t []int32) {
	n := int32(0)
	for i, v := range t {
		if v >= 0 {
			t[i] = n
			n++
		}
	}
}

// keep returns the entries of table that marks keeps, each copied by
// remapped (a nil entry stays nil).
func keep[T any](table []*T, marks []int32, remapped func(*T) *T) []*T {
	var out []*T
	for i, e := range table {
		if marks[i] < 0 {
			continue
		}
		var c *T
		if e != nil {
			c = remapped(e)
		}
		out = append(out, c)
	}
	return out
}

func (p *pruner) mapping(m *profilespb.Mapping) *profilespb.Mapping {
	return &profilespb.Mapping{
		MemoryStart:      m.MemoryStart,
		MemoryLimit:      m.MemoryLimit,
		FileOffset:       m.FileOffset,
		FilenameStrindex: remap(p.strs, m.FilenameStrindex),
		AttributeIndices: p.remapAll(p.attrs, m.AttributeIndices),
	}
}

func (p *pruner) location(loc *profilespb.Location) *profilespb.Location {
	c := &profilespb.Location{
		MappingIndex:     remap(p.mappings, loc.MappingIndex),
		Address:          loc.Address,
		AttributeIndices: p.remapAll(p.attrs, loc.AttributeIndices),
	}
	if len(loc.Lines) > 0 {
		c.Lines = make([]*profilespb.Line, len(loc.Lines))
		for j, ln := range loc.Lines {
			if ln != nil {
				c.Lines[j] = &profilespb.Line{FunctionIndex: remap(p.functions, ln.FunctionIndex), Line: ln.Line, Column: ln.Column}
			}
		}
	}
	return c
}

func (p *pruner) function(f *profilespb.Function) *profilespb.Function {
	return &profilespb.Function{
		NameStrindex:       remap(p.strs, f.NameStrindex),
		SystemNameStrindex: remap(p.strs, f.SystemNameStrindex),
		FilenameStrindex:   remap(p.strs, f.FilenameStrindex),
		StartLine:          f.StartLine,
	}
}

func (p *pruner) attribute(a *profilespb.KeyValueAndUnit) *profilespb.KeyValueAndUnit {
	return &profilespb.KeyValueAndUnit{
		KeyStrindex:  remap(p.strs, a.KeyStrindex),
		Value:        a.Value,
		UnitStrindex: remap(p.strs, a.UnitStrindex),
	}
}

// remapAll returns idxs renumbered through table, in a new slice: idxs
// belongs to the source dictionary, which Split must not modify.
func (p *pruner) remapAll(table []int32, idxs []int32) []int32 {
	if len(idxs) == 0 {
		return nil
	}
	out := make([]int32, len(idxs))
	for i, x := range idxs {
		out[i] = remap(table, x)
	}
	return out
}

// remapProfile rewrites a Profile made by markProfile to the new indices.
func (p *pruner) remapProfile(prof *profilespb.Profile) {
	for _, vt := range []*profilespb.ValueType{prof.SampleType, prof.PeriodType} {
		if vt != nil {
			vt.TypeStrindex = remap(p.strs, vt.TypeStrindex)
			vt.UnitStrindex = remap(p.strs, vt.UnitStrindex)
		}
	}
	for i, a := range prof.AttributeIndices {
		prof.AttributeIndices[i] = remap(p.attrs, a)
	}
	for _, s := range prof.Samples {
		s.StackIndex = remap(p.stacks, s.StackIndex)
		s.LinkIndex = remap(p.links, s.LinkIndex)
		for i, a := range s.AttributeIndices {
			s.AttributeIndices[i] = remap(p.attrs, a)
		}
	}
}
