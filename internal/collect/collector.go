package collect

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/collect/requests"
)

// Floors of the durations that decide how often the profiler works
// (WithWindow, WithCPUDutyCycle): below them, the profiler's own reading
// and sending would be a large share of what it measures.
const (
	// MinWindow is the shortest window.
	MinWindow = time.Second
	// MinCPUDuration is the shortest CPU profile recording in a window.
	MinCPUDuration = 100 * time.Millisecond
)

// Profile is one runtime profile of a window.
type Profile struct {
	// Name is the Name of one of Profiles, or SlowRequests.
	Name string
	// Data holds deltas over the window for cumulative values and the state
	// at the window's end for snapshots.
	Data *pprofdecode.Profile
	// Start and End bound the time the profile was recorded in, set
	// when that is less than the window: the CPU profile under a duty
	// cycle (Config.CPUDuration). Zero means the whole window.
	Start, End time.Time
}

// Span returns the time range the profile covers within w.
func (p Profile) Span(w Window) (start, end time.Time) {
	if p.Start.IsZero() {
		return w.Start, w.End
	}
	return p.Start, p.End
}

// Window is what the runtime recorded between Start and End.
//
// Its profiles, except the CPU profile, are decoded into memory the
// Collector reuses: they are valid until the next call of Start, Collect
// or Stop, which is long enough to convert them, and must not be kept
// longer. Their strings may be kept.
type Window struct {
	Start, End time.Time
	Profiles   []Profile
}

// Source writes the named runtime profile to w in pprof protobuf format.
// Tests replace it to feed recorded profiles.
type Source func(name string, w io.Writer) error

// RuntimeSource reads the live runtime profiles.
func RuntimeSource(name string, w io.Writer) error {
	p := pprof.Lookup(name)
	if p == nil {
		return fmt.Errorf("runtime/pprof has no %q profile", name)
	}
	return p.WriteTo(w, 0)
}

// CPUProfiler starts and stops the process-wide CPU profile. It is
// runtime/pprof's by default; tests replace it.
type CPUProfiler struct {
	Start func(w io.Writer) error
	Stop  func()
}

// Omissions counts what the collector left out of its windows. The fields
// are updated atomically and may be read at any time.
type Omissions struct {
	// CPUProfilesSkipped counts windows without a CPU profile because the CPU
	// profiler was in use by someone else, or was stopped by someone else
	// (a stray pprof.StopCPUProfile) during the window.
	CPUProfilesSkipped atomic.Int64
	// ProfilesLeftOut counts profiles that could not be read or decoded.
	ProfilesLeftOut atomic.Int64
	// GoroutineProfilesSkipped counts windows without a goroutine profile because
	// more goroutines than Config.MaxGoroutines were running.
	GoroutineProfilesSkipped atomic.Int64
	// OffCPU counts what the off-CPU recorder left out.
	OffCPU OffCPUOmissions
	// RoutesOverflowed counts requests counted under the overflow
	// route (requests.Overflow) because their window had
	// Config.MaxRoutes others already.
	RoutesOverflowed atomic.Int64
	// RoutesUnknown counts requests whose route changed after they
	// started, whose life overlapped a stretch of a profile whose samples
	// name roots, and that their window could not keep until those
	// samples were read (requests.Tracker's room): their samples may
	// carry the route they started with.
	RoutesUnknown atomic.Int64
	// RequestsAgedOut counts requests the tracker stopped following,
	// running for requests.DefaultMaxAge or beyond the
	// requests.DefaultMaxRequests running at once: not counted when they
	// end.
	RequestsAgedOut atomic.Int64
}

// OffCPUOmissions counts what the off-CPU recorder left out. The fields
// are updated atomically and may be read at any time.
type OffCPUOmissions struct {
	// Skipped counts stretches not traced because the execution tracer
	// was in use elsewhere (runtime/trace.Start), or because more
	// goroutines ran than the recorder traces.
	Skipped atomic.Int64
	// Truncated counts stretches read only in part: the trace outgrew
	// the recorder's byte budget, the window its wait limit, or the trace
	// could not be read to its end. What was read is kept.
	Truncated atomic.Int64
	// SlowRequestsExplained counts the slow requests explained in the windows'
	// slow-request profiles.
	SlowRequestsExplained atomic.Int64
	// SlowRequestsDropped counts the requests that ran long and were not
	// explained: more watched at once than the recorder watches, more
	// slow in a window than it explains (the fastest are dropped), the
	// trace budget or the execution tracer unavailable while they ran,
	// or no trace of their goroutine read.
	SlowRequestsDropped atomic.Int64
}

