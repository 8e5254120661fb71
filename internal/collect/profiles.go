package collect

import (
	"fmt"
	"log/slog"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/collect/requests"
)

// The runtime profile names, as runtime/pprof spells them. They are the keys
// of Profiles and nothing else: every property of a profile is in its
// entry there.
const (
	CPU       = "cpu"
	Heap      = "heap"
	Goroutine = "goroutine"
	Mutex     = "mutex"
	Block     = "block"
	OffCPU    = "offcpu"
	// GoroutineLeak is the goroutine-leak profile of Go 1.27.
	GoroutineLeak = "goroutineleak"
	// SlowRequests is the slow-request profile that the off-CPU recorder
	// adds to the windows it explains slow requests in (SlowRecorder): a
	// companion of OffCPU, with no descriptor of its own.
	SlowRequests = "slowrequests"
)

// Descriptor is everything the profiler knows about one runtime profile.
// The root package derives its ProfileType values, their names, parsing,
// error messages, defaults and the runtime rates it sets at Start and
// restores at Stop from these entries; the Collector derives how it reads
// each profile and which values it turns into deltas. runtime/pprof keeps
// its profiles the same way, one entry each.
type Descriptor struct {
	// Name is the runtime/pprof name, the PPROFOTEL_PROFILES spelling and
	// the value of the pprofotel.profile.name attribute.
	Name string
	// CPU marks the profile that runtime/pprof records between
	// StartCPUProfile and StopCPUProfile; it is restarted every window,
	// and within one when the request tracker asks for a part.
	// Every other profile is read once per window with Source.
	CPU bool
	// Values is the number of values of each sample.
	Values int
	// Cumulative lists the indexes of the values the runtime accumulates
	// since the process started; the Collector reports what they grew by
	// during the window. The other values are snapshots and pass through.
	Cumulative []int
	// Default profiles run unless the application chooses the profile
	// types itself: they are cheap enough to run everywhere all the time.
	Default bool
	// Rate is the process-wide runtime rate the profile needs, nil for
	// none.
	Rate *Rate
	// Available reports why this Go cannot provide the profile, nil when
	// it can. A nil Available means always.
	Available func() error
	// Source writes the profile in pprof protobuf format; nil reads
	// pprof.Lookup(Name), or the Collector's Config.Source when set.
	Source Source
	// Interval, for a profile too costly to read every window, is the
	// least time between two reads; nil reads it every window.
	Interval *Interval
	// Recorder, when set, makes the profile one the profiler records
	// itself instead of reading it from runtime/pprof: the Collector
	// starts it with the first window and collects it at the end of every
	// window. Source is then unused.
	Recorder func(now time.Time, cfg RecorderConfig) Recorder
}

// Interval spaces out the reads of a profile: it is read in the first
// window, then in every nth window, n being the interval divided by the
// window's length and rounded up, and in the last window, at Stop.
type Interval struct {
	// Env is the variable that sets it, Option the option that does.
	Env, Option string
	// Default is the interval used when neither sets it.
	Default time.Duration
}

// Recorder records a profile over each window.
type Recorder interface {
	// Collect ends the window at now and returns its profile, valid until
	// the next call; with last set, the recorder stops for good.
	Collect(now time.Time, last bool) (*pprofdecode.Profile, error)
}

// RecorderConfig is what a Recorder gets from the Collector.
type RecorderConfig struct {
	Logger    *slog.Logger
	Omissions *Omissions
	// SlowThreshold is the least duration of a request explained as
	// slow; 0 takes the recorder's default.
	SlowThreshold time.Duration
	// Stretches is told when a recorder whose samples name local roots
	// keeps them (Begin before, End after), and which roots they named
	// (Named): the request tracker remembers only those roots. Nil for
	// none.
	Stretches *requests.Stretches
}

// SlowRecorder is a Recorder that also explains slow requests: the
// request tracker reports to it the requests that run long (Watch) and
// their end (Ended), and every window it explains some in, its Collect is
// followed by a slow-request profile (Slow), which the Collector adds to
// the window as SlowRequests.
type SlowRecorder interface {
	Recorder
	// Watch tells the recorder that the request whose local root span
	// has the given ids (trace id and span id, 48 hex digits), begun at
	// start, at route as far as it is known yet, runs long. It never
	// blocks.
	Watch(ids, route string, start time.Time)
	// Ended tells it that a request it was told to watch ended, at end,
	// at route. It never blocks.
	Ended(ids, route string, start, end time.Time)
	// Slow returns the slow-request profile of the window the last
	// Collect ended, nil for none; valid until the next Collect.
	Slow() *pprofdecode.Profile
}

// Rate is a process-wide runtime sampling rate that a profile needs while
// it runs: set at Start, put back at Stop.
type Rate struct {
	// Env is the variable that sets it, Option the option that does.
	Env, Option string
	// Default is the rate used when neither sets it.
	Default int
	// Max, when not 0, is the largest valid rate.
	Max int
	// Want says what a valid value is, for error messages; 0 is never
	// valid, since it would switch the profile off.
	Want string
	// Set applies rate and returns what puts the previous state back.
	Set func(rate int) (restore func())
}

