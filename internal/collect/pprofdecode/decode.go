package pprofdecode

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pprofotel/profiler/internal/collect/gzipmem"
)

// DefaultMaxDecompressedSize is the limit, in bytes, on the decompressed size
// of a gzip-compressed profile when Decoder.MaxDecompressedSize is zero.
// Runtime profiles are orders of magnitude smaller; the limit only bounds
// what a corrupt input can make the decoder allocate. The decoded Profile is
// larger than its protobuf: tens of bytes per element, so in the worst case
// (messages of two bytes each) a few dozen times the decompressed size.
const DefaultMaxDecompressedSize = 256 << 20

// Parse decodes a profile in the pprof protobuf format, as written by
// runtime/pprof, either gzip-compressed or not. The returned Profile owns
// its memory. Code that decodes repeatedly should keep a Decoder instead.
func Parse(data []byte) (*Profile, error) {
	var d Decoder
	return d.Decode(data)
}

// A Decoder decodes pprof protobuf profiles and keeps its gzip reader and
// scratch buffers from one call to the next, so that decoding the same kinds
// of profile again and again allocates little beyond the result.
//
// The zero value is ready to use. A Decoder is not safe for concurrent use.
// It retains buffers as large as the largest profile it has decoded.
type Decoder struct {
	// MaxDecompressedSize limits, in bytes, how large a gzip-compressed
	// input may grow when decompressed. Zero or less means
	// DefaultMaxDecompressedSize.
	MaxDecompressedSize int

	// DeferLocations makes DecodeInto leave each sample's stack packed
	// (Sample.PackedLocations) where the profile numbers its locations
	// 1..n in order, as the runtime does, instead of decoding it into
	// Sample.Locations. Code that reads every stack's identity but the
	// locations of only a few (a delta that drops unchanged samples) can
	// then decode just those few with ResolveLocations.
	DeferLocations bool

	// The runtime's profiles are gzip-compressed in memory: a decoder
	// for that case, about three times faster than compress/gzip's
	// streaming Reader, allocating nothing once raw is large enough.
	inflate gzipmem.Decompressor
	raw     []byte // decompressed protobuf, reused

	// Spans of top-level fields, collected in a first pass because the
	// string table and the id-bearing messages may come in any order.
	strSpans        []span
	sampleTypeSpans []span
	periodTypeSpans []span
	sampleSpans     []span
	mappingSpans    []span
	locationSpans   []span
	functionSpans   []span
	comments        []uint64

	// reuse tells that the profile being decoded came from DecodeInto.
	reuse bool

	strs []string // string table; substrings of one allocation per profile
	ids  []uint64

	mappingIDs  idIndex
	functionIDs idIndex
	locationIDs idIndex

	// Per-profile contents gathered before being copied into exactly sized
	// slices that the returned Profile owns.
	lines      []Line
	lineEnds   []int
	locs       []int32
	vals       []int64
	labels     []Label
	sampleEnds []sampleEnd
}

type sampleEnd struct {
	locs, vals, labels int
	packed             span // the packed location ids left undecoded, if end > 0
}

// Decode decodes one profile like Parse, reusing the Decoder's buffers.
//
// The returned Profile does not alias data or the Decoder's buffers: it
// stays valid after later calls. All of its strings share one allocation
// per profile, so retaining any one of them keeps the profile's whole string
// table alive; clone strings that outlive the profile by a long time.
func (d *Decoder) Decode(data []byte) (*Profile, error) {
	b := data
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		var err error
		if b, err = d.gunzip(data); err != nil {
			return nil, err
		}
	}
	if len(b) == 0 {
		return nil, errors.New("profile: empty input")
	}
	p := new(Profile)
	err := d.decode(b, p, false)
	d.release()
	if err != nil {
		return nil, err
	}
	return p, nil
}