// DefaultMaxGoroutines is the number of goroutines above which the
// goroutine profile is skipped. The runtime writes that profile while the
// application's goroutines wait, for a time that grows with their number;
// the bound keeps that pause short.
const DefaultMaxGoroutines = 10_000

// Collector reads the enabled runtime profiles once per window. It is not
// safe for concurrent use: the profiler drives it from one goroutine.
type Collector struct {
	names   []string
	source  Source
	cpuProf CPUProfiler
	logger  *slog.Logger
	stats   *Omissions

	// decoder decodes CPU profiles. Every other profile has its own
	// Decoder and a Profile it decodes into again every window, so that
	// decoding allocates little once warm; one Decoder per profile
	// because a Decoder's buffers back the profile decoded last.
	decoder  pprofdecode.Decoder
	reusable map[string]*reusedProfile
	buf      bytes.Buffer
	// The CPU profile of one window is decoded while the next one records,
	// so two buffers take turns; cpuBufs[cpuCur] is the one recording.
	cpuBufs [2]cpuWriter
	cpuCur  int
	// cpuOn tells whether the CPU profile currently records.
	cpuOn bool
	// The duty cycle: with cpuDuration > 0 the CPU profile records for
	// cpuDuration of each window, from cpuAt on; cpuFrom is when the
	// current recording started, and cpuData and cpuTo hold the recording
	// that ended within the window, until Collect decodes it.
	window, cpuDuration time.Duration
	// firstWindow is Config.FirstWindow.
	firstWindow    time.Duration
	cpuOffset      func(max time.Duration) time.Duration
	cpuAt, cpuFrom time.Time
	cpuTo          time.Time
	// cpuStopped is the clock just before the last recording was
	// stopped: every sample of a request that ended by then was in it.
	cpuStopped time.Time
	cpuData    []byte
	cpuPlanned bool
	// While requests are tracked, the CPU profile records in parts: a
	// part ends, and the next begins, when the tracker holds many roots
	// that only a CPU sample can name (requests.Tracker.PartDue), which
	// is looked at every cpuPartCheck from partCheck on. parts gathers
	// the parts that ended in the window.
	partCheck time.Time
	parts     cpuParts
	// While requests are tracked and the last window's goroutine
	// profile named requests that had ended that the one before did not
	// (outlived: goroutines go on outliving their requests), a goroutine
	// profile is also read within the window when the tracker asks for
	// one (requests.Tracker.SnapshotDue), looked at every snapshotCheck
	// from nextSnapshotCheck on, not before snapshotAllowed, into
	// snapshotBuf with snapshotDecoder. snapshots says the goroutine
	// profile is collected.
	snapshots         bool
	outlived          bool
	nextSnapshotCheck time.Time
	snapshotAllowed   time.Time
	snapshotBuf       bytes.Buffer
	snapshotDecoder   pprofdecode.Decoder
	// cpuBusyLogged keeps the "CPU profiler in use" warning to once per
	// stretch of busy windows.
	cpuBusyLogged bool
	// maxGoroutines is Config.MaxGoroutines with the default applied; 0
	// is no limit.
	maxGoroutines int
	// goroutinesLogged keeps the "too many goroutines" warning to once per
	// stretch of skipped windows.
	goroutinesLogged bool
	deltas           map[string]*deltaState
	// every holds, by name, n for the profiles read only in the first
	// window, every nth after it and the last (see Interval).
	every map[string]int
	// windows counts the windows ended so far.
	windows int
	// sources holds the profiles that are not read from runtime/pprof.
	sources map[string]Source
	// recorders holds the running recorders of the profiles that have one.
	recorders   map[string]Recorder
	windowStart time.Time
	// slowThreshold is Config.SlowThreshold.
	slowThreshold time.Duration
	// maxRoutes and maxRoots are Config.MaxRoutes and MaxRoots, and
	// tracker the requests tracker the collector uses from Start to Stop;
	// nil when another one is installed. ownTracker says the collector
	// installed it, and stops it at Stop; otherwise it is Config.Tracker,
	// which outlives it.
	maxRoutes  int
	maxRoots   int
	tracker    *requests.Tracker
	ownTracker bool
	// settle is Config.Settle.
	settle time.Duration
	// stretches is told by the recorders when they record and which
	// roots their samples name, and cpuStretches by the CPU profile's
	// parts, for the tracker: it remembers only the roots a sample
	// named.
	stretches, cpuStretches *requests.Stretches
}

