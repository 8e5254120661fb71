package splunk

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"slices"
	"sync"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/pprofdecode"
	"github.com/pprofotel/profiler/internal/validutf8"
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
var allocationSampleType = pprofdecode.ValueType{Type: "allocationSize", Unit: "bytes"}

// cpuStackDepth is the most frames the Go runtime records for a CPU
// profile sample (runtime.maxCPUProfStack); GODEBUG=profstackdepth does not
// apply to the CPU profiler.
const cpuStackDepth = 64

// DefaultMemoryStackDepth is the most frames the Go runtime records for a
// heap profile sample unless GODEBUG=profstackdepth says otherwise.
const DefaultMemoryStackDepth = 128

// EncodeOptions selects what Encode puts in a request.
type EncodeOptions struct {
	// Memory adds the allocation record, made from the window's heap
	// profile.
	Memory bool
	// MemoryStackDepth is the runtime's stack depth limit for heap profile
	// samples (GODEBUG=profstackdepth): a stack that deep is marked
	// truncated. Zero means DefaultMemoryStackDepth.
	MemoryStackDepth int
}

// Encode turns one window into an OTLP logs request in the format of
// Splunk's profiling conventions: one ResourceLogs with res, one scope
// otel.profiling 0.1.0, and one LogRecord per data type: cpu from the
// window's CPU profile and, with opts.Memory, allocation from the heap
// profile's alloc_space. A data type with no sample in the window has no
// record; when no record remains Encode returns nil and no error, and there
// is nothing to send.
//
// The strings of the pprof bodies (label keys and values, function, file
// and mapping names), which profile.proto declares as proto3 strings, are
// made valid UTF-8 as they enter a body's string table (see package
// validutf8); Encode returns what it repaired. res is sent as it is.
//
// See the package documentation for the layout of the records and of the
// pprof data in their bodies.
func Encode(w collect.Window, res *resourcepb.Resource, opts EncodeOptions) (*collogspb.ExportLogsServiceRequest, validutf8.Repairs, error) {
	e := encoder{window: w, memDepth: opts.MemoryStackDepth}
	if e.memDepth <= 0 {
		e.memDepth = DefaultMemoryStackDepth
	}
	var records []*logspb.LogRecord
	if p := find(w, collect.CPU); p != nil {
		// Under a duty cycle the CPU profile covers only part of the
		// window, and says which.
		e.span(p.Span(w))
		r, err := e.cpu(p.Data)
		if err != nil {
			return nil, e.repairs, fmt.Errorf("splunk: cpu profile: %w", err)
		}
		if r != nil {
			records = append(records, r)
		}
	}
	if p := find(w, collect.Heap); p != nil && opts.Memory {
		e.span(w.Start, w.End)
		r, err := e.allocation(p.Data)
		if err != nil {
			return nil, e.repairs, fmt.Errorf("splunk: heap profile: %w", err)
		}
		if r != nil {
			records = append(records, r)
		}
	}
	if len(records) == 0 {
		return nil, e.repairs, nil
	}
	return &collogspb.ExportLogsServiceRequest{
		ResourceLogs: []*logspb.ResourceLogs{{
			Resource: res,
			ScopeLogs: []*logspb.ScopeLogs{{
				Scope:      &commonpb.InstrumentationScope{Name: ScopeName, Version: ScopeVersion},
				LogRecords: records,
			}},
		}},
	}, e.repairs, nil
}

func find(w collect.Window, name string) *collect.Profile {
	for i, p := range w.Profiles {
		if p.Name == name && p.Data != nil {
			return &w.Profiles[i]
		}
	}
	return nil
}

// encoder builds the records of one window.
type encoder struct {
	window collect.Window
	// start and end are the time range of the profile being encoded, and
	// eventTime its midpoint.
	start, end time.Time
	eventTime  time.Time
	memDepth   int
	labels     []label
	// repairs counts the strings of the bodies that were not valid UTF-8.
	repairs validutf8.Repairs
}

// span sets the time range of the profile encoded next.
func (e *encoder) span(start, end time.Time) {
	e.start, e.end = start, end
	e.eventTime = end
	if !start.IsZero() && start.Before(end) {
		e.eventTime = start.Add(end.Sub(start) / 2)
	}
}

