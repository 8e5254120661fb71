package otlp

import (
	"crypto/rand"
	"encoding/hex"
	"hash/maphash"
	"slices"
	"strings"
	"time"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/hashindex"
	"github.com/pprofotel/profiler/internal/labelkey"
	"github.com/pprofotel/profiler/internal/otlpattr"
	"github.com/pprofotel/profiler/internal/validutf8"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// Input is one runtime profile of a collection window.
type Input struct {
	// Name is the runtime profile name: "cpu", "heap", "goroutine",
	// "mutex", "block" or "goroutineleak".
	Name string
	// Profile is the decoded profile, with deltas already applied to
	// cumulative sample types. A nil Profile yields an empty scope.
	Profile *pprofdecode.Profile
	// Start and End are the time range the profile covers when it is
	// less than the window (a CPU profile under a duty cycle); zero
	// means the window's.
	Start, End time.Time
}

// Option configures a Builder.
type Option func(*Builder)

// WithExecutable names the main executable and its Go build id (see
// GoBuildID). The mapping whose file is path, or the first mapping when the
// profile names no mapping files, gets the process.executable.build_id.go
// attribute. An empty goBuildID adds no attribute.
func WithExecutable(path, goBuildID string) Option {
	return func(b *Builder) {
		b.exePath = path
		b.goBuildID = goBuildID
	}
}

// WithProfileIDs replaces the random source of Profile.profile_id, so that
// tests can produce reproducible requests. newID must not return all zeros.
func WithProfileIDs(newID func() [16]byte) Option {
	return func(b *Builder) {
		if newID != nil {
			b.newID = newID
		}
	}
}

// Builder converts the profiles of one window into one request. It keeps its
// lookup tables between calls to Build to save allocations, so it is not safe
// for concurrent use. The requests it returns share no memory with it.
type Builder struct {
	resource  *resourcepb.Resource
	scope     *commonpb.InstrumentationScope
	exePath   string
	goBuildID string
	newID     func() [16]byte

	d dictionary
	// Scratch state of the input being converted, indexed like the pprof
	// profile. -1 means not resolved yet.
	locIdx  []int32
	funcIdx []int32
	mapIdx  []int32
	exeMap  int // pprof index of the main executable's mapping, or -1

	// ident indexes the live samples that come first with their
	// identity, by its hash; samples are compared where they are, so
	// they need no key of their own.
	ident    hashindex.Index
	seed     maphash.Seed
	rep      []int32 // sample index -> index of its identity's first sample, -1 if not live
	stackIdx []int32 // per representative sample
	linkIdx  []int32
	attrs    [][]int32
	acc      []int64
	// Canonical label orders of the two samples compared by sameIdentity.
	labelOrd [2][]int
	// lastLabel is the label resolved last in the current request and
	// lastAttr its attribute, 0 if none: the samples of a runtime profile
	// mostly carry the labels of the sample before (the heap profile's
	// object size), and comparing a label costs less than the two map
	// lookups that resolve it.
	lastLabel pprofdecode.Label
	lastAttr  int32
}

// NewBuilder returns a Builder that reports res as the resource and scope
// as the instrumentation scope of every request. Neither is modified.
func NewBuilder(res *resourcepb.Resource, scope *commonpb.InstrumentationScope, opts ...Option) *Builder {
	b := &Builder{
		resource: res,
		scope:    scope,
		newID:    randomID,
		seed:     maphash.MakeSeed(),
	}
	b.d.init()
	for _, o := range opts {
		o(b)
	}
	return b
}

func randomID() [16]byte {
	var id [16]byte
	for id == ([16]byte{}) {
		rand.Read(id[:]) // never fails, see crypto/rand.Read
	}
	return id
}

// Build returns the request for the window [start, end) holding inputs in
// order.
func (b *Builder) Build(start, end time.Time, inputs []Input) *collectorpb.ExportProfilesServiceRequest {
	b.d.reset()
	b.lastLabel, b.lastAttr = pprofdecode.Label{}, 0
	rp := &profilespb.ResourceProfiles{
		Resource:      b.resource,
		ScopeProfiles: make([]*profilespb.ScopeProfiles, 0, len(inputs)),
	}
	win := spanOf(start, end)
	for _, in := range inputs {
		span := win
		if !in.Start.IsZero() {
			span = spanOf(in.Start, in.End)
		}
		rp.ScopeProfiles = append(rp.ScopeProfiles, b.scopeProfiles(in, span))
	}
	// The attribute lists point into the request's memory; the Builder must
	// not keep the request alive until the next Build, nor the strings of
	// the last label, its profile's.
	clear(b.attrs)
	b.lastLabel = pprofdecode.Label{}
	return &collectorpb.ExportProfilesServiceRequest{
		ResourceProfiles: []*profilespb.ResourceProfiles{rp},
		Dictionary:       b.d.finish(),
	}
}

// Repairs returns what the last Build repaired: the strings of its
// profiles (label keys and values, function, file and mapping names,
// sample types) that were not valid UTF-8, which proto3 requires of every
// string field, and were sent with U+FFFD for each run of invalid bytes.
// A string is counted once per request in each place it enters (the string
// table, the attribute values, the scope's default sample type), however
// often the profiles cite it. The resource and the scope given to
// NewBuilder are sent as they are: their owner makes them valid.
func (b *Builder) Repairs() validutf8.Repairs {
	return b.d.repairs
}

type window struct {
	time, duration uint64
}

// spanOf returns the time range [start, end) as a Profile states it. It
// takes wall-clock nanoseconds on both ends, not the monotonic difference:
// consecutive windows share a boundary, and time_unix_nano+duration_nano
// of one must equal time_unix_nano of the next to the nanosecond.
func spanOf(start, end time.Time) window {
	w := window{time: uint64(start.UnixNano())}
	if d := end.UnixNano() - start.UnixNano(); d > 0 {
		w.duration = uint64(d)
	}
	return w
}

func (b *Builder) scopeProfiles(in Input, win window) *profilespb.ScopeProfiles {
	p := in.Profile
	if p == nil {
		p = &pprofdecode.Profile{}
	}
	nTypes := len(p.SampleTypes)

	defaultType := p.DefaultSampleType
	if defaultType == "" && nTypes > 0 {
		defaultType = p.SampleTypes[nTypes-1].Type
	}
	// The types to send, by otlpattr.SampleTypes: a type that another one times
	// the period gives exactly is not sent.
	sent := make([]int, 0, nTypes)
	types := make([]otlpattr.ValueType, 0, 2*nTypes)
	eventPerSample := make([]bool, 0, nTypes)
	for t, st := range p.SampleTypes {
		vt, pt := otlpattr.ValueType(st), otlpattr.ValueType(p.PeriodType)
		each := false
		if row := otlpattr.SentAs(in.Name, vt); row != nil {
			if row.ScaledFrom != "" && scaledExactly(p, t, row.ScaledFrom) {
				continue
			}
			vt, pt, each = row.Sample, row.Period, row.EventPerSample
		}
		sent = append(sent, t)
		types = append(types, vt, pt)
		eventPerSample = append(eventPerSample, each)
	}
	order := make([]*commonpb.AnyValue, len(sent))
	for i, t := range sent {
		order[i] = &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(t)}}
	}
	sp := &profilespb.ScopeProfiles{
		Scope:    b.scopeFor(in.Name, defaultType, order),
		Profiles: make([]*profilespb.Profile, 0, len(sent)),
	}

	b.prepare(p)
	var nameAttr int32
	if nTypes > 0 {
		nameAttr = b.d.attribute(attrKey{key: b.d.str(otlpattr.ProfileName), kind: kindString, str: in.Name})
	}
	ids := make([]byte, 16*len(sent))
	for i, t := range sent {
		id := b.newID()
		copy(ids[16*i:], id[:])
		prof := &profilespb.Profile{
			SampleType:       b.d.valueType(pprofdecode.ValueType(types[2*i])),
			TimeUnixNano:     win.time,
			DurationNano:     win.duration,
			PeriodType:       b.d.valueType(pprofdecode.ValueType(types[2*i+1])),
			Period:           p.Period,
			ProfileId:        ids[16*i : 16*i+16 : 16*i+16],
			AttributeIndices: []int32{nameAttr},
		}
		prof.Samples = b.samples(p, t, eventPerSample[i])
		sp.Profiles = append(sp.Profiles, prof)
	}
	return sp
}

