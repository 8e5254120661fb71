package splunk

import (
	"errors"

	pprof "github.com/google/pprof/profile"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/pprofotel/profiler/internal/validutf8"
)

// Field numbers of profile.proto (github.com/google/pprof/proto/profile.proto).
const (
	fieldProfileSampleType        = 1
	fieldProfileSample            = 2
	fieldProfileMapping           = 3
	fieldProfileLocation          = 4
	fieldProfileFunction          = 5
	fieldProfileStringTable       = 6
	fieldProfileTimeNanos         = 9
	fieldProfileDurationNanos     = 10
	fieldProfilePeriodType        = 11
	fieldProfilePeriod            = 12
	fieldProfileDefaultSampleType = 14

	fieldValueTypeType = 1
	fieldValueTypeUnit = 2

	fieldSampleLocationID = 1
	fieldSampleValue      = 2
	fieldSampleLabel      = 3

	fieldLabelKey     = 1
	fieldLabelStr     = 2
	fieldLabelNum     = 3
	fieldLabelNumUnit = 4

	fieldMappingID              = 1
	fieldMappingMemoryStart     = 2
	fieldMappingMemoryLimit     = 3
	fieldMappingFileOffset      = 4
	fieldMappingFilename        = 5
	fieldMappingBuildID         = 6
	fieldMappingHasFunctions    = 7
	fieldMappingHasFilenames    = 8
	fieldMappingHasLineNumbers  = 9
	fieldMappingHasInlineFrames = 10

	fieldLocationID        = 1
	fieldLocationMappingID = 2
	fieldLocationAddress   = 3
	fieldLocationLine      = 4
	fieldLocationIsFolded  = 5

	fieldLineFunctionID = 1
	fieldLineLine       = 2
	fieldLineColumn     = 3

	fieldFunctionID         = 1
	fieldFunctionName       = 2
	fieldFunctionSystemName = 3
	fieldFunctionFilename   = 4
	fieldFunctionStartLine  = 5
)

// pprofWriter writes one profile.proto message. It copies into its output
// only the locations, functions and mappings of the samples it was given,
// numbered from 1 in the order the samples first use them, so that stacks
// the window did not report do not travel.
type pprofWriter struct {
	out []byte

	strings map[string]int64
	table   []string
	// repairs counts the strings that were not valid UTF-8.
	repairs validutf8.Repairs

	// New ids, 1-based, of the source's locations, functions and mappings
	// in use.
	locationIDs map[*pprof.Location]uint64
	functionIDs map[*pprof.Function]uint64
	mappingIDs  map[*pprof.Mapping]uint64
	// The source's objects in the order their ids were given.
	locations []*pprof.Location
	functions []*pprof.Function
	mappings  []*pprof.Mapping

	scratch []byte
	packed  []byte
}

func newPprofWriter() *pprofWriter {
	return &pprofWriter{
		strings:     map[string]int64{"": 0},
		table:       []string{""},
		locationIDs: make(map[*pprof.Location]uint64),
		functionIDs: make(map[*pprof.Function]uint64),
		mappingIDs:  make(map[*pprof.Mapping]uint64),
	}
}

// str returns the string table index of s, adding it if needed. A string
// that is not valid UTF-8 is added repaired, under the index of its
// repaired form, as the OTLP encoding's dictionary does: profile.proto's
// strings are proto3 strings, which a strict decoder refuses otherwise.
func (w *pprofWriter) str(s string) int64 {
	if i, ok := w.strings[s]; ok {
		return i
	}
	v := w.repairs.String(s)
	if v != s {
		if i, ok := w.strings[v]; ok {
			w.strings[s] = i
			return i
		}
		w.strings[v] = int64(len(w.table))
	}
	i := int64(len(w.table))
	w.strings[s] = i
	w.table = append(w.table, v)
	return i
}

// valueType appends a ValueType field with the given number.
func (w *pprofWriter) valueType(field protowire.Number, vt pprof.ValueType) {
	var m []byte
	m = appendVarintField(m, fieldValueTypeType, uint64(w.str(vt.Type)))
	m = appendVarintField(m, fieldValueTypeUnit, uint64(w.str(vt.Unit)))
	w.out = protowire.AppendTag(w.out, field, protowire.BytesType)
	w.out = protowire.AppendBytes(w.out, m)
}

// useStack gives ids to the locations of s, and to their functions and
// mappings, that have none yet. It fails on a missing location, which no
// profile of package pprofconv has.
func (w *pprofWriter) useStack(s *pprof.Sample) error {
	for _, loc := range s.Location {
		if loc == nil {
			return errors.New("sample refers to a nil location")
		}
		if w.locationIDs[loc] != 0 {
			continue
		}
		w.locations = append(w.locations, loc)
		w.locationIDs[loc] = uint64(len(w.locations))
		if m := loc.Mapping; m != nil && w.mappingIDs[m] == 0 {
			w.mappings = append(w.mappings, m)
			w.mappingIDs[m] = uint64(len(w.mappings))
		}
		for _, ln := range loc.Line {
			if f := ln.Function; f != nil && w.functionIDs[f] == 0 {
				w.functions = append(w.functions, f)
				w.functionIDs[f] = uint64(len(w.functions))
			}
		}
	}
	return nil
}

// label is one label of an output sample.
type label struct {
	key, str string
	num      int64
	numUnit  string
	isNum    bool
}

