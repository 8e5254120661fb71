package splunk

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	pprof "github.com/google/pprof/profile"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	profilespb "go.opentelemetry.io/proto/otlp/profiles/v1development"
)

// The instrumentation scope the conventions prescribe for profiling logs.
const (
	ScopeName    = "otel.profiling"
	ScopeVersion = "0.1.0"
)

// Values of the profiling.data.type attribute.
const (
	DataTypeCPU        = "cpu"
	DataTypeAllocation = "allocation"
)

// Log record attributes.
const (
	attrSourceType = "com.splunk.sourcetype"
	attrDataType   = "profiling.data.type"
	attrDataFormat = "profiling.data.format"
	attrFrameCount = "profiling.data.total.frame.count"

	sourceType = "otel.profiling"
	dataFormat = "pprof-gzip-base64"
)

// Labels the conventions define on the samples inside the pprof body.
const (
	labelEventTime      = "source.event.time"
	labelEventPeriod    = "source.event.period"
	labelStackTruncated = "thread.stack.truncated"
)

// allocationSampleType is the single value of an allocation sample. The
// name is the one Splunk's Java profiler gives the same value.
var allocationSampleType = pprof.ValueType{Type: "allocationSize", Unit: "bytes"}

// The runtime profiles the records are made from, as the OTLP request
// names them (package pprofconv).
const (
	profileCPU  = "cpu"
	profileHeap = "heap"
)

// maxCPUCopies bounds the samples a cpu record writes by copying a stack
// once per time it was seen: a million, ten times what 64 busy cores give
// in a minute at 100 Hz. A stack seen more often than what is left of the
// bound is written once with its count, as the runtime aggregates it, so
// that a request built elsewhere with a count of 2^60 costs no more than a
// real one.
const maxCPUCopies = 1 << 20

// cpuStackDepth is the most frames the Go runtime records for a CPU
// profile sample (runtime.maxCPUProfStack); GODEBUG=profstackdepth does not
// apply to the CPU profiler.
const cpuStackDepth = 64

// DefaultMemoryStackDepth is the most frames the Go runtime records for a
// heap profile sample unless GODEBUG=profstackdepth says otherwise.
const DefaultMemoryStackDepth = 128

// Converter reads the runtime profiles named in profiles out of req into
// pprof profiles, by name; source names req in errors. Package
// exporters/splunk gives pprofconv's conversion, the project's one
// conversion from OTLP, which this stage cannot import (it is public).
type Converter func(req *collectorpb.ExportProfilesServiceRequest, source string, profiles []string) (map[string]*pprof.Profile, error)

// EncodeOptions selects how Encode reads a request.
type EncodeOptions struct {
	// Convert reads the request back into pprof. It must be set.
	Convert Converter
	// MemoryStackDepth is the runtime's stack depth limit for heap profile
	// samples (GODEBUG=profstackdepth): a stack that deep is marked
	// truncated. Zero means DefaultMemoryStackDepth.
	MemoryStackDepth int
}

// Encode turns the OTLP profiles request of one window, as the profiler
// builds it, into an OTLP logs request in the format of Splunk's profiling
// conventions: for each ResourceProfiles, one ResourceLogs with its
// resource, one scope otel.profiling 0.1.0, and one LogRecord per data
// type: cpu from the window's CPU profile and allocation from the heap
// profile's alloc_space, when the request holds them. Other profiles are
// left out. A data type with no sample has no record; when no record
// remains Encode returns nil and no error, and there is nothing to send.
//
// The profiles are read back into pprof by opts.Convert, which refuses an
// index outside the dictionary with an error naming it. The strings of the pprof bodies are
// made valid UTF-8 as they enter a body's string table (see package
// validutf8): a request the profiler built has valid strings already, one
// built elsewhere may not. The resources are sent as they are.
//
// See the package documentation for the layout of the records and of the
// pprof data in their bodies.
func Encode(req *collectorpb.ExportProfilesServiceRequest, opts EncodeOptions) (*collogspb.ExportLogsServiceRequest, error) {
	memDepth := opts.MemoryStackDepth
	if memDepth <= 0 {
		memDepth = DefaultMemoryStackDepth
	}
	if opts.Convert == nil {
		return nil, errors.New("splunk: EncodeOptions.Convert is not set")
	}
	var out []*logspb.ResourceLogs
	for i, rp := range req.GetResourceProfiles() {
		// One resource at a time: Convert merges what it is given.
		one := &collectorpb.ExportProfilesServiceRequest{
			Dictionary:       req.GetDictionary(),
			ResourceProfiles: []*profilespb.ResourceProfiles{rp},
		}
		profiles, err := opts.Convert(one, fmt.Sprintf("resource_profiles[%d]", i), []string{profileCPU, profileHeap})
		if err != nil {
			return nil, fmt.Errorf("splunk: %w", err)
		}
		records, err := encodeResource(profiles, memDepth)
		if err != nil {
			return nil, fmt.Errorf("splunk: resource_profiles[%d]: %w", i, err)
		}
		if len(records) == 0 {
			continue
		}
		out = append(out, &logspb.ResourceLogs{
			Resource: rp.GetResource(),
			ScopeLogs: []*logspb.ScopeLogs{{
				Scope:      &commonpb.InstrumentationScope{Name: ScopeName, Version: ScopeVersion},
				LogRecords: records,
			}},
		})
	}
	if len(out) == 0 {
		return nil, nil
	}
	return &collogspb.ExportLogsServiceRequest{ResourceLogs: out}, nil
}