// DecodeInto decodes one profile into p, like Decode, but reuses memory
// instead of allocating it: the backing arrays of p's Samples, Locations,
// Functions, Mappings, SampleTypes and Comments, and the Decoder's own
// buffers, which hold every sample's locations, values and labels and
// every location's lines. Decoding a profile like the previous one into
// the same p thus allocates little beyond its string table.
//
// The result therefore shares memory with the Decoder and with what p held
// before: it is valid until the next call of Decode or DecodeInto on the
// same Decoder, and slices taken from p before the call must not be used
// after it. Its strings, as with Decode, are new for every call and may be
// kept. Code that keeps profiles longer, or decodes several profiles to
// use at once, should use Decode or one Decoder per live profile.
//
// On error, p holds no valid profile.
func (d *Decoder) DecodeInto(p *Profile, data []byte) error {
	b := data
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		var err error
		if b, err = d.gunzip(data); err != nil {
			return err
		}
	}
	if len(b) == 0 {
		return errors.New("profile: empty input")
	}
	// The last profile's strings are dropped from the scratch table; its
	// labels are p's own now and stay.
	err := d.decode(b, p, true)
	clear(d.strs[:cap(d.strs)])
	return err
}

func (d *Decoder) gunzip(data []byte) ([]byte, error) {
	limit := d.MaxDecompressedSize
	if limit <= 0 {
		limit = DefaultMaxDecompressedSize
	}
	// Room for an eighth more than the last profile took: profiles grow a
	// little from window to window as their counts get longer, and a
	// buffer grown by doubling would stay doubled for good.
	buf := slices.Grow(d.raw[:0], len(d.raw)+len(d.raw)/8)
	buf, err := d.inflate.AppendGunzip(buf, data, limit)
	if err != nil {
		d.raw = buf[:0]
		if errors.Is(err, gzipmem.ErrLimit) {
			return nil, fmt.Errorf("profile: decompressed size exceeds the limit of %d bytes (Decoder.MaxDecompressedSize)", limit)
		}
		return nil, fmt.Errorf("profile: decompressing: %w", err)
	}
	d.raw = buf // its length sizes the next profile's buffer
	return buf, nil
}

// release drops scratch references into the last profile's strings so the
// Decoder does not keep an old profile alive between calls.
func (d *Decoder) release() {
	clear(d.strs[:cap(d.strs)])
	clear(d.labels[:cap(d.labels)])
}

func (d *Decoder) resetScratch() {
	d.strSpans = d.strSpans[:0]
	d.sampleTypeSpans = d.sampleTypeSpans[:0]
	d.periodTypeSpans = d.periodTypeSpans[:0]
	d.sampleSpans = d.sampleSpans[:0]
	d.mappingSpans = d.mappingSpans[:0]
	d.locationSpans = d.locationSpans[:0]
	d.functionSpans = d.functionSpans[:0]
	d.comments = d.comments[:0]
	d.strs = d.strs[:0]
	d.lines = d.lines[:0]
	d.lineEnds = d.lineEnds[:0]
	d.locs = d.locs[:0]
	d.vals = d.vals[:0]
	d.labels = d.labels[:0]
	d.sampleEnds = d.sampleEnds[:0]
}

// Profile field numbers from profile.proto.
const (
	fieldSampleType        = 1
	fieldSample            = 2
	fieldMapping           = 3
	fieldLocation          = 4
	fieldFunction          = 5
	fieldStringTable       = 6
	fieldDropFrames        = 7
	fieldKeepFrames        = 8
	fieldTimeNanos         = 9
	fieldDurationNanos     = 10
	fieldPeriodType        = 11
	fieldPeriod            = 12
	fieldComment           = 13
	fieldDefaultSampleType = 14
	fieldDocURL            = 15
)

// decode fills p, which is zero or, when reuse is set, a profile whose
// memory may be reused; see DecodeInto.
func (d *Decoder) decode(b []byte, p *Profile, reuse bool) error {
	d.resetScratch()
	d.reuse = reuse
	if reuse {
		*p = Profile{
			SampleTypes: p.SampleTypes[:0],
			Comments:    p.Comments[:0],
			Samples:     p.Samples[:0],
			Locations:   p.Locations[:0],
			Functions:   p.Functions[:0],
			Mappings:    p.Mappings[:0],
		}
	}

	refs, err := d.scan(b, p)
	if err != nil {
		return err
	}
	if err := d.buildStrings(b); err != nil {
		return err
	}
	if err := d.decodeHeader(b, p, refs); err != nil {
		return err
	}
	if err := d.decodeMappings(b, p); err != nil {
		return err
	}
	if err := d.decodeFunctions(b, p); err != nil {
		return err
	}
	if err := d.decodeLocations(b, p); err != nil {
		return err
	}
	if err := d.decodeSamples(b, p); err != nil {
		return err
	}
	if reuse {
		// Decode leaves absent tables nil; so does DecodeInto.
		p.SampleTypes = nilIfEmpty(p.SampleTypes)
		p.Comments = nilIfEmpty(p.Comments)
		p.Samples = nilIfEmpty(p.Samples)
		p.Locations = nilIfEmpty(p.Locations)
		p.Functions = nilIfEmpty(p.Functions)
		p.Mappings = nilIfEmpty(p.Mappings)
	}
	return nil
}

