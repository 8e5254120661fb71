package otlp

import (
	"slices"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/hashindex"
	"github.com/pprofotel/profiler/internal/validutf8"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
)

type attrKind uint8

const (
	kindString attrKind = iota + 1
	kindInt
	kindBool
)

// attrKey is the value identity of a KeyValueAndUnit. Booleans keep their
// value in num.
type attrKey struct {
	key, unit int32
	kind      attrKind
	str       string
	num       int64
}

// linkKey is a trace id followed by a span id.
type linkKey [24]byte

type functionKey struct {
	name, system, filename int32
	startLine              int64
}

// maxMappingAttrs is the number of attributes a mapping can get: two build
// ids and four flags.
const maxMappingAttrs = 6

type mappingKey struct {
	start, limit, offset uint64
	filename             int32
	attrs                [maxMappingAttrs]int32
	nattrs               int
}

type locationKey struct {
	mapping int32
	address uint64
	folded  int32 // attribute index of is_folded, or 0
}

type lineKey struct {
	function     int32
	line, column int64
}

// dictionary deduplicates the entries of one request's ProfilesDictionary.
// The lookup maps survive between requests and are cleared; the tables are
// allocated anew for every request because the request owns them.
type dictionary struct {
	strings   map[string]int32
	functions map[functionKey]int32
	mappings  map[mappingKey]int32
	locations keyIndex // encoded locationKey and lines
	// stacks indexes StackTable by the hash of each stack's location
	// indices, which are compared where the table holds them: a stack
	// needs no key of its own.
	stacks     hashindex.Index
	attributes map[attrKey]int32
	links      map[linkKey]int32

	attrKeys     []int32 // attribute index -> key string index
	lineScratch  []lineKey
	stackScratch []int32
	keyBuf       []byte

	out *profilespb.ProfilesDictionary
	// Backing storage for the current request.
	i32       slab[int32]
	linePtrs  slab[*profilespb.Line]
	lineMsgs  slab[profilespb.Line]
	locMsgs   slab[profilespb.Location]
	stackMsgs slab[profilespb.Stack]
	attrMsgs  slab[profilespb.KeyValueAndUnit]
	anyMsgs   slab[commonpb.AnyValue]
	funcMsgs  slab[profilespb.Function]

	// Table sizes of the previous request, used as capacity hints.
	hint [7]int

	// repairs counts the strings of the current request that were not
	// valid UTF-8: every string of a request enters it through str or
	// attribute, which repair them.
	repairs validutf8.Repairs
}

func (d *dictionary) init() {
	d.strings = make(map[string]int32)
	d.functions = make(map[functionKey]int32)
	d.mappings = make(map[mappingKey]int32)
	d.locations = newKeyIndex()
	d.attributes = make(map[attrKey]int32)
	d.links = make(map[linkKey]int32)
}

// reset starts the dictionary of a new request, with every table holding its
// zero value at index 0 and every lookup map knowing that entry, so that an
// entry equal to the zero value is never added twice.
func (d *dictionary) reset() {
	clear(d.strings)
	clear(d.functions)
	clear(d.mappings)
	d.locations.reset()
	clear(d.attributes)
	clear(d.links)
	d.i32.reset()
	d.linePtrs.reset()
	d.lineMsgs.reset()
	d.locMsgs.reset()
	d.stackMsgs.reset()
	d.attrMsgs.reset()
	d.anyMsgs.reset()
	d.funcMsgs.reset()
	d.repairs = validutf8.Repairs{}

	h := d.hint
	d.out = &profilespb.ProfilesDictionary{
		MappingTable:   make([]*profilespb.Mapping, 1, max(h[0], 1)),
		LocationTable:  make([]*profilespb.Location, 1, max(h[1], 1)),
		FunctionTable:  make([]*profilespb.Function, 1, max(h[2], 1)),
		LinkTable:      make([]*profilespb.Link, 1, max(h[3], 1)),
		StringTable:    make([]string, 1, max(h[4], 1)),
		AttributeTable: make([]*profilespb.KeyValueAndUnit, 1, max(h[5], 1)),
		StackTable:     make([]*profilespb.Stack, 1, max(h[6], 1)),
	}
	d.out.MappingTable[0] = &profilespb.Mapping{}
	d.out.LocationTable[0] = &profilespb.Location{}
	d.out.FunctionTable[0] = &profilespb.Function{}
	// The proto recommends full-length zero ids for codecs that expect
	// 16 and 8 bytes.
	d.out.LinkTable[0] = &profilespb.Link{TraceId: make([]byte, 16), SpanId: make([]byte, 8)}
	d.out.AttributeTable[0] = &profilespb.KeyValueAndUnit{}
	d.out.StackTable[0] = &profilespb.Stack{}
	d.attrKeys = append(d.attrKeys[:0], 0)

	d.strings[""] = 0
	d.functions[functionKey{}] = 0
	d.mappings[mappingKey{}] = 0
	d.locations.lookup(d.locationKey(locationKey{}, nil))
	d.stacks.Reset(h[6] + h[6]/8)
	p := d.stacks.Probe(0) // the hash of the empty stack
	d.stacks.Insert(&p, 0)
	d.attributes[attrKey{}] = 0
	d.links[linkKey{}] = 0
}