// scaledExactly tells whether the values of sample type t of p equal those
// of sample type from times the period, in every sample.
func scaledExactly(p *pprofdecode.Profile, t int, from string) bool {
	f := slices.IndexFunc(p.SampleTypes, func(vt pprofdecode.ValueType) bool { return vt.Type == from })
	if f < 0 || f == t {
		return false
	}
	for i := range p.Samples {
		v := p.Samples[i].Values
		var x, y int64
		if t < len(v) {
			x = v[t]
		}
		if f < len(v) {
			y = v[f]
		}
		if x != y*p.Period {
			return false
		}
	}
	return true
}

// scopeFor copies the configured scope and appends the pprof attributes, so
// that the caller's scope is never modified.
func (b *Builder) scopeFor(name, defaultType string, order []*commonpb.AnyValue) *commonpb.InstrumentationScope {
	s := &commonpb.InstrumentationScope{}
	if b.scope != nil {
		s.Name = b.scope.Name
		s.Version = b.scope.Version
		s.DroppedAttributesCount = b.scope.DroppedAttributesCount
		s.Attributes = make([]*commonpb.KeyValue, 0, len(b.scope.Attributes)+3)
		s.Attributes = append(s.Attributes, b.scope.Attributes...)
	}
	s.Attributes = append(s.Attributes,
		&commonpb.KeyValue{Key: otlpattr.DefaultSampleType, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: b.d.repairs.String(defaultType)}}},
		&commonpb.KeyValue{Key: otlpattr.SampleTypeOrder, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: order}}}},
		&commonpb.KeyValue{Key: otlpattr.ProfileName, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: name}}},
	)
	return s
}

