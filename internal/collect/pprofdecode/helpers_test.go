package pprofdecode

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	gpprof "github.com/google/pprof/profile"
)

// comparePprof checks got field by field against google/pprof's decoding of
// the same bytes. Both keep the element order of the input, so indices line
// up.
func comparePprof(t *testing.T, got *Profile, want *gpprof.Profile) {
	t.Helper()
	if err := got.Validate(); err != nil {
		t.Fatalf("decoded profile is invalid: %v", err)
	}
	if len(got.SampleTypes) != len(want.SampleType) {
		t.Fatalf("%d sample types, want %d", len(got.SampleTypes), len(want.SampleType))
	}
	for i, st := range want.SampleType {
		if g := got.SampleTypes[i]; g.Type != st.Type || g.Unit != st.Unit {
			t.Errorf("sample type %d = %s/%s, want %s/%s", i, g.Type, g.Unit, st.Type, st.Unit)
		}
	}
	if want.PeriodType != nil && (got.PeriodType.Type != want.PeriodType.Type || got.PeriodType.Unit != want.PeriodType.Unit) {
		t.Errorf("period type = %+v, want %+v", got.PeriodType, *want.PeriodType)
	}
	if got.Period != want.Period || got.TimeNanos != want.TimeNanos || got.DurationNanos != want.DurationNanos {
		t.Errorf("period/time/duration = %d/%d/%d, want %d/%d/%d", got.Period, got.TimeNanos, got.DurationNanos, want.Period, want.TimeNanos, want.DurationNanos)
	}
	if got.DefaultSampleType != want.DefaultSampleType {
		t.Errorf("default sample type = %q, want %q", got.DefaultSampleType, want.DefaultSampleType)
	}
	if !slices.Equal(got.Comments, want.Comments) {
		t.Errorf("comments = %q, want %q", got.Comments, want.Comments)
	}

	if len(got.Mappings) != len(want.Mapping) {
		t.Fatalf("%d mappings, want %d", len(got.Mappings), len(want.Mapping))
	}
	mappingIndex := make(map[*gpprof.Mapping]int32)
	for i, wm := range want.Mapping {
		mappingIndex[wm] = int32(i)
		gm := got.Mappings[i]
		wantM := Mapping{
			Start: wm.Start, Limit: wm.Limit, Offset: wm.Offset, File: wm.File, BuildID: wm.BuildID,
			HasFunctions: wm.HasFunctions, HasFilenames: wm.HasFilenames,
			HasLineNumbers: wm.HasLineNumbers, HasInlineFrames: wm.HasInlineFrames,
		}
		if gm != wantM {
			t.Errorf("mapping %d = %+v, want %+v", i, gm, wantM)
		}
	}

	if len(got.Functions) != len(want.Function) {
		t.Fatalf("%d functions, want %d", len(got.Functions), len(want.Function))
	}
	for i, wf := range want.Function {
		wantF := Function{Name: wf.Name, SystemName: wf.SystemName, Filename: wf.Filename, StartLine: wf.StartLine}
		if got.Functions[i] != wantF {
			t.Errorf("function %d = %+v, want %+v", i, got.Functions[i], wantF)
		}
	}

	if len(got.Locations) != len(want.Location) {
		t.Fatalf("%d locations, want %d", len(got.Locations), len(want.Location))
	}
	for i, wl := range want.Location {
		gl := got.Locations[i]
		wantMapping := int32(-1)
		if wl.Mapping != nil {
			wantMapping = mappingIndex[wl.Mapping]
		}
		if gl.Address != wl.Address || gl.IsFolded != wl.IsFolded || gl.Mapping != wantMapping {
			t.Errorf("location %d = addr %#x folded %v mapping %d, want %#x %v %d", i, gl.Address, gl.IsFolded, gl.Mapping, wl.Address, wl.IsFolded, wantMapping)
		}
		if g, w := frames(got, gl), wantFrames(wl); !slices.Equal(g, w) {
			t.Errorf("location %d frames = %q, want %q", i, g, w)
		}
	}

	if len(got.Samples) != len(want.Sample) {
		t.Fatalf("%d samples, want %d", len(got.Samples), len(want.Sample))
	}
	for i, ws := range want.Sample {
		gs := got.Samples[i]
		if !slices.Equal(gs.Values, ws.Value) {
			t.Errorf("sample %d values = %v, want %v", i, gs.Values, ws.Value)
		}
		var g, w []string
		for _, li := range gs.Locations {
			g = append(g, frames(got, got.Locations[li])...)
		}
		for _, wl := range ws.Location {
			w = append(w, wantFrames(wl)...)
		}
		if !slices.Equal(g, w) {
			t.Errorf("sample %d stack = %q, want %q", i, g, w)
		}
		if g, w := labelStrings(gs.Labels), wantLabelStrings(ws); !slices.Equal(g, w) {
			t.Errorf("sample %d labels = %q, want %q", i, g, w)
		}
	}
}