// Config configures a Collector. Zero fields take runtime/pprof defaults.
type Config struct {
	// Profiles lists the runtime profiles to collect, by name.
	Profiles []string
	Source   Source
	CPU      CPUProfiler
	Logger   *slog.Logger
	// Omissions receives the counts; may be nil.
	Omissions *Omissions
	// MaxGoroutines is the number of running goroutines above which a
	// window goes without its goroutine profile, counted in
	// Stats.GoroutineProfilesSkipped and logged. 0 takes DefaultMaxGoroutines; a
	// negative value sets no limit.
	MaxGoroutines int
	// Window is the length of a window. With Intervals, the interval of
	// each profile whose descriptor has one, by name (missing: the
	// descriptor's Default), it says which windows read such a profile; a
	// zero Window reads it every window.
	Window    time.Duration
	Intervals map[string]time.Duration
	// CPUDuration is the part of the window the CPU profile records: a
	// duty cycle. A CPUDuration of 0, or not less than Window, records the
	// CPU profile through every window, back to back. Otherwise the
	// recording starts at a random offset in each window (see CPUOffset)
	// and the caller drives it: NextChange says when to call Change.
	CPUDuration time.Duration
	// CPUOffset returns where in the window the CPU profile starts, in
	// [0, max]; nil draws it uniformly at random. Tests replace it.
	CPUOffset func(max time.Duration) time.Duration
	// SlowThreshold is the least duration of a request that the off-CPU
	// recorder explains as slow; 0 takes its default.
	SlowThreshold time.Duration
	// FirstWindow, when shorter than Window, is the length of the first
	// window: its CPU profile then records from Start on, to the end of
	// the window or of the CPU duration, whichever comes first.
	FirstWindow time.Duration
	// MaxRoutes bounds the distinct routes of a window's requests
	// (requests.Config.MaxRoutes). 0 follows no requests: no tracker is
	// installed, and samples go without routes.
	MaxRoutes int
	// Tracker, when set, is the installed requests tracker the collector
	// uses, configured at Start, and leaves running at Stop: the
	// requests running when one collector hands over to the next are
	// counted when they end. Nil installs one from Start to Stop.
	Tracker *requests.Tracker
	// MaxRoots bounds the roots a window remembers
	// (requests.Config.MaxRoots); 0 takes the default.
	MaxRoots int
	// Settle is how long the end of a window that starts another waits,
	// at most, for the requests its samples name that may still be
	// renamed (requests.Requests.Settle); 0 takes
	// requests.DefaultSettle, a negative value does not wait.
	Settle time.Duration
}