// prepare resets the per-input scratch state and groups the live samples of
// p (those with a non-zero value and a usable stack) by identity: samples
// with the same locations and labels are merged into the first of them.
func (b *Builder) prepare(p *pprofdecode.Profile) {
	b.locIdx = fill(b.locIdx, len(p.Locations))
	b.funcIdx = fill(b.funcIdx, len(p.Functions))
	b.mapIdx = fill(b.mapIdx, len(p.Mappings))
	n := len(p.Samples)
	b.rep = fill(b.rep, n)
	b.stackIdx = fill(b.stackIdx, n)
	b.linkIdx = fill(b.linkIdx, n)
	if cap(b.attrs) < n {
		b.attrs = make([][]int32, n)
	}
	b.attrs = b.attrs[:n]
	clear(b.attrs)
	if cap(b.acc) < n {
		b.acc = make([]int64, n)
	}
	b.acc = b.acc[:n]
	b.ident.Reset(n)

	b.exeMap = -1
	if b.goBuildID != "" && len(p.Mappings) > 0 {
		anyFile := false
		for i, m := range p.Mappings {
			if m.File != "" {
				anyFile = true
				if b.exePath != "" && m.File == b.exePath {
					b.exeMap = i
					break
				}
			}
		}
		if !anyFile {
			b.exeMap = 0
		}
	}

	nTypes := len(p.SampleTypes)
	for i := range p.Samples {
		s := &p.Samples[i]
		if !live(s, nTypes) || !hasLocation(s, len(p.Locations)) {
			continue
		}
		at := b.ident.Probe(b.hashIdentity(s, len(p.Locations)))
		rep := int32(-1)
		for e := b.ident.Next(&at); e >= 0; e = b.ident.Next(&at) {
			if b.sameIdentity(&p.Samples[e], s, len(p.Locations)) {
				rep = e
				break
			}
		}
		if rep < 0 {
			rep = int32(i)
			b.ident.Insert(&at, rep)
		}
		b.rep[i] = rep
	}
}