// frames renders a location's lines, innermost first, as "func file:line:col".
func frames(p *Profile, loc Location) []string {
	var out []string
	for _, ln := range loc.Lines {
		name, file := "?", "?"
		if ln.Function >= 0 {
			f := p.Functions[ln.Function]
			name, file = f.Name, f.Filename
		}
		out = append(out, fmt.Sprintf("%s %s:%d:%d", name, file, ln.Line, ln.Column))
	}
	return out
}

func wantFrames(loc *gpprof.Location) []string {
	var out []string
	for _, ln := range loc.Line {
		name, file := "?", "?"
		if ln.Function != nil {
			name, file = ln.Function.Name, ln.Function.Filename
		}
		out = append(out, fmt.Sprintf("%s %s:%d:%d", name, file, ln.Line, ln.Column))
	}
	return out
}

// labelStrings renders labels in a canonical sorted form; google/pprof keeps
// them in maps, so order is the only thing that cannot be compared.
func labelStrings(ls []Label) []string {
	var out []string
	for _, l := range ls {
		if l.IsNum {
			out = append(out, fmt.Sprintf("%s=#%d[%s]", l.Key, l.Num, l.NumUnit))
		} else {
			out = append(out, fmt.Sprintf("%s=%q", l.Key, l.Str))
		}
	}
	slices.Sort(out)
	return out
}

func wantLabelStrings(s *gpprof.Sample) []string {
	var out []string
	for k, vs := range s.Label {
		for _, v := range vs {
			out = append(out, fmt.Sprintf("%s=%q", k, v))
		}
	}
	for k, ns := range s.NumLabel {
		units := s.NumUnit[k]
		for i, n := range ns {
			unit := ""
			if i < len(units) {
				unit = units[i]
			}
			out = append(out, fmt.Sprintf("%s=#%d[%s]", k, n, unit))
		}
	}
	slices.Sort(out)
	return out
}

// render prints a profile in a stable text form for golden files.
func render(p *Profile) string {
	var b strings.Builder
	fmt.Fprintf(&b, "sample_types:")
	for _, st := range p.SampleTypes {
		fmt.Fprintf(&b, " %s/%s", st.Type, st.Unit)
	}
	fmt.Fprintf(&b, "\ndefault_sample_type: %q\nperiod: %d %s/%s\ntime_nanos: %d\nduration_nanos: %d\ncomments: %q\n",
		p.DefaultSampleType, p.Period, p.PeriodType.Type, p.PeriodType.Unit, p.TimeNanos, p.DurationNanos, p.Comments)
	fmt.Fprintf(&b, "mappings:\n")
	for i, m := range p.Mappings {
		fmt.Fprintf(&b, "  %d: %#x-%#x offset=%#x file=%q build_id=%q functions=%v filenames=%v lines=%v inline=%v\n",
			i, m.Start, m.Limit, m.Offset, m.File, m.BuildID, m.HasFunctions, m.HasFilenames, m.HasLineNumbers, m.HasInlineFrames)
	}
	fmt.Fprintf(&b, "functions:\n")
	for i, f := range p.Functions {
		fmt.Fprintf(&b, "  %d: %s system=%s file=%s start=%d\n", i, f.Name, f.SystemName, f.Filename, f.StartLine)
	}
	fmt.Fprintf(&b, "locations:\n")
	for i, l := range p.Locations {
		fmt.Fprintf(&b, "  %d: mapping=%d addr=%#x folded=%v\n", i, l.Mapping, l.Address, l.IsFolded)
		for _, ln := range l.Lines {
			fmt.Fprintf(&b, "    function=%d line=%d column=%d\n", ln.Function, ln.Line, ln.Column)
		}
	}
	fmt.Fprintf(&b, "samples:\n")
	for i, s := range p.Samples {
		fmt.Fprintf(&b, "  %d: values=%v locations=%v\n", i, s.Values, s.Locations)
		for _, l := range s.Labels {
			if l.IsNum {
				fmt.Fprintf(&b, "    label %s=%d unit=%q\n", l.Key, l.Num, l.NumUnit)
			} else {
				fmt.Fprintf(&b, "    label %s=%q\n", l.Key, l.Str)
			}
		}
	}
	return b.String()
}

// pb builds protobuf wire bytes by hand for inputs that runtime/pprof never
// writes: malformed ones, sparse ids, unpacked repeated fields.
type pb []byte

func (b pb) key(field, wire int) pb { return binary.AppendUvarint(b, uint64(field)<<3|uint64(wire)) }

func (b pb) uint(field int, v uint64) pb { return binary.AppendUvarint(b.key(field, wireVarint), v) }

func (b pb) int(field int, v int64) pb { return b.uint(field, uint64(v)) }

func (b pb) bytes(field int, data []byte) pb {
	b = binary.AppendUvarint(b.key(field, wireBytes), uint64(len(data)))
	return append(b, data...)
}

func (b pb) msg(field int, m pb) pb { return b.bytes(field, m) }

func (b pb) packed(field int, vs ...int64) pb {
	var payload []byte
	for _, v := range vs {
		payload = binary.AppendUvarint(payload, uint64(v))
	}
	return b.bytes(field, payload)
}

func (b pb) strings(ss ...string) pb {
	for _, s := range ss {
		b = b.bytes(fieldStringTable, []byte(s))
	}
	return b
}

func gzipBytes(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
