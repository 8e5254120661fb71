package otlpattr

// ValueType is a type and unit pair, as pprof's and OTLP's ValueType hold
// them.
type ValueType struct {
	Type string
	Unit string
}

// SampleType says what one sample type of a runtime profile becomes in
// OTLP. SampleTypes lists them all; the Builder sends by it and a converter
// back to pprof reads it the other way.
type SampleType struct {
	// Profile is the runtime profile: "cpu", "heap", "goroutine",
	// "mutex", "block", "offcpu" or "goroutineleak"; or "requests", the
	// profiler's request counts, or "slowrequests", the off-CPU
	// recorder's slow-request explanations.
	Profile string
	// Pprof and PprofPeriod are the sample type and period type as
	// runtime/pprof writes them.
	Pprof, PprofPeriod ValueType
	// Sample and Period are the OTLP Profile's sample_type and
	// period_type.
	Sample, Period ValueType
	// ScaledFrom, when set, names the Pprof type of the same profile
	// whose values times the profile's period equal this type's values
	// in every sample. Such a type carries nothing of its own: the
	// Builder sends no Profile for it when that equality holds, and a
	// converter back to pprof computes it.
	ScaledFrom string
	// EventPerSample sends each timed event of a sample as an OTLP
	// sample of its own, one value and one timestamp, rather than one
	// sample per identity with a value and a timestamp per event:
	// Grafana Pyroscope (v2.2.1) refuses a sample of several values for
	// any type but off_cpu/nanoseconds with no period ("sample value
	// length mismatch"), and with it the rest of the request.
	EventPerSample bool
}

// SampleTypes is what each runtime sample type becomes in OTLP, in the
// order runtime/pprof writes the sample types of each profile.
//
// Receivers name a profile from its data: from sample_type (the OTEP 239
// profile-type list: cpu, alloc_objects, ..., mutex_contentions,
// mutex_delay, block_contentions, block_delay) or from period_type, "the
// kind of events between sampled occurrences" (profiles.proto; Grafana
// Pyroscope names a profile after it). runtime/pprof writes the mutex and
// block profiles with the same types (contentions/count, delay/nanoseconds,
// period contentions/count), so both get the OTEP's names, prefixed by the
// kind of wait, in sample_type and period_type alike: the two profiles are
// distinct by either reading. The other runtime names are in the OTEP list
// already and stay as runtime/pprof writes them, so that the data reads the
// same as the runtime's own pprof.
//
// The CPU profile's cpu/nanoseconds is samples/count times the period
// (runtime/pprof writes count and count*period), so only samples/count
// with period_type cpu/nanoseconds is sent, as the OpenTelemetry eBPF
// profiler sends CPU samples; one Profile, stored once.
var SampleTypes = []SampleType{
	{Profile: "cpu", Pprof: ValueType{"samples", "count"}, PprofPeriod: ValueType{"cpu", "nanoseconds"},
		Sample: ValueType{"samples", "count"}, Period: ValueType{"cpu", "nanoseconds"}},
	{Profile: "cpu", Pprof: ValueType{"cpu", "nanoseconds"}, PprofPeriod: ValueType{"cpu", "nanoseconds"},
		Sample: ValueType{"cpu", "nanoseconds"}, Period: ValueType{"cpu", "nanoseconds"}, ScaledFrom: "samples"},

	{Profile: "heap", Pprof: ValueType{"alloc_objects", "count"}, PprofPeriod: ValueType{"space", "bytes"},
		Sample: ValueType{"alloc_objects", "count"}, Period: ValueType{"space", "bytes"}},
	{Profile: "heap", Pprof: ValueType{"alloc_space", "bytes"}, PprofPeriod: ValueType{"space", "bytes"},
		Sample: ValueType{"alloc_space", "bytes"}, Period: ValueType{"space", "bytes"}},
	{Profile: "heap", Pprof: ValueType{"inuse_objects", "count"}, PprofPeriod: ValueType{"space", "bytes"},
		Sample: ValueType{"inuse_objects", "count"}, Period: ValueType{"space", "bytes"}},
	{Profile: "heap", Pprof: ValueType{"inuse_space", "bytes"}, PprofPeriod: ValueType{"space", "bytes"},
		Sample: ValueType{"inuse_space", "bytes"}, Period: ValueType{"space", "bytes"}},

	{Profile: "goroutine", Pprof: ValueType{"goroutine", "count"}, PprofPeriod: ValueType{"goroutine", "count"},
		Sample: ValueType{"goroutine", "count"}, Period: ValueType{"goroutine", "count"}},

	{Profile: "mutex", Pprof: ValueType{"contentions", "count"}, PprofPeriod: ValueType{"contentions", "count"},
		Sample: ValueType{"mutex_contentions", "count"}, Period: ValueType{"mutex_contentions", "count"}},
	{Profile: "mutex", Pprof: ValueType{"delay", "nanoseconds"}, PprofPeriod: ValueType{"contentions", "count"},
		Sample: ValueType{"mutex_delay", "nanoseconds"}, Period: ValueType{"mutex_contentions", "count"}},

	{Profile: "block", Pprof: ValueType{"contentions", "count"}, PprofPeriod: ValueType{"contentions", "count"},
		Sample: ValueType{"block_contentions", "count"}, Period: ValueType{"block_contentions", "count"}},
	{Profile: "block", Pprof: ValueType{"delay", "nanoseconds"}, PprofPeriod: ValueType{"contentions", "count"},
		Sample: ValueType{"block_delay", "nanoseconds"}, Period: ValueType{"block_contentions", "count"}},

	// The off-CPU profile is the profiler's own, from the execution trace:
	// one value and one timestamp per wait, no sampling period. The type
	// is the one the OpenTelemetry eBPF profiler sends for off-CPU time,
	// with no period type, which Grafana Pyroscope recognises as its
	// off_cpu profile.
	{Profile: "offcpu", Pprof: ValueType{"off_cpu", "nanoseconds"},
		Sample: ValueType{"off_cpu", "nanoseconds"}},
	// The slow-request profile, which comes with the off-CPU one: the wall
	// time of each slow request, by what its goroutine did, one value and
	// one timestamp per interval. Not in the OTEP's list. Every interval is
	// recorded: a period of 1 nanosecond of wall time, whose type names
	// the profile for receivers that name profiles by it, and one OTLP
	// sample per interval: Grafana Pyroscope refuses a Profile of no name
	// other than off_cpu, and a sample of several values of any but
	// off_cpu (Pyroscope: wall:wall:nanoseconds:wall:nanoseconds).
	{Profile: "slowrequests", Pprof: ValueType{"wall", "nanoseconds"}, PprofPeriod: ValueType{"wall", "nanoseconds"},
		Sample: ValueType{"wall", "nanoseconds"}, Period: ValueType{"wall", "nanoseconds"}, EventPerSample: true},
	// Not in the OTEP's list, and distinct from goroutine/count by either
	// reading: sent as the runtime writes it (Pyroscope shows it as
	// goroutineleak:goroutineleak:count:goroutineleak:count).
	{Profile: "goroutineleak", Pprof: ValueType{"goroutineleak", "count"}, PprofPeriod: ValueType{"goroutineleak", "count"},
		Sample: ValueType{"goroutineleak", "count"}, Period: ValueType{"goroutineleak", "count"}},
	// Not a runtime profile: the requests that ended in the window, one
	// sample per route (the collector's requests profile). Every
	// request is counted: a period of 1 request, whose type names the
	// profile for receivers that name profiles by it (Pyroscope refuses a
	// Profile of no name other than off_cpu: requests:requests:count:
	// requests:count).
	{Profile: "requests", Pprof: ValueType{"requests", "count"}, PprofPeriod: ValueType{"requests", "count"},
		Sample: ValueType{"requests", "count"}, Period: ValueType{"requests", "count"}},
}