// Profiles lists the runtime profiles in the order in which they are
// collected and exported; the root package's ProfileType values are
// indexes into it.
var Profiles = []Descriptor{
	{Name: CPU, CPU: true, Values: 2, Default: true},
	// alloc_objects, alloc_space grow; inuse_objects, inuse_space are the
	// live heap at the last GC.
	{Name: Heap, Values: 4, Cumulative: []int{0, 1}, Default: true},
	{Name: Goroutine, Values: 1, Default: true},
	{Name: Mutex, Values: 2, Cumulative: []int{0, 1}, Rate: &Rate{
		Env: "PPROFOTEL_MUTEX_PROFILE_FRACTION", Option: "WithMutexProfileFraction",
		// One contention event in ten. The cost of mutex profiling grows
		// with the number of recorded events, and a contended lock
		// produces many events per window, so a tenth is still plenty to
		// rank the hot locks while keeping the overhead small.
		Default: 10,
		Want:    "fraction must be a positive integer",
		Set: func(rate int) func() {
			prev := runtime.SetMutexProfileFraction(rate)
			return func() { runtime.SetMutexProfileFraction(prev) }
		},
	}},
	{Name: Block, Values: 2, Cumulative: []int{0, 1}, Rate: &Rate{
		Env: "PPROFOTEL_BLOCK_PROFILE_RATE", Option: "WithBlockProfileRate",
		// On average one blocking event per 10µs spent blocked: any wait
		// of 10µs or more is always recorded, while the very frequent
		// sub-microsecond channel hand-offs, which cost more to record
		// than they matter, are sampled sparsely.
		Default: 10000,
		Want:    "rate must be a positive number of nanoseconds",
		Set: func(rate int) func() {
			runtime.SetBlockProfileRate(rate)
			// The runtime offers no way to read the block rate back,
			// so only the runtime's default, off, can be restored.
			return func() { runtime.SetBlockProfileRate(0) }
		},
	}},
	// Waits, from the execution trace, traced a share of every cycle: see
	// package internal/collect/offcpu for what counts and how the cost is bounded.
	// Its parser is linked in only by the applications that import package
	// offcpu, which registers it (RegisterOffCPU).
	{Name: OffCPU, Values: 1, Available: offCPUAvailable, Rate: &Rate{
		Env: "PPROFOTEL_OFFCPU_DUTY_CYCLE", Option: "WithOffCPUDutyCycle",
		Default: DefaultOffCPUDuty,
		Max:     100,
		Want:    "duty cycle must be a percentage from 1 to 100",
		Set: func(percent int) func() {
			if offCPU.setDuty == nil {
				return func() {}
			}
			return offCPU.setDuty(percent)
		},
	}, Recorder: func(now time.Time, cfg RecorderConfig) Recorder {
		return offCPU.start(now, cfg)
	}},
	// Every read runs a full garbage collection first, with leak
	// detection, whose cost grows with the live heap: opt-in, read at
	// most once every five minutes by default, and last in its window,
	// after the other profiles.
	// A snapshot: every read lists all the goroutines leaked so far.
	{Name: GoroutineLeak, Values: 1, Available: goroutineLeakAvailable, Interval: &Interval{
		Env: "PPROFOTEL_GOROUTINELEAK_INTERVAL", Option: "WithGoroutineLeakInterval",
		Default: 5 * time.Minute,
	}},
}

// DefaultSlowThreshold is the least duration of a request the off-CPU
// recorder explains as slow, unless the application sets another;
// MinSlowThreshold the least it may set. docs/slow-requests.md has the
// figures they come from.
const (
	DefaultSlowThreshold = 100 * time.Millisecond
	MinSlowThreshold     = 10 * time.Millisecond
)

// DefaultOffCPUDuty is the off-CPU profile's default duty cycle in
// percent, 1 s of every 10 s.
const DefaultOffCPUDuty = 10

// offCPU is the off-CPU recorder that package offcpu registers.
var offCPU struct {
	start   func(now time.Time, cfg RecorderConfig) Recorder
	setDuty func(percent int) (restore func())
}

// OffCPUImport is the package whose import links the off-CPU profile in.
const OffCPUImport = "github.com/pprofotel/profiler/offcpu"

// RegisterOffCPU makes the off-CPU profile available: start starts its
// recorder, setDuty sets the process-wide duty cycle in percent. Package
// offcpu calls it from init, so that the execution-trace parser is linked
// only into the applications that ask for it.
func RegisterOffCPU(start func(now time.Time, cfg RecorderConfig) Recorder, setDuty func(percent int) (restore func())) {
	offCPU.start, offCPU.setDuty = start, setDuty
}

func offCPUAvailable() error {
	if offCPU.start == nil {
		return fmt.Errorf("the off-CPU profile is not linked into this program: import _ %q", OffCPUImport)
	}
	return nil
}

// goroutineLeakAvailable reports whether runtime/pprof has the
// goroutine-leak profile: Go 1.27 always registers it, Go 1.26 only when
// built with GOEXPERIMENT=goroutineleakprofile, so only a lookup tells.
func goroutineLeakAvailable() error {
	if pprof.Lookup(GoroutineLeak) == nil {
		return fmt.Errorf("%s has no goroutineleak profile: it needs Go 1.27 or later (or Go 1.26 built with GOEXPERIMENT=goroutineleakprofile)",
			runtime.Version())
	}
	return nil
}

// Lookup returns the descriptor of the named profile.
func Lookup(name string) (*Descriptor, bool) {
	for i := range Profiles {
		if Profiles[i].Name == name {
			return &Profiles[i], true
		}
	}
	return nil, false
}

// NameList spells the profile names for error messages and documentation:
// "cpu, heap, goroutine, mutex, block or offcpu".
func NameList() string {
	names := make([]string, len(Profiles))
	for i, d := range Profiles {
		names[i] = d.Name
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// cumulative reports whether the profile has values to turn into deltas.
func (d *Descriptor) cumulative() bool { return len(d.Cumulative) > 0 }

// check reports a descriptor whose shape the Collector cannot use.
func (d *Descriptor) check() error {
	for _, i := range d.Cumulative {
		if i < 0 || i >= d.Values {
			return fmt.Errorf("collect: profile %q: cumulative value %d out of %d", d.Name, i, d.Values)
		}
	}
	return nil
}
