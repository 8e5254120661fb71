package benchmark

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"runtime/pprof"
	"slices"
	"time"

	gprof "github.com/google/pprof/profile"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/internal/export"
)

// This module's import path lies under github.com/pprofotel/profiler, so
// the go command lets it import the SDK's internal packages: the pipeline
// measured below is the profiler's own code, not a copy.

// snapshot returns what the runtime writes for each named profile now.
func snapshot(names []string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(names))
	for _, name := range names {
		var buf bytes.Buffer
		if err := pprof.Lookup(name).WriteTo(&buf, 0); err != nil {
			return nil, err
		}
		out[name] = buf.Bytes()
	}
	return out, nil
}

// ours is the profiler's per-window work on profiles already written by the
// runtime: decode, delta, OTLP request with its dictionary, protobuf
// serialisation and gzip, as the OTLP exporters send it.
type ours struct {
	names []string
	data  map[string][]byte
	c     *collect.Collector
	b     *otlp.Builder
	now   time.Time
	req   *collectorpb.ExportProfilesServiceRequest

	raw []byte
	gz  export.Gzip
}

func newOurs(names []string, baseline map[string][]byte) (*ours, error) {
	p := &ours{names: names, data: baseline, now: time.Unix(1700000000, 0)}
	var err error
	p.c, err = collect.New(collect.Config{
		Profiles: names,
		Source: func(name string, w io.Writer) error {
			_, err := w.Write(p.data[name])
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	p.b = otlp.NewBuilder(&resourcepb.Resource{}, &commonpb.InstrumentationScope{Name: "bench"})
	p.c.Start(p.now)
	return p, nil
}

// window turns data, the runtime's output at the end of a window, into the
// gzipped request, and returns its size.
func (p *ours) window(data map[string][]byte) (int, error) {
	p.data = data
	p.now = p.now.Add(15 * time.Second)
	w := p.c.Collect(p.now)
	inputs := make([]otlp.Input, len(w.Profiles))
	for i, prof := range w.Profiles {
		inputs[i] = otlp.Input{Name: prof.Name, Profile: prof.Data}
	}
	p.req = p.b.Build(w.Start, w.End, inputs)
	var err error
	if p.raw, err = otlp.AppendRequest(slices.Grow(p.raw[:0], len(p.raw)+len(p.raw)/8), p.req); err != nil {
		return 0, err
	}
	// The OTLP exporters' own compression, at the level both HTTP and
	// gRPC use, into a new body as the HTTP exporter's: its transport may
	// still read a body after the request returns.
	out := p.gz.Append(nil, p.raw)
	return len(out), nil
}

// naive is what the profiler would be built from off-the-shelf parts:
// github.com/google/pprof/profile to parse, ScaleN(-1) and Merge to take
// the delta (the approach dd-trace-go used before fastdelta), then a direct
// conversion to the OTLP messages with map-based deduplication,
// serialisation by protobuf-go (the same bytes as ours), and gzip.
type naive struct {
	names []string
	prev  map[string]*gprof.Profile
	last  []*gprof.Profile // deltas of the last window, for tests
}

func newNaive(names []string, baseline map[string][]byte) (*naive, error) {
	n := &naive{names: names, prev: make(map[string]*gprof.Profile)}
	for _, name := range names {
		p, err := gprof.ParseData(baseline[name])
		if err != nil {
			return nil, err
		}
		n.prev[name] = p
	}
	return n, nil
}

func (n *naive) window(data map[string][]byte) (int, error) {
	var deltas []*gprof.Profile
	for _, name := range n.names {
		cur, err := gprof.ParseData(data[name])
		if err != nil {
			return 0, err
		}
		prev := n.prev[name].Copy()
		ratios := make([]float64, len(prev.SampleType))
		for i, st := range prev.SampleType {
			// inuse_* of the heap profile is a snapshot, not a total.
			if st.Type == "inuse_objects" || st.Type == "inuse_space" {
				ratios[i] = 0
			} else {
				ratios[i] = -1
			}
		}
		if err := prev.ScaleN(ratios); err != nil {
			return 0, err
		}
		delta, err := gprof.Merge([]*gprof.Profile{cur, prev})
		if err != nil {
			return 0, err
		}
		n.prev[name] = cur
		deltas = append(deltas, delta)
	}
	n.last = deltas
	req := naiveOTLP(n.names, deltas)
	raw, err := proto.Marshal(req)
	if err != nil {
		return 0, err
	}
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	if _, err := zw.Write(raw); err != nil {
		return 0, err
	}
	if err := zw.Close(); err != nil {
		return 0, err
	}
	return out.Len(), nil
}

// naiveOTLP converts profiles to one request with a shared dictionary, the
// straightforward way: maps keyed by pprof pointers, by strings and by the
// printed location indices of a stack.
func naiveOTLP(names []string, profs []*gprof.Profile) *collectorpb.ExportProfilesServiceRequest {
	dict := &profilespb.ProfilesDictionary{
		MappingTable:   []*profilespb.Mapping{{}},
		LocationTable:  []*profilespb.Location{{}},
		FunctionTable:  []*profilespb.Function{{}},
		LinkTable:      []*profilespb.Link{{}},
		StringTable:    []string{""},
		AttributeTable: []*profilespb.KeyValueAndUnit{{}},
		StackTable:     []*profilespb.Stack{{}},
	}
	strs := map[string]int32{"": 0}
	str := func(s string) int32 {
		if i, ok := strs[s]; ok {
			return i
		}
		i := int32(len(dict.StringTable))
		dict.StringTable = append(dict.StringTable, s)
		strs[s] = i
		return i
	}
	stacks := map[string]int32{}
	attrs := map[string]int32{}
	rp := &profilespb.ResourceProfiles{Resource: &resourcepb.Resource{}}
	for pi, p := range profs {
		mappings := map[*gprof.Mapping]int32{}
		functions := map[*gprof.Function]int32{}
		locations := map[*gprof.Location]int32{}
		for _, m := range p.Mapping {
			mappings[m] = int32(len(dict.MappingTable))
			dict.MappingTable = append(dict.MappingTable, &profilespb.Mapping{
				MemoryStart: m.Start, MemoryLimit: m.Limit, FileOffset: m.Offset, FilenameStrindex: str(m.File),
			})
		}
		for _, f := range p.Function {
			functions[f] = int32(len(dict.FunctionTable))
			dict.FunctionTable = append(dict.FunctionTable, &profilespb.Function{
				NameStrindex: str(f.Name), SystemNameStrindex: str(f.SystemName), FilenameStrindex: str(f.Filename), StartLine: f.StartLine,
			})
		}
		for _, l := range p.Location {
			loc := &profilespb.Location{Address: l.Address}
			if l.Mapping != nil {
				loc.MappingIndex = mappings[l.Mapping]
			}
			for _, ln := range l.Line {
				loc.Lines = append(loc.Lines, &profilespb.Line{FunctionIndex: functions[ln.Function], Line: ln.Line, Column: ln.Column})
			}
			locations[l] = int32(len(dict.LocationTable))
			dict.LocationTable = append(dict.LocationTable, loc)
		}
		sp := &profilespb.ScopeProfiles{Scope: &commonpb.InstrumentationScope{Name: names[pi]}}
		for t, st := range p.SampleType {
			prof := &profilespb.Profile{
				SampleType:   &profilespb.ValueType{TypeStrindex: str(st.Type), UnitStrindex: str(st.Unit)},
				TimeUnixNano: uint64(p.TimeNanos),
				DurationNano: uint64(p.DurationNanos),
				Period:       p.Period,
				ProfileId:    make([]byte, 16),
			}
			if p.PeriodType != nil {
				prof.PeriodType = &profilespb.ValueType{TypeStrindex: str(p.PeriodType.Type), UnitStrindex: str(p.PeriodType.Unit)}
			}
			for _, s := range p.Sample {
				if s.Value[t] == 0 {
					continue
				}
				idx := make([]int32, len(s.Location))
				for i, l := range s.Location {
					idx[i] = locations[l]
				}
				key := fmt.Sprint(idx)
				si, ok := stacks[key]
				if !ok {
					si = int32(len(dict.StackTable))
					dict.StackTable = append(dict.StackTable, &profilespb.Stack{LocationIndices: idx})
					stacks[key] = si
				}
				smp := &profilespb.Sample{StackIndex: si, Values: []int64{s.Value[t]}}
				for k, vs := range s.Label {
					for _, v := range vs {
						ak := k + "=" + v
						ai, ok := attrs[ak]
						if !ok {
							ai = int32(len(dict.AttributeTable))
							dict.AttributeTable = append(dict.AttributeTable, &profilespb.KeyValueAndUnit{
								KeyStrindex: str(k), Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}},
							})
							attrs[ak] = ai
						}
						smp.AttributeIndices = append(smp.AttributeIndices, ai)
					}
				}
				prof.Samples = append(prof.Samples, smp)
			}
			sp.Profiles = append(sp.Profiles, prof)
		}
		rp.ScopeProfiles = append(rp.ScopeProfiles, sp)
	}
	return &collectorpb.ExportProfilesServiceRequest{ResourceProfiles: []*profilespb.ResourceProfiles{rp}, Dictionary: dict}
}
