package pprofdecode

// ValueType names the type and unit of a sample value, e.g. "alloc_space",
// "bytes".
type ValueType struct {
	Type string
	Unit string
}

// Profile is one decoded pprof profile.
type Profile struct {
	SampleTypes       []ValueType
	DefaultSampleType string // "" when the source did not set one
	PeriodType        ValueType
	Period            int64
	TimeNanos         int64
	DurationNanos     int64
	Comments          []string

	Samples   []Sample
	Locations []Location
	Functions []Function
	Mappings  []Mapping
}

// Sample is one stack with its values. Locations holds indices into
// Profile.Locations, leaf first, as in pprof.
type Sample struct {
	Locations []int32
	Values    []int64
	Labels    []Label

	// PackedLocations, when not nil, holds the sample's stack still
	// encoded and Locations is nil: location ids as varints, leaf first,
	// where id i is Profile.Locations[i-1]. Only a Decoder with
	// DeferLocations set leaves stacks packed, and its ResolveLocations
	// decodes them; the ids have not been checked.
	PackedLocations []byte

	// Events, when not nil, are the events the sample records, each with
	// its value of the profile's one sample type and the time it began;
	// Values then holds their sum. runtime/pprof writes no events; the
	// profiles the profiler records itself from the execution trace
	// carry them, and each such sample is sent as one OTLP sample with a
	// value and a timestamp per event.
	Events []Event
}

// Event is one event of a sample: its value and when it began, in Unix
// nanoseconds.
type Event struct {
	Value, TimeNanos int64
}

// Label is a pprof label: either a string label (Str set) or a numeric label
// (Num, with an optional NumUnit).
type Label struct {
	Key     string
	Str     string
	Num     int64
	NumUnit string
	IsNum   bool
}

// Location is a program counter with its symbolized lines. Mapping is an
// index into Profile.Mappings, or -1 when the location has no mapping. Lines
// lists inlined frames innermost first; the last entry is the physical caller.
type Location struct {
	Mapping  int32
	Address  uint64
	Lines    []Line
	IsFolded bool
}

// Line is one frame of a Location. Function is an index into
// Profile.Functions, or -1 when unknown.
type Line struct {
	Function int32
	Line     int64
	Column   int64
}

// Function is a symbolized function.
type Function struct {
	Name       string
	SystemName string
	Filename   string
	StartLine  int64
}

// Mapping is a mapped binary image.
type Mapping struct {
	Start, Limit, Offset uint64
	File                 string
	BuildID              string
	HasFunctions         bool
	HasFilenames         bool
	HasLineNumbers       bool
	HasInlineFrames      bool
}