// encodeSample returns the Sample message of s with the given values and
// labels. The result is valid until the next call.
func (w *pprofWriter) encodeSample(s *pprof.Sample, values []int64, labels []label) []byte {
	m := w.scratch[:0]
	w.packed = w.packed[:0]
	for _, loc := range s.Location {
		w.packed = protowire.AppendVarint(w.packed, w.locationIDs[loc])
	}
	m = appendPacked(m, fieldSampleLocationID, w.packed)
	w.packed = w.packed[:0]
	for _, v := range values {
		w.packed = protowire.AppendVarint(w.packed, uint64(v))
	}
	m = appendPacked(m, fieldSampleValue, w.packed)
	for _, l := range labels {
		var lm []byte
		lm = appendVarintField(lm, fieldLabelKey, uint64(w.str(l.key)))
		if l.isNum {
			lm = appendVarintField(lm, fieldLabelNum, uint64(l.num))
			lm = appendVarintField(lm, fieldLabelNumUnit, uint64(w.str(l.numUnit)))
		} else {
			lm = appendVarintField(lm, fieldLabelStr, uint64(w.str(l.str)))
		}
		m = protowire.AppendTag(m, fieldSampleLabel, protowire.BytesType)
		m = protowire.AppendBytes(m, lm)
	}
	w.scratch = m
	return m
}

// appendSample appends an encoded Sample message to the profile.
func (w *pprofWriter) appendSample(msg []byte) {
	w.out = protowire.AppendTag(w.out, fieldProfileSample, protowire.BytesType)
	w.out = protowire.AppendBytes(w.out, msg)
}

// finish appends the mappings, locations and functions in use, the given
// header fields and the string table, and returns the profile.
func (w *pprofWriter) finish(h header) []byte {
	for _, m := range w.mappings {
		var b []byte
		b = appendVarintField(b, fieldMappingID, w.mappingIDs[m])
		b = appendVarintField(b, fieldMappingMemoryStart, m.Start)
		b = appendVarintField(b, fieldMappingMemoryLimit, m.Limit)
		b = appendVarintField(b, fieldMappingFileOffset, m.Offset)
		b = appendVarintField(b, fieldMappingFilename, uint64(w.str(m.File)))
		b = appendVarintField(b, fieldMappingBuildID, uint64(w.str(m.BuildID)))
		b = appendBoolField(b, fieldMappingHasFunctions, m.HasFunctions)
		b = appendBoolField(b, fieldMappingHasFilenames, m.HasFilenames)
		b = appendBoolField(b, fieldMappingHasLineNumbers, m.HasLineNumbers)
		b = appendBoolField(b, fieldMappingHasInlineFrames, m.HasInlineFrames)
		w.out = protowire.AppendTag(w.out, fieldProfileMapping, protowire.BytesType)
		w.out = protowire.AppendBytes(w.out, b)
	}
	for _, loc := range w.locations {
		var b []byte
		b = appendVarintField(b, fieldLocationID, w.locationIDs[loc])
		if loc.Mapping != nil {
			b = appendVarintField(b, fieldLocationMappingID, w.mappingIDs[loc.Mapping])
		}
		b = appendVarintField(b, fieldLocationAddress, loc.Address)
		for _, ln := range loc.Line {
			var lb []byte
			if ln.Function != nil {
				lb = appendVarintField(lb, fieldLineFunctionID, w.functionIDs[ln.Function])
			}
			lb = appendVarintField(lb, fieldLineLine, uint64(ln.Line))
			lb = appendVarintField(lb, fieldLineColumn, uint64(ln.Column))
			b = protowire.AppendTag(b, fieldLocationLine, protowire.BytesType)
			b = protowire.AppendBytes(b, lb)
		}
		b = appendBoolField(b, fieldLocationIsFolded, loc.IsFolded)
		w.out = protowire.AppendTag(w.out, fieldProfileLocation, protowire.BytesType)
		w.out = protowire.AppendBytes(w.out, b)
	}
	for _, f := range w.functions {
		var b []byte
		b = appendVarintField(b, fieldFunctionID, w.functionIDs[f])
		b = appendVarintField(b, fieldFunctionName, uint64(w.str(f.Name)))
		b = appendVarintField(b, fieldFunctionSystemName, uint64(w.str(f.SystemName)))
		b = appendVarintField(b, fieldFunctionFilename, uint64(w.str(f.Filename)))
		b = appendVarintField(b, fieldFunctionStartLine, uint64(f.StartLine))
		w.out = protowire.AppendTag(w.out, fieldProfileFunction, protowire.BytesType)
		w.out = protowire.AppendBytes(w.out, b)
	}
	w.out = appendVarintField(w.out, fieldProfileTimeNanos, uint64(h.timeNanos))
	w.out = appendVarintField(w.out, fieldProfileDurationNanos, uint64(h.durationNanos))
	w.valueType(fieldProfilePeriodType, h.periodType)
	w.out = appendVarintField(w.out, fieldProfilePeriod, uint64(h.period))
	if h.defaultSampleType != "" {
		w.out = appendVarintField(w.out, fieldProfileDefaultSampleType, uint64(w.str(h.defaultSampleType)))
	}
	// The string table goes last: every field above may have added to it.
	for _, s := range w.table {
		w.out = protowire.AppendTag(w.out, fieldProfileStringTable, protowire.BytesType)
		w.out = protowire.AppendString(w.out, s)
	}
	return w.out
}

// header holds the profile-level fields written by finish.
type header struct {
	timeNanos, durationNanos int64
	periodType               pprof.ValueType
	period                   int64
	defaultSampleType        string
}

// appendVarintField appends a varint field, leaving out zero as proto3 does.
func appendVarintField(b []byte, field protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, field, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendBoolField(b []byte, field protowire.Number, v bool) []byte {
	if !v {
		return b
	}
	return appendVarintField(b, field, 1)
}

// appendPacked appends a packed repeated varint field whose payload is
// already encoded.
func appendPacked(b []byte, field protowire.Number, payload []byte) []byte {
	if len(payload) == 0 {
		return b
	}
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendBytes(b, payload)
}