func fill(s []int32, n int) []int32 {
	if cap(s) < n {
		s = make([]int32, n)
	}
	s = s[:n]
	for i := range s {
		s[i] = -1
	}
	return s
}

func live(s *pprofdecode.Sample, nTypes int) bool {
	for t, v := range s.Values {
		if t < nTypes && v != 0 {
			return true
		}
	}
	return false
}

func hasLocation(s *pprofdecode.Sample, nLocs int) bool {
	for _, l := range s.Locations {
		if l >= 0 && int(l) < nLocs {
			return true
		}
	}
	return false
}

// hashIdentity hashes the identity of s: its valid locations, in order,
// and its labels, a set, compared in a canonical order by sameIdentity.
// Samples of the same identity are merged. Label hashes are summed, so
// that hashing needs no sorting: their order does not count.
func (b *Builder) hashIdentity(s *pprofdecode.Sample, nLocs int) uint64 {
	var h uint64
	for _, l := range s.Locations {
		if l >= 0 && int(l) < nLocs {
			h = hashindex.Mix(h, uint64(l))
		}
	}
	var labels uint64
	for i := range s.Labels {
		l := &s.Labels[i]
		if l.IsNum {
			continue // not sent, see doc.go
		}
		labels += hashindex.Mix(maphash.String(b.seed, l.Key), maphash.String(b.seed, l.Str))
	}
	return hashindex.Mix(h, labels)
}

// sameIdentity tells whether x and y have the same identity. Numeric labels
// are not part of it, as they are not sent; string labels that differ only
// in their unused number are the same label.
func (b *Builder) sameIdentity(x, y *pprofdecode.Sample, nLocs int) bool {
	valid := func(l int32) bool { return l >= 0 && int(l) < nLocs }
	i, j := 0, 0
	for {
		for i < len(x.Locations) && !valid(x.Locations[i]) {
			i++
		}
		for j < len(y.Locations) && !valid(y.Locations[j]) {
			j++
		}
		if i == len(x.Locations) || j == len(y.Locations) {
			if i != len(x.Locations) || j != len(y.Locations) {
				return false
			}
			break
		}
		if x.Locations[i] != y.Locations[j] {
			return false
		}
		i++
		j++
	}
	nx, ny := stringLabels(x), stringLabels(y)
	if nx != ny {
		return false
	}
	switch {
	case nx == 0:
		return true
	case nx == 1 && len(x.Labels) == 1 && len(y.Labels) == 1:
		return sameLabel(&x.Labels[0], &y.Labels[0])
	}
	// Labels are compared in their canonical order, as if sorted.
	ox, oy := b.labelOrder(0, x), b.labelOrder(1, y)
	for k := range ox {
		if !sameLabel(&x.Labels[ox[k]], &y.Labels[oy[k]]) {
			return false
		}
	}
	return true
}

func stringLabels(s *pprofdecode.Sample) int {
	n := 0
	for i := range s.Labels {
		if !s.Labels[i].IsNum {
			n++
		}
	}
	return n
}

// labelOrder returns the indices of the string labels of s in canonical
// order, in scratch slice k.
func (b *Builder) labelOrder(k int, s *pprofdecode.Sample) []int {
	ord := b.labelOrd[k][:0]
	for i := range s.Labels {
		if !s.Labels[i].IsNum {
			ord = append(ord, i)
		}
	}
	slices.SortFunc(ord, func(x, y int) int { return compareLabels(&s.Labels[x], &s.Labels[y]) })
	b.labelOrd[k] = ord
	return ord
}