// headerStrings are the string indices of Profile fields this package
// has no place for, or takes after the string table: they are still
// checked, so that a profile is accepted only if it is coherent.
type headerStrings struct {
	dropFrames, keepFrames, docURL, defaultSampleType uint64
}

// scan reads the profile's top-level fields: the spans of its messages
// and strings, decoded later, its scalars into p, and the string indices
// of its header.
func (d *Decoder) scan(b []byte, p *Profile) (headerStrings, error) {
	var refs headerStrings
	r := reader{b: b, end: len(b)}
	for r.more() {
		field, wire, err := r.key()
		if err != nil {
			return refs, err
		}
		var s span
		switch field {
		case fieldSampleType:
			if s, err = r.messageField(wire, "Profile.sample_type"); err == nil {
				d.sampleTypeSpans = append(d.sampleTypeSpans, s)
			}
		case fieldSample:
			if s, err = r.messageField(wire, "Profile.sample"); err == nil {
				d.sampleSpans = append(d.sampleSpans, s)
			}
		case fieldMapping:
			if s, err = r.messageField(wire, "Profile.mapping"); err == nil {
				d.mappingSpans = append(d.mappingSpans, s)
			}
		case fieldLocation:
			if s, err = r.messageField(wire, "Profile.location"); err == nil {
				d.locationSpans = append(d.locationSpans, s)
			}
		case fieldFunction:
			if s, err = r.messageField(wire, "Profile.function"); err == nil {
				d.functionSpans = append(d.functionSpans, s)
			}
		case fieldStringTable:
			if s, err = r.messageField(wire, "Profile.string_table"); err == nil {
				d.strSpans = append(d.strSpans, s)
			}
		case fieldPeriodType:
			if s, err = r.messageField(wire, "Profile.period_type"); err == nil {
				d.periodTypeSpans = append(d.periodTypeSpans, s)
			}
		case fieldDropFrames:
			refs.dropFrames, err = r.uvarintField(wire, "Profile.drop_frames")
		case fieldKeepFrames:
			refs.keepFrames, err = r.uvarintField(wire, "Profile.keep_frames")
		case fieldTimeNanos:
			var v uint64
			v, err = r.uvarintField(wire, "Profile.time_nanos")
			p.TimeNanos = int64(v)
		case fieldDurationNanos:
			var v uint64
			v, err = r.uvarintField(wire, "Profile.duration_nanos")
			p.DurationNanos = int64(v)
		case fieldPeriod:
			var v uint64
			v, err = r.uvarintField(wire, "Profile.period")
			p.Period = int64(v)
		case fieldComment:
			err = d.readComments(&r, wire)
		case fieldDefaultSampleType:
			refs.defaultSampleType, err = r.uvarintField(wire, "Profile.default_sample_type")
		case fieldDocURL:
			refs.docURL, err = r.uvarintField(wire, "Profile.doc_url")
		default:
			err = r.skip(wire)
		}
		if err != nil {
			return refs, err
		}
	}
	// Indices are int32; only an input of several GiB could exceed that.
	if len(d.locationSpans) > math.MaxInt32 || len(d.functionSpans) > math.MaxInt32 || len(d.mappingSpans) > math.MaxInt32 {
		return refs, errors.New("profile: too many locations, functions or mappings")
	}

	return refs, nil
}