// finish hands the tables over to the request.
func (d *dictionary) finish() *profilespb.ProfilesDictionary {
	out := d.out
	d.out = nil
	// The rest of each slab's chunk shares its array with the messages
	// handed to the request: dropping it lets the request be collected
	// when its sender is done with it.
	d.i32.release()
	d.linePtrs.release()
	d.lineMsgs.release()
	d.locMsgs.release()
	d.stackMsgs.release()
	d.attrMsgs.release()
	d.anyMsgs.release()
	d.funcMsgs.release()
	d.hint = [7]int{
		len(out.MappingTable), len(out.LocationTable), len(out.FunctionTable),
		len(out.LinkTable), len(out.StringTable), len(out.AttributeTable), len(out.StackTable),
	}
	return out
}

// int32s returns n int32s owned by the current request.
func (d *dictionary) int32s(n int) []int32 {
	return d.i32.take(n)
}

// slab hands out the elements of the current request in chunks, the first
// of them as large as the previous request needed, so that a window like
// the one before costs one allocation per slab however many elements it
// holds. The chunks belong to the request: reset drops them.
type slab[T any] struct {
	free []T
	// used counts the elements handed out for the current request, last
	// those of the previous one.
	used, last int
}

// minChunk is the smallest chunk a slab allocates.
const minChunk = 256

func (s *slab[T]) reset() {
	s.free = nil
	s.last = s.used
	s.used = 0
}

// release drops the current chunk, keeping the count that sizes the next
// request's.
func (s *slab[T]) release() {
	s.free = nil
}

// take returns n zeroed elements, contiguous and with capacity n.
func (s *slab[T]) take(n int) []T {
	if len(s.free) < n {
		// Start with what the previous request needed; past that, grow
		// by a quarter of what is in use.
		s.free = make([]T, max(n, minChunk, s.last-s.used, s.used/4))
	}
	out := s.free[:n:n]
	s.free = s.free[n:]
	s.used += n
	return out
}

func (s *slab[T]) new() *T {
	return &s.take(1)[0]
}

// str returns the index of s in the string table, adding it if needed. A
// string that is not valid UTF-8 is added repaired (see package validutf8),
// under the index of its repaired form, which it may share with a valid
// string or another repaired one: the table stays free of duplicates. Only
// a string not seen before in the request is checked.
func (d *dictionary) str(s string) int32 {
	if i, ok := d.strings[s]; ok {
		return i
	}
	v := d.repairs.String(s)
	if v != s {
		if i, ok := d.strings[v]; ok {
			d.strings[s] = i
			return i
		}
		d.strings[v] = int32(len(d.out.StringTable))
	}
	i := int32(len(d.out.StringTable))
	d.out.StringTable = append(d.out.StringTable, v)
	d.strings[s] = i
	return i
}

func (d *dictionary) valueType(vt pprofdecode.ValueType) *profilespb.ValueType {
	return &profilespb.ValueType{TypeStrindex: d.str(vt.Type), UnitStrindex: d.str(vt.Unit)}
}

// attribute returns the index of the attribute k, adding it if needed. A
// string value that is not valid UTF-8 is repaired as str repairs strings;
// the key, a string index, already is.
func (d *dictionary) attribute(k attrKey) int32 {
	if i, ok := d.attributes[k]; ok {
		return i
	}
	if k.kind == kindString {
		if v := d.repairs.String(k.str); v != k.str {
			orig := k
			k.str = v
			i := d.attribute(k)
			d.attributes[orig] = i
			return i
		}
	}
	v := d.anyMsgs.new()
	switch k.kind {
	case kindString:
		v.Value = &commonpb.AnyValue_StringValue{StringValue: k.str}
	case kindInt:
		v.Value = &commonpb.AnyValue_IntValue{IntValue: k.num}
	case kindBool:
		v.Value = &commonpb.AnyValue_BoolValue{BoolValue: k.num != 0}
	}
	m := d.attrMsgs.new()
	m.KeyStrindex = k.key
	m.Value = v
	m.UnitStrindex = k.unit
	i := int32(len(d.out.AttributeTable))
	d.out.AttributeTable = append(d.out.AttributeTable, m)
	d.attrKeys = append(d.attrKeys, k.key)
	d.attributes[k] = i
	return i
}