// encodeResource builds the records of one resource's profiles, by name.
func encodeResource(profiles map[string]*pprof.Profile, memDepth int) ([]*logspb.LogRecord, error) {
	e := encoder{memDepth: memDepth}
	// The records are observed when the profiler read the runtime's data:
	// at the end of the window, or of the CPU profile's part of it when
	// that is all the request holds.
	for _, p := range profiles {
		e.observed = max(e.observed, p.TimeNanos+p.DurationNanos)
	}
	var records []*logspb.LogRecord
	if p := profiles[profileCPU]; p != nil {
		// Under a duty cycle the CPU profile covers only part of the
		// window, and says which.
		e.span(p)
		r, err := e.cpu(p)
		if err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		if r != nil {
			records = append(records, r)
		}
	}
	if p := profiles[profileHeap]; p != nil {
		e.span(p)
		r, err := e.allocation(p)
		if err != nil {
			return nil, fmt.Errorf("heap profile: %w", err)
		}
		if r != nil {
			records = append(records, r)
		}
	}
	return records, nil
}

// encoder builds the records of one resource.
type encoder struct {
	// observed is the records' observed time, in Unix nanoseconds.
	observed int64
	// start and end are the time range of the profile being encoded, and
	// eventTime its midpoint.
	start, end time.Time
	eventTime  time.Time
	memDepth   int
	labels     []label
	keys       []string
}

// span sets the time range of the profile encoded next.
func (e *encoder) span(p *pprof.Profile) {
	e.start, e.end = time.Unix(0, p.TimeNanos), time.Unix(0, p.TimeNanos+p.DurationNanos)
	e.eventTime = e.end
	if e.start.Before(e.end) {
		e.eventTime = e.start.Add(e.end.Sub(e.start) / 2)
	}
}

// cpu builds the cpu record. The runtime aggregates the samples of a stack
// into one with a count; the conventions, and the profilers that follow
// them, have one pprof sample per observed stack, so a stack seen n times
// is written n times, each with its share of the values, within
// maxCPUCopies.
func (e *encoder) cpu(p *pprof.Profile) (*logspb.LogRecord, error) {
	countIdx := sampleTypeIndex(p, "samples")
	periodType := valueType(p.PeriodType)
	var periodMs int64
	if p.Period > 0 && periodType.Unit == "nanoseconds" {
		periodMs = max((p.Period+int64(time.Millisecond)/2)/int64(time.Millisecond), 1)
	}
	w := newPprofWriter()
	for _, vt := range p.SampleType {
		w.valueType(fieldProfileSampleType, valueType(vt))
	}
	var (
		frames int64
		n      int
		values = make([]int64, len(p.SampleType))
		prev   []int64
		msg    []byte
		budget = int64(maxCPUCopies)
	)
	for i, s := range p.Sample {
		if len(s.Value) != len(p.SampleType) {
			return nil, fmt.Errorf("sample %d has %d values for %d sample types", i, len(s.Value), len(p.SampleType))
		}
		copies := int64(1)
		if countIdx >= 0 {
			copies = s.Value[countIdx]
		}
		if copies <= 0 {
			continue
		}
		if copies > budget {
			copies = 1 // written once, with its values as they are
		} else if countIdx >= 0 {
			budget -= copies
		}
		if err := w.useStack(s); err != nil {
			return nil, err
		}
		depth := stackDepth(s)
		e.sampleLabels(s, periodMs, depth >= cpuStackDepth)
		encoded := false
		for c := range copies {
			for j, v := range s.Value {
				// Spread each value over the copies, the remainder one
				// unit at a time, so that the copies sum to the original.
				values[j] = v / copies
				if c < v%copies {
					values[j]++
				}
			}
			if countIdx < 0 {
				copy(values, s.Value)
			}
			if !encoded || !slices.Equal(prev, values) {
				msg = w.encodeSample(s, values, e.labels)
				prev = append(prev[:0], values...)
				encoded = true
			}
			w.appendSample(msg)
		}
		frames += int64(depth) * copies
		n++
	}
	if n == 0 {
		return nil, nil
	}
	return e.record(DataTypeCPU, w, periodType, p.Period, p.DefaultSampleType, frames)
}