// New returns a collector for the named profiles. It reads nothing until
// Start.
func New(cfg Config) (*Collector, error) {
	c := &Collector{
		names:   cfg.Profiles,
		source:  cfg.Source,
		cpuProf: cfg.CPU,
		logger:  cfg.Logger,
		stats:   cfg.Omissions,
		deltas:  make(map[string]*deltaState),
		sources: make(map[string]Source),
		every:   make(map[string]int),

		recorders: make(map[string]Recorder),

		reusable: make(map[string]*reusedProfile),

		maxGoroutines: cfg.MaxGoroutines,
		snapshots:     slices.Contains(cfg.Profiles, Goroutine),

		window:        cfg.Window,
		firstWindow:   cfg.FirstWindow,
		slowThreshold: cfg.SlowThreshold,
		cpuOffset:     cfg.CPUOffset,
		maxRoutes:     cfg.MaxRoutes,
		maxRoots:      cfg.MaxRoots,
		tracker:       cfg.Tracker,
		settle:        cfg.Settle,
		stretches:     new(requests.Stretches),
		cpuStretches:  new(requests.Stretches),
	}
	c.defaults(cfg)
	if err := c.addProfiles(cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// defaults fills in what cfg left at zero.
func (c *Collector) defaults(cfg Config) {
	if c.settle == 0 {
		c.settle = requests.DefaultSettle
	}
	if cfg.CPUDuration > 0 && cfg.CPUDuration < cfg.Window {
		c.cpuDuration = cfg.CPUDuration
	}
	if c.cpuOffset == nil {
		c.cpuOffset = randomOffset
	}
	switch {
	case c.maxGoroutines == 0:
		c.maxGoroutines = DefaultMaxGoroutines
	case c.maxGoroutines < 0:
		c.maxGoroutines = 0
	}
	if c.source == nil {
		c.source = RuntimeSource
	}
	if c.cpuProf.Start == nil {
		c.cpuProf = CPUProfiler{Start: pprof.StartCPUProfile, Stop: pprof.StopCPUProfile}
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if c.stats == nil {
		c.stats = new(Omissions)
	}
}

// addProfiles looks up the profiles c collects, and sets up the delta
// state, source and interval of those that have one.
func (c *Collector) addProfiles(cfg Config) error {
	for _, name := range c.names {
		d, ok := Lookup(name)
		if !ok {
			return fmt.Errorf("collect: unknown profile %q", name)
		}
		if err := d.check(); err != nil {
			return err
		}
		if d.cumulative() {
			c.deltas[name] = newDeltaState(d.Values, d.Cumulative...)
		}
		if d.Source != nil {
			c.sources[name] = d.Source
		}
		if d.Interval != nil {
			interval, ok := cfg.Intervals[name]
			if !ok {
				interval = d.Interval.Default
			}
			c.every[name] = windowsApart(interval, cfg.Window)
		}
	}
	return nil
}

// startTracker installs the requests tracker, which the label wrapper
// reports local root spans to. Only one is installed in a process, as only
// one profiler runs; should another be, the windows go without routes
// and request counts, and say so once.
func (c *Collector) startTracker() {
	if c.maxRoutes <= 0 {
		c.tracker = nil
		return
	}
	cfg := requests.Config{MaxRoutes: c.maxRoutes, MaxRoots: c.maxRoots, Stretches: c.stretches, Parts: c.cpuStretches}
	for _, rec := range c.recorders {
		if sr, ok := rec.(SlowRecorder); ok {
			// A request is watched once it has run half the threshold,
			// so that at least half of any slow request is traced.
			threshold := c.slowThreshold
			if threshold <= 0 {
				threshold = DefaultSlowThreshold
			}
			cfg.LongAfter = threshold / 2
			// The off-CPU samples name the root, not its route.
			cfg.LabelledRoots = true
			cfg.OnLong = func(r *requests.Request) { sr.Watch(r.IDs(), r.Route(), r.Start()) }
			cfg.OnEnd = func(r *requests.Request) {
				if end, ok := r.Ended(); ok {
					sr.Ended(r.IDs(), r.Route(), r.Start(), end)
				}
			}
		}
	}
	if c.tracker != nil {
		c.tracker.Configure(cfg)
		return
	}
	t := requests.New(cfg)
	if err := t.Install(); err != nil {
		c.logger.Warn("pprofotel: samples carry no route and windows no request counts: another request tracker is installed", "error", err)
		return
	}
	c.tracker, c.ownTracker = t, true
}

// Abandon undoes what a Start that failed midway (a panic, which the
// profiler turns into Start's error) left installed for the process: the
// request tracker. The Collector is not used afterwards.
func (c *Collector) Abandon() {
	if c.tracker != nil && c.ownTracker {
		c.tracker.Stop()
	}
	c.tracker = nil
}

// endRequests ends the window of the requests tracker at now: it gives the
// samples of w's profiles their request's route in place of its root
// span id, and adds the request counts profile. When next is set, it
// first waits, up to the settle time, for the requests the samples name
// that may still be renamed, and has the next window remember the routes
// of the ended requests whose goroutines the goroutine profiles found
// (requests.Tracker.Carry); otherwise a tracker the collector installed
// is stopped.
func (c *Collector) endRequests(w *Window, now time.Time, next bool) {
	var q requests.Requests
	if c.tracker != nil {
		q = c.tracker.Window(now)
		if !next {
			if c.ownTracker {
				c.tracker.Stop()
			}
			c.tracker = nil
		}
		c.stats.RoutesOverflowed.Add(q.Overflowed)
		c.stats.RoutesUnknown.Add(q.Dropped)
		c.stats.RequestsAgedOut.Add(q.AgedOut)
		if next && c.settle > 0 {
			if ids := unsettled(w, &q); len(ids) > 0 {
				q.Settle(ids, c.settle)
			}
		}
	}
	var snapshot []string
	if next && c.tracker != nil {
		snapshot = snapshotRoots(w)
	}
	for _, p := range w.Profiles {
		labelRoutes(p.Data, &q, isSnapshot(p.Name))
	}
	c.outlived = false
	if len(snapshot) > 0 {
		c.outlived = c.tracker.Carry(&q, snapshot) > 0
		if c.outlived && c.nextSnapshotCheck.Before(now) {
			c.nextSnapshotCheck = now.Add(snapshotCheck)
		}
	}
	if p := requestsProfile(q.Counts); p != nil {
		w.Profiles = append(w.Profiles, Profile{Name: Requests, Data: p})
	}
}

// windowsApart is the number of windows of length window that make at
// least interval, 1 for any interval within one window.
func windowsApart(interval, window time.Duration) int {
	if window <= 0 || interval <= window {
		return 1
	}
	n := interval / window
	if interval%window != 0 {
		n++
	}
	return int(n)
}

// Start begins the first window at now: it starts the CPU profile and
// records the baselines of the cumulative profiles, so that the first
// window reports only what happens after Start.
func (c *Collector) Start(now time.Time) {
	c.windowStart = now
	for _, name := range c.names {
		if d, _ := Lookup(name); d.Recorder != nil {
			c.recorders[name] = d.Recorder(now, RecorderConfig{Logger: c.logger, Omissions: c.stats, SlowThreshold: c.slowThreshold, Stretches: c.stretches})
		}
		if d, ok := c.deltas[name]; ok {
			d.reset()
			p, err := c.read(name)
			if err == nil {
				err = d.apply(p)
			}
			if err != nil {
				c.fail(name, err)
			}
		}
	}
	// After the recorders: the tracker reports long requests to the one
	// that explains them.
	c.startTracker()
	if c.enabled(CPU) {
		if c.firstWindow > 0 && c.firstWindow < c.window {
			// A random offset in a window longer than the first could
			// fall after its end: record from the start instead.
			c.startCPU(now)
		} else {
			c.planCPU(now)
		}
	}
}

// Collect ends the current window at now, starts the next one, and returns
// the ended window's profiles. A profile that cannot be read is left out of
// the window, counted and logged; the others are unaffected.
func (c *Collector) Collect(now time.Time) Window {
	return c.collect(now, true)
}

// Stop ends the current window at now like Collect, but starts no new one:
// the CPU profile is stopped for good.
func (c *Collector) Stop(now time.Time) Window {
	return c.collect(now, false)
}

func (c *Collector) collect(now time.Time, next bool) Window {
	w := Window{Start: c.windowStart, End: now, Profiles: make([]Profile, 0, len(c.names)+1)}
	var slow *pprofdecode.Profile
	if c.tracker != nil {
		// The slow-request recorder explains in this window the requests
		// that ended in it.
		c.tracker.Sweep(now)
	}
	for _, name := range c.names {
		var (
			p   *pprofdecode.Profile
			err error
		)
		var from, to time.Time
		if rec, ok := c.recorders[name]; ok {
			p, err = rec.Collect(now, !next)
			if !next {
				delete(c.recorders, name)
			}
			if sr, ok := rec.(SlowRecorder); ok && err == nil {
				slow = sr.Slow()
			}
		} else if name == CPU {
			p, from, to, err = c.cycleCPU(now, next)
			if p == nil && err == nil {
				continue // no CPU profile recorded in this window
			}
		} else {
			if name == Goroutine && c.tooManyGoroutines() {
				continue
			}
			if n := c.every[name]; n > 1 && next && c.windows%n != 0 {
				continue // read in the first window, every nth, and at Stop
			}
			p, err = c.read(name)
		}
		if err != nil {
			c.fail(name, err)
			continue
		}
		if d, ok := c.deltas[name]; ok {
			// The delta reads every stack while still packed and drops
			// most of them; only the stacks it keeps are decoded.
			if err = d.apply(p); err == nil {
				err = c.reusable[name].decoder.ResolveLocations(p)
			}
			if err != nil {
				c.fail(name, err)
				continue
			}
		}
		w.Profiles = append(w.Profiles, Profile{Name: name, Data: p, Start: from, End: to})
	}
	if slow != nil {
		w.Profiles = append(w.Profiles, Profile{Name: SlowRequests, Data: slow})
	}
	c.endRequests(&w, now, next)
	c.windowStart = now
	c.windows++
	return w
}

// cycleCPU ends the window's CPU recording at now, plans (or, when
// continuous, starts) the next window's when next is set, and decodes what
// was recorded. It returns nil, nil when no CPU profile was recorded during
// the window. Under a duty cycle it also returns the time range recorded;
// a continuous profile covers the window, and from and to are zero.
func (c *Collector) cycleCPU(now time.Time, next bool) (p *pprofdecode.Profile, from, to time.Time, err error) {
	c.stopCPU(now)
	data := c.cpuData
	if c.cpuDuration > 0 {
		from, to = c.cpuFrom, c.cpuTo
	}
	c.cpuData = nil
	c.cpuPlanned = false
	if next {
		c.planCPU(now)
	}
	if data != nil {
		p, err = c.readPart(data)
	}
	if c.parts.p == nil {
		return p, from, to, err
	}
	// The window's earlier parts are sent even when its last is lost.
	if err == nil && p != nil {
		err = c.parts.add(p)
	}
	if err != nil {
		c.fail(CPU, fmt.Errorf("the last part of the CPU profile: %w", err))
	}
	return c.parts.take(), from, to, nil
}

// readPart decodes data, a part of the CPU profile, and tells the
// tracker the roots its samples name.
func (c *Collector) readPart(data []byte) (*pprofdecode.Profile, error) {
	p, err := c.decoder.Decode(data)
	if err == nil {
		c.cpuStretches.Named(sampledRoots(p), c.cpuStopped)
	}
	return p, err
}

// cpuPartCheck is how often, while the CPU profile records, the
// collector asks the tracker whether a part is due.
const cpuPartCheck = 100 * time.Millisecond

// nextPart ends the CPU profile's part at now and begins the next, when
// the tracker asks for it: the part is read at once, and the tracker told
// the roots its samples name.
func (c *Collector) nextPart(now time.Time) {
	c.partCheck = now.Add(cpuPartCheck)
	if c.tracker == nil || !c.tracker.PartDue() {
		return
	}
	// The roots that ended so far are pending as ended before the
	// part's end: its verdict covers them.
	c.tracker.Sweep(now)
	from := c.cpuFrom
	c.stopCPU(now)
	data := c.cpuData
	c.cpuData = nil
	c.startCPU(now)
	c.cpuFrom = from
	if data == nil {
		return
	}
	p, err := c.readPart(data)
	if err == nil {
		err = c.parts.add(p)
		// The tracker hears the part's roots now, for PartDue.
		c.tracker.Hear()
	}
	if err != nil {
		c.fail(CPU, fmt.Errorf("a part of the CPU profile: %w", err))
	}
}

// planCPU decides when the CPU profile records in the window that starts
// at windowStart, and starts it at once when that is now. The offset is
// random in each window, so that work that recurs with the window, or
// with any fixed phase to the windows, is not always missed, nor always
// caught.
func (c *Collector) planCPU(windowStart time.Time) {
	c.cpuAt = windowStart
	if c.cpuDuration > 0 {
		c.cpuAt = windowStart.Add(min(max(c.cpuOffset(c.window-c.cpuDuration), 0), c.window-c.cpuDuration))
	}
	if c.cpuAt.After(windowStart) {
		c.cpuPlanned = true
		return
	}
	c.startCPU(windowStart)
}

// NextChange returns when Change must next be called: to start or stop
// the CPU profile of the duty cycle, while it records and requests are
// tracked to look whether a part is due, and while goroutines outlive
// their requests to look whether a goroutine profile is due (snapshot);
// false when nothing changes before the window ends.
func (c *Collector) NextChange() (time.Time, bool) {
	at, ok := c.nextCPUChange()
	if c.watchingSnapshots() && (!ok || c.nextSnapshotCheck.Before(at)) {
		return c.nextSnapshotCheck, true
	}
	return at, ok
}

// Change does what NextChange planned for now or before.
func (c *Collector) Change(now time.Time) {
	if at, ok := c.nextCPUChange(); ok && !now.Before(at) {
		c.changeCPU(now)
	}
	if c.watchingSnapshots() && !now.Before(c.nextSnapshotCheck) {
		c.snapshot(now)
	}
}

// nextCPUChange returns when the CPU profile of the duty cycle starts or
// stops next, or, while it records and requests are tracked, when to look
// whether a part is due; false when nothing changes before the window
// ends: the CPU profile is continuous and no requests are tracked, or it
// already recorded in this window.
func (c *Collector) nextCPUChange() (time.Time, bool) {
	switch {
	case c.cpuOn && c.tracker != nil:
		if end := c.cpuFrom.Add(c.cpuDuration); c.cpuDuration > 0 && end.Before(c.partCheck) {
			return end, true
		}
		return c.partCheck, true
	case c.cpuDuration == 0:
		return time.Time{}, false
	case c.cpuOn:
		return c.cpuFrom.Add(c.cpuDuration), true
	case c.cpuPlanned:
		return c.cpuAt, true
	}
	return time.Time{}, false
}

// changeCPU starts or stops the CPU profile of the duty cycle, or ends
// its part when one is due, as nextCPUChange planned for now or before.
func (c *Collector) changeCPU(now time.Time) {
	switch {
	case c.cpuOn && c.cpuDuration > 0 && !now.Before(c.cpuFrom.Add(c.cpuDuration)):
		c.stopCPU(now)
	case c.cpuOn:
		c.nextPart(now)
	default:
		c.cpuPlanned = false
		c.startCPU(now)
	}
}

// stopCPU ends the CPU recording at now and keeps what it recorded for
// the window's Collect.
func (c *Collector) stopCPU(now time.Time) {
	if !c.cpuOn {
		return
	}
	w := &c.cpuBufs[c.cpuCur]
	c.cpuOn = false
	c.cpuCur ^= 1
	if w.claim() {
		// Someone else stopped the profile: what it recorded is
		// theirs, and the profiler may already be theirs again, so
		// it is not stopped here.
		c.stats.CPUProfilesSkipped.Add(1)
		c.logger.Warn("pprofotel: CPU profile skipped: the CPU profiler was stopped elsewhere (pprof.StopCPUProfile) during the window; restarting it")
		c.cpuStretches.End()
		return
	}
	c.cpuStopped = time.Now()
	c.cpuProf.Stop()
	c.cpuStretches.End()
	c.cpuData, c.cpuTo = w.bytes(), now
}

// startCPU starts recording into the current CPU buffer at now. When
// another user holds the CPU profiler the window goes without CPU data;
// the next window tries again.
func (c *Collector) startCPU(now time.Time) {
	buf := &c.cpuBufs[c.cpuCur]
	buf.reset()
	c.cpuStretches.Begin()
	if err := c.cpuProf.Start(buf); err != nil {
		c.cpuStretches.Cancel()
		c.stats.CPUProfilesSkipped.Add(1)
		if !c.cpuBusyLogged {
			c.logger.Warn("pprofotel: CPU profile skipped: the CPU profiler is in use elsewhere; will retry every window",
				"error", err)
			c.cpuBusyLogged = true
		}
		return
	}
	if c.cpuBusyLogged {
		c.logger.Info("pprofotel: CPU profiling resumed")
		c.cpuBusyLogged = false
	}
	c.cpuOn, c.cpuFrom = true, now
	c.partCheck = now.Add(cpuPartCheck)
}

// snapshotCheck is how often, while goroutines outlive their requests,
// the collector asks the tracker whether a goroutine profile is due. Two
// such profiles are minSnapshotGap apart at least, and snapshotShare
// times the time the first took: a goroutine profile holds up the
// application's goroutines while it is written, in time proportional to
// their number, and within a window it takes at most a hundredth of the
// time.
const (
	snapshotCheck  = 100 * time.Millisecond
	minSnapshotGap = time.Second
	snapshotShare  = 100
)

// watchingSnapshots reports whether the collector looks for goroutine
// profiles due within the window.
func (c *Collector) watchingSnapshots() bool {
	return c.snapshots && c.outlived && c.tracker != nil
}

// snapshot reads a goroutine profile within the window, when the tracker
// asks for one and snapshotAllowed has come, and tells the tracker the
// roots its samples name: the requests that goroutines outlived are
// remembered before the window's last renamed roots give way to others.
// It reads nothing while the window's own goroutine profile would be
// skipped (MaxGoroutines).
func (c *Collector) snapshot(now time.Time) {
	c.nextSnapshotCheck = now.Add(snapshotCheck)
	if !c.tracker.SnapshotDue() || now.Before(c.snapshotAllowed) ||
		c.maxGoroutines > 0 && runtime.NumGoroutine() > c.maxGoroutines {
		return
	}
	began := time.Now()
	defer func() {
		c.snapshotAllowed = now.Add(max(minSnapshotGap, snapshotShare*time.Since(began)))
	}()
	c.snapshotBuf.Reset()
	// A failure here is the window's own goroutine profile's too, and
	// reported with it.
	if c.sourceOf(Goroutine)(Goroutine, &c.snapshotBuf) != nil {
		return
	}
	if p, err := c.snapshotDecoder.Decode(c.snapshotBuf.Bytes()); err == nil {
		c.tracker.Snapshot(sampledRoots(p))
	}
}

// randomOffset draws an offset uniformly from [0, max].
func randomOffset(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	return rand.N(max + 1)
}

// tooManyGoroutines reports whether more goroutines run than the goroutine
// profile may be written for, counting and logging the skipped profile.
func (c *Collector) tooManyGoroutines() bool {
	n := runtime.NumGoroutine()
	if c.maxGoroutines > 0 && n > c.maxGoroutines {
		c.stats.GoroutineProfilesSkipped.Add(1)
		if !c.goroutinesLogged {
			c.logger.Warn("pprofotel: goroutine profile skipped: writing it would hold up the application for too long; will check every window",
				"goroutines", n, "limit", c.maxGoroutines)
			c.goroutinesLogged = true
		}
		return true
	}
	if c.goroutinesLogged {
		c.logger.Info("pprofotel: goroutine profile resumed", "goroutines", n, "limit", c.maxGoroutines)
		c.goroutinesLogged = false
	}
	return false
}

// cpuWriter receives a CPU profile. runtime/pprof writes the profile only
// once it stops, so a write before the collector claims the profile to stop
// it means that someone else stopped it.
type cpuWriter struct {
	// mu orders the profile writer's goroutine against the collector.
	mu      sync.Mutex
	buf     bytes.Buffer
	claimed bool // the collector is stopping the profile
	early   bool // written to before it was claimed
}

func (w *cpuWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.claimed {
		w.early = true
	}
	return w.buf.Write(p)
}

// claim marks the profile as stopped by the collector from now on, and
// reports whether it had been stopped by someone else.
func (w *cpuWriter) claim() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.claimed = true
	return w.early
}

// bytes returns the recorded profile, once stopped.
func (w *cpuWriter) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Bytes()
}

// reset empties the writer for the next profile.
func (w *cpuWriter) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Reset()
	w.claimed, w.early = false, false
}

// read writes the named profile into a reused buffer and decodes it into
// the profile's reused memory.
func (c *Collector) read(name string) (*pprofdecode.Profile, error) {
	c.buf.Reset()
	if err := c.sourceOf(name)(name, &c.buf); err != nil {
		return nil, err
	}
	r := c.reusable[name]
	if r == nil {
		r = new(reusedProfile)
		_, r.decoder.DeferLocations = c.deltas[name]
		c.reusable[name] = r
	}
	if err := r.decoder.DecodeInto(&r.profile, c.buf.Bytes()); err != nil {
		return nil, err
	}
	return &r.profile, nil
}

// sourceOf returns the Source the profile named name is read from.
func (c *Collector) sourceOf(name string) Source {
	if s, ok := c.sources[name]; ok {
		return s
	}
	return c.source
}

// reusedProfile is a profile decoded into the same memory every window.
type reusedProfile struct {
	decoder pprofdecode.Decoder
	profile pprofdecode.Profile
}

func (c *Collector) fail(name string, err error) {
	c.stats.ProfilesLeftOut.Add(1)
	c.logger.Warn("pprofotel: profile left out of the window", "profile", name, "error", err)
}

func (c *Collector) enabled(name string) bool { return slices.Contains(c.names, name) }