func (d *dictionary) link(k linkKey) int32 {
	if i, ok := d.links[k]; ok {
		return i
	}
	ids := make([]byte, 24)
	copy(ids, k[:])
	i := int32(len(d.out.LinkTable))
	d.out.LinkTable = append(d.out.LinkTable, &profilespb.Link{TraceId: ids[:16:16], SpanId: ids[16:]})
	d.links[k] = i
	return i
}

func (d *dictionary) function(k functionKey) int32 {
	if i, ok := d.functions[k]; ok {
		return i
	}
	m := d.funcMsgs.new()
	m.NameStrindex = k.name
	m.SystemNameStrindex = k.system
	m.FilenameStrindex = k.filename
	m.StartLine = k.startLine
	i := int32(len(d.out.FunctionTable))
	d.out.FunctionTable = append(d.out.FunctionTable, m)
	d.functions[k] = i
	return i
}

func (d *dictionary) mapping(k mappingKey) int32 {
	if i, ok := d.mappings[k]; ok {
		return i
	}
	m := &profilespb.Mapping{
		MemoryStart:      k.start,
		MemoryLimit:      k.limit,
		FileOffset:       k.offset,
		FilenameStrindex: k.filename,
	}
	if k.nattrs > 0 {
		m.AttributeIndices = d.int32s(k.nattrs)
		copy(m.AttributeIndices, k.attrs[:k.nattrs])
	}
	i := int32(len(d.out.MappingTable))
	d.out.MappingTable = append(d.out.MappingTable, m)
	d.mappings[k] = i
	return i
}

func (d *dictionary) locationKey(k locationKey, lines []lineKey) []byte {
	b := d.keyBuf[:0]
	b = appendVarint(b, uint64(k.mapping))
	b = appendVarint(b, k.address)
	b = appendVarint(b, uint64(k.folded))
	b = appendVarint(b, uint64(len(lines)))
	for _, l := range lines {
		b = appendVarint(b, uint64(l.function))
		b = appendVarint(b, uint64(l.line))
		b = appendVarint(b, uint64(l.column))
	}
	d.keyBuf = b
	return b
}

func (d *dictionary) location(k locationKey, lines []lineKey) int32 {
	// The locations are numbered as LocationTable holds them: the zero
	// location first, then each new one as it is appended below.
	i, found := d.locations.lookup(d.locationKey(k, lines))
	if found {
		return i
	}
	m := d.locMsgs.new()
	m.MappingIndex = k.mapping
	m.Address = k.address
	if k.folded != 0 {
		m.AttributeIndices = d.int32s(1)
		m.AttributeIndices[0] = k.folded
	}
	if len(lines) > 0 {
		m.Lines = d.linePtrs.take(len(lines))
		for j, l := range lines {
			ln := d.lineMsgs.new()
			ln.FunctionIndex = l.function
			ln.Line = l.line
			ln.Column = l.column
			m.Lines[j] = ln
		}
	}
	d.out.LocationTable = append(d.out.LocationTable, m)
	return i
}

// stack returns the index of the stack of locs, whose hash (see
// hashStackStep) is h.
func (d *dictionary) stack(locs []int32, h uint64) int32 {
	p := d.stacks.Probe(h)
	for e := d.stacks.Next(&p); e >= 0; e = d.stacks.Next(&p) {
		if slices.Equal(d.out.StackTable[e].LocationIndices, locs) {
			return e
		}
	}
	i := int32(len(d.out.StackTable))
	d.stacks.Insert(&p, i)
	m := d.stackMsgs.new()
	m.LocationIndices = d.int32s(len(locs))
	copy(m.LocationIndices, locs)
	d.out.StackTable = append(d.out.StackTable, m)
	return i
}

// hashStackStep extends the hash of a stack with its next location: the
// hash of a stack is hashStackStep applied to 0 and each location in turn,
// which callers compute while they build the stack.
func hashStackStep(h uint64, loc int32) uint64 {
	return hashindex.Mix(h, uint64(uint32(loc)))
}