// SentAs returns the entry of SampleTypes for sample type t of runtime
// profile name, or nil: a profile the table does not know is sent with its
// own types.
func SentAs(name string, t ValueType) *SampleType {
	for i := range SampleTypes {
		if st := &SampleTypes[i]; st.Profile == name && st.Pprof == t {
			return st
		}
	}
	return nil
}

// PprofSampleType returns the entry of SampleTypes that sends an OTLP
// Profile with the given sample_type and period_type, if any. Two entries
// never send the same pair, so the entry, and with it the runtime profile
// and the pprof names, follows from the Profile's data alone.
func PprofSampleType(sample, period ValueType) (SampleType, bool) {
	for _, st := range SampleTypes {
		if st.Sample == sample && st.Period == period {
			return st, true
		}
	}
	return SampleType{}, false
}

// Received returns what an OTLP Profile of runtime profile name with the
// given sample_type and period_type stands for: its entry of SampleTypes,
// or, for a pair the table does not know or one of another profile, an
// entry of name that keeps the Profile's types. An empty name matches the
// entry of any profile.
func Received(name string, sample, period ValueType) SampleType {
	if st, ok := PprofSampleType(sample, period); ok && (name == "" || st.Profile == name) {
		return st
	}
	return SampleType{Profile: name, Pprof: sample, PprofPeriod: period, Sample: sample, Period: period}
}

// Unsent returns the entries of SampleTypes that a scope whose Profiles
// stand for the entries sent did not send because one of them gives them:
// their ScaledFrom is the Pprof type of an entry of sent of the same
// profile, and they are not among sent. A converter back to pprof adds them,
// in the order of SampleTypes, at the indices pprof.scope.sample_type_order
// leaves free.
func Unsent(sent []SampleType) []SampleType {
	var out []SampleType
	for _, st := range SampleTypes {
		if st.ScaledFrom == "" {
			continue
		}
		from, self := false, false
		for _, s := range sent {
			if s.Profile != st.Profile {
				continue
			}
			from = from || s.Pprof.Type == st.ScaledFrom
			self = self || s.Pprof == st.Pprof
		}
		if from && !self {
			out = append(out, st)
		}
	}
	return out
}