// sameLabel tells whether the string labels x and y are the same label.
func sameLabel(x, y *pprofdecode.Label) bool {
	return x.Key == y.Key && x.Str == y.Str
}

// compareLabels orders string labels.
func compareLabels(x, y *pprofdecode.Label) int {
	if c := strings.Compare(x.Key, y.Key); c != 0 {
		return c
	}
	return strings.Compare(x.Str, y.Str)
}

// samples returns the Samples of sample type t of p; eventPerSample sends
// each event of a timed profile as a Sample of its own.
func (b *Builder) samples(p *pprofdecode.Profile, t int, eventPerSample bool) []*profilespb.Sample {
	if timed(p) {
		return b.timedSamples(p, t, eventPerSample)
	}
	acc := b.acc
	clear(acc)
	for i := range p.Samples {
		if r := b.rep[i]; r >= 0 && t < len(p.Samples[i].Values) {
			acc[r] += p.Samples[i].Values[t]
		}
	}
	n := 0
	for i, r := range b.rep {
		if int(r) == i && acc[i] != 0 {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]*profilespb.Sample, n)
	msgs := make([]profilespb.Sample, n)
	values := make([]int64, n)
	j := 0
	for i, r := range b.rep {
		if int(r) != i || acc[i] == 0 {
			continue
		}
		if b.stackIdx[i] < 0 {
			b.resolveSample(p, i)
		}
		values[j] = acc[i]
		m := &msgs[j]
		m.StackIndex = b.stackIdx[i]
		m.AttributeIndices = b.attrs[i]
		m.LinkIndex = b.linkIdx[i]
		m.Values = values[j : j+1 : j+1]
		out[j] = m
		j++
	}
	return out
}

// timed reports whether the samples of p are events: then each event is
// sent with its own value and timestamp.
func timed(p *pprofdecode.Profile) bool {
	return len(p.Samples) > 0 && p.Samples[0].Events != nil
}

// timedSamples is samples for a profile whose samples record events: the
// events of one identity become one OTLP sample with a value and a
// timestamp per event, in the order of p.Samples and of their events, as
// profiles.proto asks for timestamped values; with eventPerSample, each
// event becomes one OTLP sample of that identity, its one value and
// timestamp. Events carry the value of the profile's one sample type, so
// only t 0 has them.
func (b *Builder) timedSamples(p *pprofdecode.Profile, t int, eventPerSample bool) []*profilespb.Sample {
	if t != 0 {
		return nil
	}
	events := b.countEvents(p)
	if events == 0 {
		return nil
	}
	if eventPerSample {
		return b.eventSamples(p, events)
	}
	return b.sharedSamples(p, events, b.offsets())
}

// countEvents counts, in b.acc, the events other than zero of each
// sample identity, and returns their total.
func (b *Builder) countEvents(p *pprofdecode.Profile) int {
	count := b.acc
	clear(count)
	events := 0
	for i := range p.Samples {
		if r := b.rep[i]; r >= 0 {
			for _, e := range p.Samples[i].Events {
				if e.Value != 0 {
					count[r]++
					events++
				}
			}
		}
	}
	return events
}

// offsets turns the counts of countEvents into each identity's offset in
// the arrays its samples share, and returns the identities with events.
func (b *Builder) offsets() int {
	count := b.acc
	n, off := 0, int64(0)
	for i, r := range b.rep {
		if int(r) == i && count[i] != 0 {
			c := count[i]
			count[i] = off
			off += c
			n++
		}
	}
	return n
}