// allocation builds the allocation record: one sample per stack that
// allocated in the window, valued by the bytes it allocated.
func (e *encoder) allocation(p *pprof.Profile) (*logspb.LogRecord, error) {
	spaceIdx := sampleTypeIndex(p, "alloc_space")
	if spaceIdx < 0 {
		return nil, fmt.Errorf("no alloc_space sample type among %d", len(p.SampleType))
	}
	w := newPprofWriter()
	w.valueType(fieldProfileSampleType, allocationSampleType)
	var (
		frames int64
		n      int
		value  = make([]int64, 1)
	)
	for _, s := range p.Sample {
		if spaceIdx >= len(s.Value) || s.Value[spaceIdx] <= 0 {
			continue
		}
		if err := w.useStack(s); err != nil {
			return nil, err
		}
		depth := stackDepth(s)
		e.sampleLabels(s, 0, depth >= e.memDepth)
		value[0] = s.Value[spaceIdx]
		w.appendSample(w.encodeSample(s, value, e.labels))
		frames += int64(depth)
		n++
	}
	if n == 0 {
		return nil, nil
	}
	return e.record(DataTypeAllocation, w, valueType(p.PeriodType), p.Period, "", frames)
}

// sampleLabels sets e.labels to the labels of one output sample: the event
// time, the period when positive, the sample's own labels (trace_id and
// span_id among them) by key, and the truncation mark. The runtime writes
// a sample's labels sorted by key; pprof keeps them in maps, which are
// sorted again here so that the output does not vary.
func (e *encoder) sampleLabels(s *pprof.Sample, periodMs int64, truncated bool) {
	e.labels = append(e.labels[:0], label{key: labelEventTime, num: e.eventTime.UnixMilli(), isNum: true})
	if periodMs > 0 {
		e.labels = append(e.labels, label{key: labelEventPeriod, num: periodMs, isNum: true})
	}
	e.keys = e.keys[:0]
	for k := range s.Label {
		e.keys = append(e.keys, k)
	}
	for k := range s.NumLabel {
		if _, dup := s.Label[k]; !dup {
			e.keys = append(e.keys, k)
		}
	}
	slices.Sort(e.keys)
	for _, k := range e.keys {
		switch k {
		case labelEventTime, labelEventPeriod, labelStackTruncated:
			// The conventions own these keys; an application label of
			// the same name would contradict them.
			continue
		}
		for _, v := range s.Label[k] {
			e.labels = append(e.labels, label{key: k, str: v})
		}
		units := s.NumUnit[k]
		for i, v := range s.NumLabel[k] {
			l := label{key: k, num: v, isNum: true}
			if i < len(units) {
				l.numUnit = units[i]
			}
			e.labels = append(e.labels, l)
		}
	}
	if truncated {
		e.labels = append(e.labels, label{key: labelStackTruncated, str: "true"})
	}
}

// record finishes w's profile and wraps it in a log record.
func (e *encoder) record(dataType string, w *pprofWriter, periodType pprof.ValueType, period int64, defaultType string, frames int64) (*logspb.LogRecord, error) {
	data := w.finish(header{
		timeNanos:         e.start.UnixNano(),
		durationNanos:     int64(e.end.Sub(e.start)),
		periodType:        periodType,
		period:            period,
		defaultSampleType: defaultType,
	})
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&buf)
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return &logspb.LogRecord{
		TimeUnixNano:         uint64(e.eventTime.UnixNano()),
		ObservedTimeUnixNano: uint64(e.observed),
		Body:                 &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: base64.StdEncoding.EncodeToString(buf.Bytes())}},
		Attributes: []*commonpb.KeyValue{
			stringAttr(attrSourceType, sourceType),
			stringAttr(attrDataType, dataType),
			stringAttr(attrDataFormat, dataFormat),
			{Key: attrFrameCount, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: frames}}},
		},
	}, nil
}

// gzipWriters keeps compressors between windows: each holds about a
// megabyte of state that would otherwise be allocated per record.
var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

func stringAttr(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// stackDepth counts the frames of s as a stack trace shows them: each
// inlined call is a frame, and a location without symbols is one frame.
func stackDepth(s *pprof.Sample) int {
	n := 0
	for _, loc := range s.Location {
		n += max(len(loc.Line), 1)
	}
	return n
}

func sampleTypeIndex(p *pprof.Profile, typ string) int {
	for i, vt := range p.SampleType {
		if vt.Type == typ {
			return i
		}
	}
	return -1
}

// valueType returns *vt, or the empty type for nil.
func valueType(vt *pprof.ValueType) pprof.ValueType {
	if vt == nil {
		return pprof.ValueType{}
	}
	return *vt
}