// decodeHeader checks the header's string indices and decodes its
// comments, period type and sample types, once the strings are built.
func (d *Decoder) decodeHeader(b []byte, p *Profile, refs headerStrings) error {
	for _, x := range []struct {
		name string
		idx  uint64
	}{
		{"drop_frames", refs.dropFrames},
		{"keep_frames", refs.keepFrames},
		{"doc_url", refs.docURL},
	} {
		if _, ok := d.str(x.idx); !ok {
			return d.badString("Profile."+x.name, x.idx)
		}
	}
	var ok bool
	if p.DefaultSampleType, ok = d.str(refs.defaultSampleType); !ok {
		return d.badString("Profile.default_sample_type", refs.defaultSampleType)
	}
	if len(d.comments) > 0 {
		p.Comments = sized(d.reuse, p.Comments, len(d.comments))
		for i, x := range d.comments {
			if p.Comments[i], ok = d.str(x); !ok {
				return d.badString(fmt.Sprintf("Profile.comment[%d]", i), x)
			}
		}
	}
	for _, s := range d.periodTypeSpans {
		if err := d.decodeValueType(b, s, &p.PeriodType, "Profile.period_type"); err != nil {
			return err
		}
	}
	if len(d.sampleTypeSpans) > 0 {
		p.SampleTypes = sized(d.reuse, p.SampleTypes, len(d.sampleTypeSpans))
		for i, s := range d.sampleTypeSpans {
			if err := d.decodeValueType(b, s, &p.SampleTypes[i], "Profile.sample_type"); err != nil {
				return err
			}
		}
	}
	return nil
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

func (d *Decoder) readComments(r *reader, wire int) error {
	switch wire {
	case wireVarint:
		v, err := r.varint()
		if err != nil {
			return err
		}
		d.comments = append(d.comments, v)
	case wireBytes:
		s, err := r.bytesField()
		if err != nil {
			return err
		}
		for pr := newReader(r.b, s); pr.more(); {
			v, err := pr.varint()
			if err != nil {
				return err
			}
			d.comments = append(d.comments, v)
		}
	default:
		return r.wireTypeError("Profile.comment", wire, wireVarint)
	}
	return nil
}

// buildStrings copies the whole string table into a single string and
// slices the entries out of it: one allocation however many entries.
func (d *Decoder) buildStrings(b []byte) error {
	total := 0
	for _, s := range d.strSpans {
		total += s.end - s.start
	}
	var sb strings.Builder
	sb.Grow(total)
	for _, s := range d.strSpans {
		sb.Write(b[s.start:s.end])
	}
	all := sb.String()
	d.strs = slices.Grow(d.strs[:0], len(d.strSpans)+1)
	off := 0
	for _, s := range d.strSpans {
		n := s.end - s.start
		d.strs = append(d.strs, all[off:off+n])
		off += n
	}
	if len(d.strs) == 0 {
		// A profile with no strings at all still has the implicit "" that
		// every unset string index refers to.
		d.strs = append(d.strs, "")
	}
	if d.strs[0] != "" {
		return fmt.Errorf("profile: string table entry 0 is %q, want the empty string", d.strs[0])
	}
	return nil
}

// str resolves a string table index. The index is taken as unsigned so a
// negative int64 index is simply out of range.
func (d *Decoder) str(x uint64) (string, bool) {
	if x < uint64(len(d.strs)) {
		return d.strs[x], true
	}
	return "", false
}

func (d *Decoder) badString(what string, x uint64) error {
	return fmt.Errorf("profile: %s: string index %d out of range (string table has %d entries)", what, int64(x), len(d.strs))
}

func (d *Decoder) decodeValueType(b []byte, s span, vt *ValueType, what string) error {
	var typ, unit uint64
	var haveType, haveUnit bool
	r := newReader(b, s)
	for r.more() {
		field, wire, err := r.key()
		if err != nil {
			return err
		}
		switch field {
		case 1:
			typ, err = r.uvarintField(wire, "ValueType.type")
			haveType = true
		case 2:
			unit, err = r.uvarintField(wire, "ValueType.unit")
			haveUnit = true
		default:
			err = r.skip(wire)
		}
		if err != nil {
			return err
		}
	}
	// Only fields present in this occurrence are set, which gives the
	// protobuf merge semantics for a repeated non-repeated message.
	var ok bool
	if haveType {
		if vt.Type, ok = d.str(typ); !ok {
			return d.badString(what+".type", typ)
		}
	}
	if haveUnit {
		if vt.Unit, ok = d.str(unit); !ok {
			return d.badString(what+".unit", unit)
		}
	}
	return nil
}

func (d *Decoder) decodeMappings(b []byte, p *Profile) error {
	if len(d.mappingSpans) == 0 {
		return d.mappingIDs.build(nil, "mapping")
	}
	p.Mappings = sized(d.reuse, p.Mappings, len(d.mappingSpans))
	d.ids = d.ids[:0]
	for i, s := range d.mappingSpans {
		m := &p.Mappings[i]
		var id, file, buildID uint64
		r := newReader(b, s)
		for r.more() {
			field, wire, err := r.key()
			if err != nil {
				return err
			}
			var v uint64
			switch field {
			case 1:
				id, err = r.uvarintField(wire, "Mapping.id")
			case 2:
				m.Start, err = r.uvarintField(wire, "Mapping.memory_start")
			case 3:
				m.Limit, err = r.uvarintField(wire, "Mapping.memory_limit")
			case 4:
				m.Offset, err = r.uvarintField(wire, "Mapping.file_offset")
			case 5:
				file, err = r.uvarintField(wire, "Mapping.filename")
			case 6:
				buildID, err = r.uvarintField(wire, "Mapping.build_id")
			case 7:
				v, err = r.uvarintField(wire, "Mapping.has_functions")
				m.HasFunctions = v != 0
			case 8:
				v, err = r.uvarintField(wire, "Mapping.has_filenames")
				m.HasFilenames = v != 0
			case 9:
				v, err = r.uvarintField(wire, "Mapping.has_line_numbers")
				m.HasLineNumbers = v != 0
			case 10:
				v, err = r.uvarintField(wire, "Mapping.has_inline_frames")
				m.HasInlineFrames = v != 0
			default:
				err = r.skip(wire)
			}
			if err != nil {
				return err
			}
		}
		var ok bool
		if m.File, ok = d.str(file); !ok {
			return d.badString(fmt.Sprintf("mapping %d filename", id), file)
		}
		if m.BuildID, ok = d.str(buildID); !ok {
			return d.badString(fmt.Sprintf("mapping %d build_id", id), buildID)
		}
		d.ids = append(d.ids, id)
	}
	return d.mappingIDs.build(d.ids, "mapping")
}

func (d *Decoder) decodeFunctions(b []byte, p *Profile) error {
	if len(d.functionSpans) == 0 {
		return d.functionIDs.build(nil, "function")
	}
	p.Functions = sized(d.reuse, p.Functions, len(d.functionSpans))
	d.ids = d.ids[:0]
	for i, s := range d.functionSpans {
		f := &p.Functions[i]
		var id, name, systemName, file uint64
		r := newReader(b, s)
		for r.more() {
			field, wire, err := r.key()
			if err != nil {
				return err
			}
			switch field {
			case 1:
				id, err = r.uvarintField(wire, "Function.id")
			case 2:
				name, err = r.uvarintField(wire, "Function.name")
			case 3:
				systemName, err = r.uvarintField(wire, "Function.system_name")
			case 4:
				file, err = r.uvarintField(wire, "Function.filename")
			case 5:
				var v uint64
				v, err = r.uvarintField(wire, "Function.start_line")
				f.StartLine = int64(v)
			default:
				err = r.skip(wire)
			}
			if err != nil {
				return err
			}
		}
		var ok bool
		if f.Name, ok = d.str(name); !ok {
			return d.badString(fmt.Sprintf("function %d name", id), name)
		}
		if f.SystemName, ok = d.str(systemName); !ok {
			return d.badString(fmt.Sprintf("function %d system_name", id), systemName)
		}
		if f.Filename, ok = d.str(file); !ok {
			return d.badString(fmt.Sprintf("function %d filename", id), file)
		}
		d.ids = append(d.ids, id)
	}
	return d.functionIDs.build(d.ids, "function")
}

func (d *Decoder) decodeLocations(b []byte, p *Profile) error {
	if len(d.locationSpans) == 0 {
		return d.locationIDs.build(nil, "location")
	}
	p.Locations = sized(d.reuse, p.Locations, len(d.locationSpans))
	d.ids = d.ids[:0]
	for i, s := range d.locationSpans {
		loc := &p.Locations[i]
		var id, mappingID, badFunction uint64
		r := newReader(b, s)
		for r.more() {
			field, wire, err := r.key()
			if err != nil {
				return err
			}
			switch field {
			case 1:
				id, err = r.uvarintField(wire, "Location.id")
			case 2:
				mappingID, err = r.uvarintField(wire, "Location.mapping_id")
			case 3:
				loc.Address, err = r.uvarintField(wire, "Location.address")
			case 4:
				var ls span
				if ls, err = r.messageField(wire, "Location.line"); err == nil {
					var fid uint64
					if fid, err = d.decodeLine(b, ls); fid != 0 && badFunction == 0 {
						badFunction = fid
					}
				}
			case 5:
				var v uint64
				v, err = r.uvarintField(wire, "Location.is_folded")
				loc.IsFolded = v != 0
			default:
				err = r.skip(wire)
			}
			if err != nil {
				return err
			}
		}
		if badFunction != 0 {
			return fmt.Errorf("profile: location %d references unknown function %d", id, badFunction)
		}
		loc.Mapping = -1
		if mappingID != 0 {
			mi, ok := d.mappingIDs.lookup(mappingID)
			if !ok {
				return fmt.Errorf("profile: location %d references unknown mapping %d", id, mappingID)
			}
			loc.Mapping = mi
		}
		d.lineEnds = append(d.lineEnds, len(d.lines))
		d.ids = append(d.ids, id)
	}
	if err := d.locationIDs.build(d.ids, "location"); err != nil {
		return err
	}
	lines := owned(d.reuse, d.lines)
	start := 0
	for i := range p.Locations {
		end := d.lineEnds[i]
		p.Locations[i].Lines = subslice(lines, start, end)
		start = end
	}
	return nil
}

// decodeLine appends one Line to d.lines. An unknown function id is
// returned rather than reported, because the location's own id, which the
// error names, may come later in the message.
func (d *Decoder) decodeLine(b []byte, s span) (unknownFunction uint64, err error) {
	var fid uint64
	var ln Line
	r := newReader(b, s)
	for r.more() {
		field, wire, err := r.key()
		if err != nil {
			return 0, err
		}
		var v uint64
		switch field {
		case 1:
			fid, err = r.uvarintField(wire, "Line.function_id")
		case 2:
			v, err = r.uvarintField(wire, "Line.line")
			ln.Line = int64(v)
		case 3:
			v, err = r.uvarintField(wire, "Line.column")
			ln.Column = int64(v)
		default:
			err = r.skip(wire)
		}
		if err != nil {
			return 0, err
		}
	}
	ln.Function = -1
	if fid != 0 {
		fi, ok := d.functionIDs.lookup(fid)
		if !ok {
			return fid, nil
		}
		ln.Function = fi
	}
	d.lines = append(d.lines, ln)
	return 0, nil
}

// Label field numbers.
const (
	fieldLabelKey     = 1
	fieldLabelStr     = 2
	fieldLabelNum     = 3
	fieldLabelNumUnit = 4
)

func (d *Decoder) decodeSamples(b []byte, p *Profile) error {
	if len(d.sampleSpans) == 0 {
		return nil
	}
	p.Samples = sized(d.reuse, p.Samples, len(d.sampleSpans))
	nTypes := len(p.SampleTypes)
	// Only DecodeInto may leave stacks packed: they alias the decoded
	// bytes, which the Decoder reuses.
	deferIDs := d.DeferLocations && d.reuse && d.locationIDs.dense
	for i, s := range d.sampleSpans {
		valStart := len(d.vals)
		locStart := len(d.locs)
		var packed span // location ids left packed
		// Readers are declared before their loop, here and elsewhere:
		// a variable declared in a for statement is copied for every
		// iteration when its address is taken, as reader's methods do.
		r := newReader(b, s)
		for r.more() {
			var field, wire int
			var err error
			if c := b[r.pos]; c < 0x80 && c>>3 != 0 {
				field, wire = int(c>>3), int(c&7)
				r.pos++
			} else if field, wire, err = r.key(); err != nil {
				return err
			}
			switch field {
			case 1: // location_id, packed or not
				switch wire {
				case wireBytes:
					var ps span
					if ps, err = r.bytesField(); err != nil {
						return err
					}
					if deferIDs && packed.end == 0 && len(d.locs) == locStart {
						packed = ps
						break
					}
					if packed, err = d.undefer(b, packed, i); err != nil {
						return err
					}
					if err = d.appendLocationIDs(b, ps, i); err != nil {
						return err
					}
				case wireVarint:
					if packed, err = d.undefer(b, packed, i); err != nil {
						return err
					}
					id, err := r.varint()
					if err != nil {
						return err
					}
					li, ok := d.locationIDs.lookup(id)
					if !ok {
						return fmt.Errorf("profile: sample %d references unknown location %d", i, id)
					}
					d.locs = append(d.locs, li)
				default:
					return r.wireTypeError("Sample.location_id", wire, wireBytes)
				}
			case 2: // value, packed or not
				switch wire {
				case wireBytes:
					var ps span
					if ps, err = r.bytesField(); err != nil {
						return err
					}
					for pos := ps.start; pos < ps.end; {
						var v uint64
						if v, pos, err = uvarintAt(b, pos, ps.end); err != nil {
							return err
						}
						d.vals = append(d.vals, int64(v))
					}
				case wireVarint:
					v, err := r.varint()
					if err != nil {
						return err
					}
					d.vals = append(d.vals, int64(v))
				default:
					return r.wireTypeError("Sample.value", wire, wireBytes)
				}
				// Stop early on garbage rather than buffering it.
				if n := len(d.vals) - valStart; n > nTypes {
					return fmt.Errorf("profile: sample %d has more than %d values, want one per sample type", i, nTypes)
				}
			case 3:
				var ls span
				if ls, err = r.messageField(wire, "Sample.label"); err != nil {
					return err
				}
				if err = d.decodeLabel(b, ls, i); err != nil {
					return err
				}
			default:
				if err = r.skip(wire); err != nil {
					return err
				}
			}
		}
		if n := len(d.vals) - valStart; n != nTypes {
			return fmt.Errorf("profile: sample %d has %d values, want %d (one per sample type)", i, n, nTypes)
		}
		d.sampleEnds = append(d.sampleEnds, sampleEnd{locs: len(d.locs), vals: len(d.vals), labels: len(d.labels), packed: packed})
	}

	locs := owned(d.reuse, d.locs)
	vals := owned(d.reuse, d.vals)
	labels := owned(d.reuse, d.labels)
	var prev sampleEnd
	for i, end := range d.sampleEnds {
		smp := &p.Samples[i]
		smp.Locations = subslice(locs, prev.locs, end.locs)
		smp.Values = subslice(vals, prev.vals, end.vals)
		smp.Labels = subslice(labels, prev.labels, end.labels)
		if end.packed.end > 0 {
			smp.PackedLocations = b[end.packed.start:end.packed.end:end.packed.end]
		}
		prev = end
	}
	return nil
}

// undefer decodes location ids left packed for sample, if any, because the
// sample turned out to have more than one run of them.
func (d *Decoder) undefer(b []byte, packed span, sample int) (span, error) {
	if packed.end == 0 {
		return packed, nil
	}
	return span{}, d.appendLocationIDs(b, packed, sample)
}

// ResolveLocations decodes the stacks that DecodeInto left packed in p's
// samples into their Locations. p must be the profile of the Decoder's last
// DecodeInto. It returns an error, and p holds no valid profile, if a
// sample references a location the profile does not have.
func (d *Decoder) ResolveLocations(p *Profile) error {
	for i := range p.Samples {
		s := &p.Samples[i]
		if s.PackedLocations == nil {
			continue
		}
		start := len(d.locs)
		b := s.PackedLocations
		if err := d.appendLocationIDs(b, span{start: 0, end: len(b)}, i); err != nil {
			return err
		}
		s.Locations = subslice(d.locs, start, len(d.locs))
		s.PackedLocations = nil
	}
	return nil
}

// appendLocationIDs resolves a packed run of location ids into d.locs.
// This is the innermost loop of decoding: see appendDenseIDs.
func (d *Decoder) appendLocationIDs(b []byte, s span, sample int) error {
	n := len(d.locs)
	// Every varint takes at least one byte, which bounds the count.
	locs := slices.Grow(d.locs, s.end-s.start)[:n+s.end-s.start]
	pos, end := s.start, s.end
	for pos < end {
		if d.locationIDs.dense {
			if n, pos = appendDenseIDs(locs, n, b, pos, end, uint64(d.locationIDs.n)); pos == end {
				break
			}
		}
		// An id the fast path does not take.
		id, next, err := uvarintAt(b, pos, end)
		if err != nil {
			return err
		}
		li, ok := d.locationIDs.lookup(id)
		if !ok {
			return fmt.Errorf("profile: sample %d references unknown location %d", sample, id)
		}
		locs[n] = li
		n++
		pos = next
	}
	d.locs = locs[:n]
	return nil
}

// appendDenseIDs stores the indices of the location ids at b[pos:end] from
// locs[n] on, and returns the next n and pos. It takes the runtime's ids,
// numbered 1..nLocs in order so that the index is id-1, of one or two
// bytes (up to 16,383), and stops at the first other one. It calls
// nothing, so that its loop keeps its state in registers.
func appendDenseIDs(locs []int32, n int, b []byte, pos, end int, nLocs uint64) (int, int) {
	for pos < end {
		c := b[pos]
		id, next := uint64(c), pos+1
		if c >= 0x80 {
			if next == end || b[next] >= 0x80 {
				break
			}
			id = uint64(c&0x7f) | uint64(b[next])<<7
			next++
		}
		if id-1 >= nLocs { // id 0 wraps around
			break
		}
		locs[n] = int32(id - 1)
		n++
		pos = next
	}
	return n, pos
}

// decodeLabel appends one Label to d.labels. A label is numeric unless it
// has a string value; a label with neither a string, a number nor a unit is
// kept as a string label with an empty value, which is what runtime/pprof
// writes for pprof.Labels(key, "").
func (d *Decoder) decodeLabel(b []byte, s span, sample int) error {
	var key, str, unit, num uint64
	r := newReader(b, s)
	for r.more() {
		field, wire, err := r.key()
		if err != nil {
			return err
		}
		switch field {
		case fieldLabelKey:
			key, err = r.uvarintField(wire, "Label.key")
		case fieldLabelStr:
			str, err = r.uvarintField(wire, "Label.str")
		case fieldLabelNum:
			num, err = r.uvarintField(wire, "Label.num")
		case fieldLabelNumUnit:
			unit, err = r.uvarintField(wire, "Label.num_unit")
		default:
			err = r.skip(wire)
		}
		if err != nil {
			return err
		}
	}
	var l Label
	var ok bool
	if l.Key, ok = d.str(key); !ok {
		return d.badString(fmt.Sprintf("sample %d label key", sample), key)
	}
	if l.Str, ok = d.str(str); !ok {
		return d.badString(fmt.Sprintf("sample %d label %q str", sample, l.Key), str)
	}
	if l.NumUnit, ok = d.str(unit); !ok {
		return d.badString(fmt.Sprintf("sample %d label %q num_unit", sample, l.Key), unit)
	}
	if str == 0 && (num != 0 || unit != 0) {
		l.IsNum = true
		l.Num = int64(num)
	} else {
		l.NumUnit = ""
	}
	d.labels = append(d.labels, l)
	return nil
}

// sized returns a slice of n zero values: s's backing array when reuse is
// set and it is large enough, a new one otherwise.
func sized[T any](reuse bool, s []T, n int) []T {
	if !reuse || cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// owned returns the contents of a Decoder buffer for the profile: the
// buffer itself when reuse is set, a copy otherwise.
func owned[T any](reuse bool, s []T) []T {
	if reuse {
		return s
	}
	return slices.Clone(s)
}

// subslice returns s[from:to] with its capacity clipped, so that appending
// to one sample's slice cannot overwrite the next sample's data. Empty
// ranges are nil.
func subslice[T any](s []T, from, to int) []T {
	if from == to {
		return nil
	}
	return s[from:to:to]
}

// idIndex maps pprof ids to slice indices. Runtime output numbers ids
// 1..n in order, where the index is id-1 and no table is needed; any other
// numbering falls back to a map.
type idIndex struct {
	dense bool
	n     int
	m     map[uint64]int32
}

func (x *idIndex) build(ids []uint64, kind string) error {
	x.n = len(ids)
	x.dense = true
	for i, id := range ids {
		if id != uint64(i)+1 {
			x.dense = false
			break
		}
	}
	if x.dense {
		return nil
	}
	if x.m == nil {
		x.m = make(map[uint64]int32, len(ids))
	} else {
		clear(x.m)
	}
	for i, id := range ids {
		if id == 0 {
			return fmt.Errorf("profile: %s at index %d has id 0, which is reserved", kind, i)
		}
		if _, dup := x.m[id]; dup {
			return fmt.Errorf("profile: duplicate %s id %d", kind, id)
		}
		x.m[id] = int32(i)
	}
	return nil
}

func (x *idIndex) lookup(id uint64) (int32, bool) {
	if x.dense {
		// id 0 wraps around and fails the range check.
		if id-1 < uint64(x.n) {
			return int32(id - 1), true
		}
		return -1, false
	}
	i, ok := x.m[id]
	return i, ok
}