// sharedSamples returns one sample per identity with events, n of them,
// whose values and timestamps are slices of two arrays of all events.
func (b *Builder) sharedSamples(p *pprofdecode.Profile, events, n int) []*profilespb.Sample {
	count := b.acc
	values := make([]int64, events)
	times := make([]uint64, events)
	first := make([]int64, 0, n)
	next := make([]int64, 0, n)
	out := make([]*profilespb.Sample, 0, n)
	msgs := make([]profilespb.Sample, n)
	slot := make(map[int32]int, n)
	for i := range p.Samples {
		s := &p.Samples[i]
		r := b.rep[i]
		if r < 0 {
			continue
		}
		for _, e := range s.Events {
			if e.Value == 0 {
				continue
			}
			j, ok := slot[r]
			if !ok {
				j = len(out)
				slot[r] = j
				if b.stackIdx[r] < 0 {
					b.resolveSample(p, int(r))
				}
				m := &msgs[j]
				m.StackIndex = b.stackIdx[r]
				m.AttributeIndices = b.attrs[r]
				m.LinkIndex = b.linkIdx[r]
				out = append(out, m)
				first = append(first, count[r])
				next = append(next, count[r])
			}
			k := next[j]
			values[k] = e.Value
			times[k] = uint64(e.TimeNanos)
			next[j]++
		}
	}
	for j, m := range out {
		m.Values = values[first[j]:next[j]:next[j]]
		m.TimestampsUnixNano = times[first[j]:next[j]:next[j]]
	}
	return out
}

// eventSamples is timedSamples with each of the events (non-zero ones,
// events in all) sent as an OTLP sample of its own: its sample's stack,
// attributes and link, its value and its timestamp, in the order of
// p.Samples and of their events.
func (b *Builder) eventSamples(p *pprofdecode.Profile, events int) []*profilespb.Sample {
	values := make([]int64, events)
	times := make([]uint64, events)
	msgs := make([]profilespb.Sample, events)
	out := make([]*profilespb.Sample, 0, events)
	for i := range p.Samples {
		r := b.rep[i]
		if r < 0 {
			continue
		}
		for _, e := range p.Samples[i].Events {
			if e.Value == 0 {
				continue
			}
			if b.stackIdx[r] < 0 {
				b.resolveSample(p, int(r))
			}
			k := len(out)
			values[k], times[k] = e.Value, uint64(e.TimeNanos)
			m := &msgs[k]
			m.StackIndex = b.stackIdx[r]
			m.AttributeIndices = b.attrs[r]
			m.LinkIndex = b.linkIdx[r]
			m.Values = values[k : k+1 : k+1]
			m.TimestampsUnixNano = times[k : k+1 : k+1]
			out = append(out, m)
		}
	}
	return out
}