// cpu builds the cpu record. The runtime aggregates the samples of a stack
// into one with a count; the conventions, and the profilers that follow
// them, have one pprof sample per observed stack, so a stack seen n times
// is written n times, each with its share of the values.
func (e *encoder) cpu(p *pprofdecode.Profile) (*logspb.LogRecord, error) {
	countIdx := sampleTypeIndex(p, "samples")
	var periodMs int64
	if p.Period > 0 && p.PeriodType.Unit == "nanoseconds" {
		periodMs = max((p.Period+int64(time.Millisecond)/2)/int64(time.Millisecond), 1)
	}
	w := newPprofWriter(p)
	for _, vt := range p.SampleTypes {
		w.valueType(fieldProfileSampleType, vt)
	}
	var (
		frames int64
		n      int
		values = make([]int64, len(p.SampleTypes))
		prev   []int64
		msg    []byte
	)
	for i := range p.Samples {
		s := &p.Samples[i]
		if len(s.Values) != len(p.SampleTypes) {
			return nil, fmt.Errorf("sample %d has %d values for %d sample types", i, len(s.Values), len(p.SampleTypes))
		}
		copies := int64(1)
		if countIdx >= 0 {
			copies = s.Values[countIdx]
		}
		if copies <= 0 {
			continue
		}
		if err := w.useStack(s); err != nil {
			return nil, err
		}
		depth := stackDepth(p, s)
		e.sampleLabels(s, periodMs, depth >= cpuStackDepth)
		encoded := false
		for c := range copies {
			for j, v := range s.Values {
				// Spread each value over the copies, the remainder one
				// unit at a time, so that the copies sum to the original.
				values[j] = v / copies
				if c < v%copies {
					values[j]++
				}
			}
			if countIdx < 0 {
				copy(values, s.Values)
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
	return e.record(DataTypeCPU, w, p.PeriodType, p.Period, p.DefaultSampleType, frames)
}

// allocation builds the allocation record: one sample per stack that
// allocated in the window, valued by the bytes it allocated.
func (e *encoder) allocation(p *pprofdecode.Profile) (*logspb.LogRecord, error) {
	spaceIdx := sampleTypeIndex(p, "alloc_space")
	if spaceIdx < 0 {
		return nil, fmt.Errorf("no alloc_space sample type among %d", len(p.SampleTypes))
	}
	w := newPprofWriter(p)
	w.valueType(fieldProfileSampleType, allocationSampleType)
	var (
		frames int64
		n      int
		value  = make([]int64, 1)
	)
	for i := range p.Samples {
		s := &p.Samples[i]
		if spaceIdx >= len(s.Values) || s.Values[spaceIdx] <= 0 {
			continue
		}
		if err := w.useStack(s); err != nil {
			return nil, err
		}
		depth := stackDepth(p, s)
		e.sampleLabels(s, 0, depth >= e.memDepth)
		value[0] = s.Values[spaceIdx]
		w.appendSample(w.encodeSample(s, value, e.labels))
		frames += int64(depth)
		n++
	}
	if n == 0 {
		return nil, nil
	}
	return e.record(DataTypeAllocation, w, p.PeriodType, p.Period, "", frames)
}

// sampleLabels sets e.labels to the labels of one output sample: the event
// time, the period when positive, the sample's own labels (trace_id and
// span_id among them) and the truncation mark.
func (e *encoder) sampleLabels(s *pprofdecode.Sample, periodMs int64, truncated bool) {
	e.labels = append(e.labels[:0], label{key: labelEventTime, num: e.eventTime.UnixMilli(), isNum: true})
	if periodMs > 0 {
		e.labels = append(e.labels, label{key: labelEventPeriod, num: periodMs, isNum: true})
	}
	for _, l := range s.Labels {
		switch l.Key {
		case labelEventTime, labelEventPeriod, labelStackTruncated:
			// The conventions own these keys; an application label of
			// the same name would contradict them.
			continue
		}
		e.labels = append(e.labels, label{key: l.Key, str: l.Str, num: l.Num, numUnit: l.NumUnit, isNum: l.IsNum})
	}
	if truncated {
		e.labels = append(e.labels, label{key: labelStackTruncated, str: "true"})
	}
}

// record finishes w's profile and wraps it in a log record.
func (e *encoder) record(dataType string, w *pprofWriter, periodType pprofdecode.ValueType, period int64, defaultType string, frames int64) (*logspb.LogRecord, error) {
	data := w.finish(header{
		timeNanos:         e.start.UnixNano(),
		durationNanos:     int64(e.end.Sub(e.start)),
		periodType:        periodType,
		period:            period,
		defaultSampleType: defaultType,
	})
	e.repairs.Add(w.repairs)
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
		ObservedTimeUnixNano: uint64(e.window.End.UnixNano()),
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
func stackDepth(p *pprofdecode.Profile, s *pprofdecode.Sample) int {
	n := 0
	for _, li := range s.Locations {
		n += max(len(p.Locations[li].Lines), 1)
	}
	return n
}

func sampleTypeIndex(p *pprofdecode.Profile, typ string) int {
	for i, vt := range p.SampleTypes {
		if vt.Type == typ {
			return i
		}
	}
	return -1
}