// resolveSample adds the stack, attributes and link of sample i to the
// dictionary. It runs once per sample and input, as the result is the same
// for every sample type.
func (b *Builder) resolveSample(p *pprofdecode.Profile, i int) {
	s := &p.Samples[i]
	b.stackIdx[i] = b.stack(p, s)

	var link int32
	trace, span := -1, -1
	for j := range s.Labels {
		l := &s.Labels[j]
		if l.IsNum {
			continue
		}
		switch {
		case l.Key == labelkey.TraceID && trace < 0:
			trace = j
		case l.Key == labelkey.SpanID && span < 0:
			span = j
		}
	}
	if trace >= 0 && span >= 0 {
		var k linkKey
		if decodeID(k[:16], s.Labels[trace].Str) && decodeID(k[16:], s.Labels[span].Str) &&
			k != (linkKey{}) && !isZero(k[:16]) && !isZero(k[16:]) {
			link = b.d.link(k)
		}
	}
	b.linkIdx[i] = link

	var attrs []int32
	for j := range s.Labels {
		l := &s.Labels[j]
		if l.IsNum || link != 0 && (l.Key == labelkey.TraceID || l.Key == labelkey.SpanID) {
			continue
		}
		// A label like the last one resolved has its attribute, and
		// its key its string, already.
		again := b.lastAttr != 0 && *l == b.lastLabel
		var key int32
		if again {
			key = b.d.attrKeys[b.lastAttr]
		} else {
			key = b.d.str(l.Key)
		}
		dup := false
		for _, a := range attrs {
			if b.d.attrKeys[a] == key {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		if attrs == nil {
			attrs = b.d.int32s(len(s.Labels))[:0]
		}
		if again {
			attrs = append(attrs, b.lastAttr)
			continue
		}
		a := b.d.attribute(attrKey{key: key, kind: kindString, str: l.Str})
		attrs = append(attrs, a)
		b.lastLabel, b.lastAttr = *l, a
	}
	b.attrs[i] = attrs
}

// decodeID decodes lower-case hex text into dst, which it must fill exactly.
func decodeID(dst []byte, text string) bool {
	if len(text) != 2*len(dst) {
		return false
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	_, err := hex.Decode(dst, []byte(text))
	return err == nil
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func (b *Builder) stack(p *pprofdecode.Profile, s *pprofdecode.Sample) int32 {
	locs := b.d.stackScratch[:0]
	var h uint64
	for _, l := range s.Locations {
		if l < 0 || int(l) >= len(p.Locations) {
			continue
		}
		idx := b.locIdx[l]
		if idx < 0 {
			idx = b.location(p, &p.Locations[l])
			b.locIdx[l] = idx
		}
		locs = append(locs, idx)
		h = hashStackStep(h, idx)
	}
	b.d.stackScratch = locs
	return b.d.stack(locs, h)
}

func (b *Builder) location(p *pprofdecode.Profile, l *pprofdecode.Location) int32 {
	var k locationKey
	if l.Mapping >= 0 && int(l.Mapping) < len(p.Mappings) {
		idx := b.mapIdx[l.Mapping]
		if idx < 0 {
			idx = b.mapping(&p.Mappings[l.Mapping], int(l.Mapping) == b.exeMap)
			b.mapIdx[l.Mapping] = idx
		}
		k.mapping = idx
	}
	k.address = l.Address
	if l.IsFolded {
		k.folded = b.d.attribute(attrKey{key: b.d.str(otlpattr.LocationIsFolded), kind: kindBool, num: 1})
	}
	lines := b.d.lineScratch[:0]
	for _, ln := range l.Lines {
		var fn int32
		if ln.Function >= 0 && int(ln.Function) < len(p.Functions) {
			fn = b.funcIdx[ln.Function]
			if fn < 0 {
				f := &p.Functions[ln.Function]
				fn = b.d.function(functionKey{
					name:      b.d.str(f.Name),
					system:    b.d.str(f.SystemName),
					filename:  b.d.str(f.Filename),
					startLine: f.StartLine,
				})
				b.funcIdx[ln.Function] = fn
			}
		}
		lines = append(lines, lineKey{function: fn, line: ln.Line, column: ln.Column})
	}
	b.d.lineScratch = lines
	return b.d.location(k, lines)
}

func (b *Builder) mapping(m *pprofdecode.Mapping, exe bool) int32 {
	k := mappingKey{
		start:    m.Start,
		limit:    m.Limit,
		offset:   m.Offset,
		filename: b.d.str(m.File),
	}
	add := func(a attrKey) {
		k.attrs[k.nattrs] = b.d.attribute(a)
		k.nattrs++
	}
	if m.BuildID != "" {
		add(attrKey{key: b.d.str(otlpattr.BuildIDGNU), kind: kindString, str: m.BuildID})
	}
	if exe {
		add(attrKey{key: b.d.str(otlpattr.BuildIDGo), kind: kindString, str: b.goBuildID})
	}
	for _, f := range [...]struct {
		set bool
		key string
	}{
		{m.HasFunctions, otlpattr.MappingHasFunctions},
		{m.HasFilenames, otlpattr.MappingHasFilenames},
		{m.HasLineNumbers, otlpattr.MappingHasLineNumbers},
		{m.HasInlineFrames, otlpattr.MappingHasInlineFrames},
	} {
		if f.set {
			add(attrKey{key: b.d.str(f.key), kind: kindBool, num: 1})
		}
	}
	return b.d.mapping(k)
}
