package offcpu

import (
	"encoding/binary"
	"errors"
	"io"
	"iter"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"

	"github.com/pprofotel/profiler/internal/collect/pprofdecode"
	"github.com/pprofotel/profiler/internal/labelkey"
	"github.com/pprofotel/profiler/internal/otlpattr"
)

// ReasonKey is the label, and so the OTLP sample attribute, that carries
// why a goroutine waited, as the execution trace names it ("chan receive",
// "select", "sync", "network", "sleep", "syscall", "preempted", ...).
const ReasonKey = otlpattr.WaitReason

// ReasonSyscall names the waits in a system call, for which the trace gives
// no reason of its own.
const ReasonSyscall = "syscall"

// ignoredReasons are the waits of the runtime's own goroutines (GC
// workers, the background sweeper, the scavenger), idle by design: left
// out by reason too, for a wait whose stack the trace does not give
// (skipStack leaves out the rest).
var ignoredReasons = map[string]bool{
	"system goroutine wait":      true,
	"GC background sweeper wait": true,
	"GC weak to strong wait":     true,
	"wait for debug call":        true,
	"forever":                    true,
}

// window accumulates the waits of one window, in the tables of the
// profile it becomes.
type window struct {
	maxWaits int
	// sampleType is the one sample type of the profile it becomes;
	// period, when not 0, its period, in units of sampleType.
	sampleType pprofdecode.ValueType
	period     int64
	// traced is the time the trace covered in the window, which the
	// Recorder adds up; partial is set when a stretch traced into it at
	// a duty cycle below 100 %, and its values are then scaled by the
	// window's length over traced. At 100 % they are the waits seen.
	traced  time.Duration
	partial bool

	kinds  []kind
	byKind map[kindKey]int32
	events []event
	// roots are the local root span ids the kinds added since the
	// Recorder last told them name; rootKinds the kinds of each root
	// span id, whose route a later record may change (reroute).
	roots     []string
	rootKinds map[string][]int32

	tables
}

// tables are the locations and functions of a profile under way, each
// added once.
type tables struct {
	locations []pprofdecode.Location
	functions []pprofdecode.Function
	byFrame   map[trace.StackFrame]int32
	byFunc    map[funcKey]int32
}

// kind is what waits of the same identity share: stack, reason, span.
type kind struct {
	locations []int32
	labels    []pprofdecode.Label
}

type kindKey struct {
	// reason is the wait's reason in the off-CPU profile, and the
	// state, reason and before-trace mark in the slow-request profile.
	stack, reason, span string
}

type funcKey struct {
	name, file string
}

// event is one wait: its kind, when it began (Unix nanoseconds) and how
// long it lasted.
type event struct {
	kind       int32
	start, dur int64
}

func newWindow(maxWaits int, sampleType pprofdecode.ValueType) *window {
	// The off-CPU profile has no period: Pyroscope knows off_cpu
	// without one. Any other profile needs a period type there, and every
	// interval of the slow-request profile is recorded: a period of 1.
	var period int64
	if sampleType != SampleType {
		period = 1
	}
	return &window{
		maxWaits:   maxWaits,
		sampleType: sampleType,
		period:     period,
		byKind:     make(map[kindKey]int32),
		rootKinds:  make(map[string][]int32),
		tables: tables{
			byFrame: make(map[trace.StackFrame]int32),
			byFunc:  make(map[funcKey]int32),
		},
	}
}

// reset empties w for the next window, keeping its memory.
func (w *window) reset() {
	w.traced, w.partial = 0, false
	w.kinds = w.kinds[:0]
	clear(w.byKind)
	w.roots = w.roots[:0]
	clear(w.rootKinds)
	w.events = w.events[:0]
	w.locations = w.locations[:0]
	w.functions = w.functions[:0]
	clear(w.byFrame)
	clear(w.byFunc)
}

func (w *window) full() bool { return len(w.events) >= w.maxWaits }

// goroutine is what the parser knows of one goroutine.
type goroutine struct {
	// waiting is set from the moment the goroutine stopped running within
	// the stretch until it runs again.
	waiting bool
	start   trace.Time
	reason  string
	stack   trace.Stack
	// span is the hex trace id and span id of the active span, as the
	// label wrapper logged them; "" for none. It is known once the
	// goroutine was created in the stretch or logged a span change;
	// until then its waits are pending, recorded without a link and
	// linked to the span the first change names as the one before.
	span  string
	known bool
	// pending are the window's events (indexes into window.events) of
	// the waits recorded before the span was known.
	pending []int32
	// startWall, when not 0, is when the wait began, in Unix
	// nanoseconds, for a wait that crossed from one trace into the next
	// (carry, cross); then start is not used. until is where the trace
	// before was read to, and confirm is set until the goroutine's first
	// transition in the next trace says whether the wait went on between
	// the two traces (confirm).
	startWall, until int64
	confirm          bool

	// For the slow-request timelines: the state since when, with its
	// reason and stack; root is the local root span id of the span now
	// (16 hex digits), wt its watched request as of watch generation
	// wgen, and pend what is kept while the span is not known.
	st      gstate
	since   int64
	sreason string
	sstk    trace.Stack
	root    string
	wt      *watch
	wgen    int
	pend    *timeline
	// samples are the stacks of the CPU profile's samples of the
	// goroutine since it began running.
	samples []trace.Stack
	// found is set while the state is the one a trace found the
	// goroutine in (its status), until it changes.
	found bool
	// unclaimed marks a goroutine created in the trace by one whose span
	// was not known: nothing is kept of it until its span is.
	unclaimed bool
}

// reading is the reading of one stretch's trace into a window, chunk by
// chunk: what it knows of the goroutines carries over from one chunk to
// the next, so that a wait that begins in one and ends in another counts
// once, whole.
type reading struct {
	w          *window
	goroutines map[trace.GoID]*goroutine
	// spanRoots counts the goroutines whose span is under each local
	// root span id; renamed holds the last route a record gave a root
	// whose span more goroutines than the one that wrote it share (one
	// its request started, or one in a span of its own under it), for
	// their waits kept afterwards (setSpan, spanOf).
	spanRoots map[string]int
	renamed   map[string]string
	// stacks maps the trace's stacks to the window's locations, or marks
	// them left out.
	stacks   map[trace.Stack]stackLocations
	stackKey []byte

	// clock converts trace time to wall-clock time, from the trace's
	// clock snapshots; wallStart stands in until one is seen.
	haveClock  bool
	clockTrace trace.Time
	clockWall  int64
	wallStart  int64

	// first and last are the first and last events read; covered is the
	// time between them, once finished.
	first, last trace.Time
	seen        bool
	covered     time.Duration
	// truncated is set when the window's wait limit ended the reading.
	truncated bool

	// noWaits leaves out the waits (a trace read for slow requests
	// only); waitsUntil, when not 0, ends them at that Unix nanosecond
	// (a stretch traced on for slow requests past its length).
	noWaits    bool
	waitsUntil int64
	// slow is the recorder's watched requests; pending counts the
	// intervals kept for goroutines whose span is not known yet, and
	// frames the stacks' frames.
	slow    *slowState
	pending int
	frames  map[trace.Stack][]trace.StackFrame
	// poll, when set, is called every pollEvery events (polled counts
	// them): the recorder takes in the tracker's reports while it reads.
	poll   func()
	polled int
}

// errTruncated reports a trace that ends in the middle of a generation,
// which is read up to there.
var errTruncated = errors.New("offcpu: trace truncated")

// newReading starts reading a stretch into w. wallStart is the wall-clock
// time the stretch began, used only when the trace carries no clock
// snapshot.
func (w *window) newReading(wallStart time.Time) *reading {
	return &reading{
		w:          w,
		goroutines: make(map[trace.GoID]*goroutine),
		spanRoots:  make(map[string]int),
		renamed:    make(map[string]string),
		stacks:     make(map[trace.Stack]stackLocations),
		frames:     make(map[trace.Stack][]trace.StackFrame),
		wallStart:  wallStart.UnixNano(),
	}
}

// read adds the waits of the chunk in r, a trace of whole generations
// that follow those read before. A chunk that cannot be read to its end
// is kept up to where it could be, and its error returned.
func (s *reading) read(r io.Reader) error {
	rd, err := trace.NewReader(r)
	if err != nil {
		return err
	}
	for !s.truncated {
		ev, err := rd.ReadEvent()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return errors.Join(errTruncated, err)
		}
		s.event(&ev)
		if s.poll != nil {
			if s.polled++; s.polled%pollEvery == 0 {
				s.poll()
			}
		}
	}
	return nil
}

// pollEvery is how many events a reading reads between calls of its poll.
const pollEvery = 4096

// finish counts the waits still open up to the last event read, and
// returns the time the reading covered: from the first event to the last.
func (s *reading) finish() time.Duration {
	s.finishSlow()
	for _, g := range s.goroutines {
		if g.waiting && !s.w.full() {
			g.waiting = false
			s.addAt(g, s.wall(s.last))
		}
	}
	if s.seen {
		s.covered += s.last.Sub(s.first)
		s.seen = false
	}
	return s.covered
}

func (s *reading) goroutine(id trace.GoID) *goroutine {
	g := s.goroutines[id]
	if g == nil {
		g = new(goroutine)
		s.goroutines[id] = g
	}
	return g
}

func (s *reading) event(ev *trace.Event) {
	t := ev.Time()
	if !s.seen {
		s.first, s.seen = t, true
	}
	if t > s.last {
		s.last = t
	}
	switch ev.Kind() {
	case trace.EventSync:
		if cs := ev.Sync().ClockSnapshot; cs != nil && !s.haveClock {
			s.haveClock, s.clockTrace, s.clockWall = true, cs.Trace, cs.Wall.UnixNano()
		}
	case trace.EventStackSample:
		if s.slow.watching() && ev.Goroutine() != trace.NoGoroutine {
			s.cpuSample(ev.Goroutine(), ev.Stack())
		}
	case trace.EventLog:
		if l := ev.Log(); l.Category == labelkey.TraceLogCategory && ev.Goroutine() != trace.NoGoroutine {
			s.spanSwitch(ev, s.goroutine(ev.Goroutine()), l.Message)
		}
	case trace.EventStateTransition:
		st := ev.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine {
			return
		}
		s.transition(ev, &st, t)
	}
}

// spanSwitch applies a log record of the label wrapper, "now;before" or
// "now;before;route", to g: the waits g had pending are linked to before,
// and its waits from now on to now and its request's route.
func (s *reading) spanSwitch(ev *trace.Event, g *goroutine, msg string) {
	now, rest, _ := strings.Cut(msg, ";")
	before, route, _ := strings.Cut(rest, ";")
	s.slowSpanSwitch(g, ev.Goroutine(), now, before, ev.Time(), ev.Stack())
	if !g.known {
		for _, i := range g.pending {
			e := &s.w.events[i]
			kd := &s.w.kinds[e.kind]
			e.kind = s.kindOf(kd.locations, kd.labels[0].Str, before)
		}
		g.pending, g.known = nil, true
	}
	// The route follows the span's spelling: splitSpan reads it there.
	if len(now) != spanLen || route == "" {
		s.setSpan(g, now)
		return
	}
	s.setSpan(g, now+route)
	if root := rootOf(now); root != "" && now == before {
		s.w.reroute(root, route)
		if s.spanRoots[root] > 1 {
			s.renamed[root] = route
		}
	}
}

// setSpan makes span g's span, counting the goroutines under each root.
func (s *reading) setSpan(g *goroutine, span string) {
	if root := rootOf(g.span); root != "" {
		if s.spanRoots[root]--; s.spanRoots[root] <= 0 {
			delete(s.spanRoots, root)
			delete(s.renamed, root)
		}
	}
	g.span = span
	if root := rootOf(span); root != "" {
		s.spanRoots[root]++
	}
}

// spanOf returns g's span, spelled with the last route a record gave
// its request since g's span was set.
func (s *reading) spanOf(g *goroutine) string {
	if len(s.renamed) == 0 {
		return g.span
	}
	if route, ok := s.renamed[rootOf(g.span)]; ok && g.span[spanLen:] != route {
		g.span = g.span[:spanLen] + route
	}
	return g.span
}

// rootOf returns the local root span id of span, the wrapper's spelling
// of a span, "" when it names none.
func rootOf(span string) string {
	_, _, root, _, _ := splitSpan(span)
	return root
}

// reroute gives the waits of the request whose local root span id is
// root the route it was given since they were kept: the wrapper writes a
// record of a span to itself when its request's route changes (an
// http.route set, a span renamed as it ends), and a window gives every
// sample of a request its last route, as the request tracker does.
func (w *window) reroute(root, route string) {
	for _, k := range w.rootKinds[root] {
		ls := w.kinds[k].labels
		if i := slices.IndexFunc(ls, func(l pprofdecode.Label) bool { return l.Key == labelkey.Route }); i >= 0 {
			ls[i].Str = route
		}
	}
}

func (s *reading) transition(ev *trace.Event, st *trace.StateTransition, t trace.Time) {
	id := st.Resource.Goroutine()
	from, to := st.Goroutine()
	if s.slow != nil {
		s.slowTransition(ev, st, id, t)
	}
	if g := s.goroutines[id]; g != nil && g.confirm {
		s.confirm(g, from, to, st.Stack)
	}
	switch {
	case from == trace.GoNotExist && to == trace.GoRunnable:
		// Created: the new goroutine starts in its creator's span.
		g := s.goroutine(id)
		if ev.Goroutine() == trace.NoGoroutine {
			g.known = true // the runtime's, in no span
		} else {
			creator := s.goroutine(ev.Goroutine())
			s.setSpan(g, s.spanOf(creator))
			g.known, g.root = creator.known, creator.root
			// Created in the trace by a goroutine whose span is not
			// known: not the goroutine of a request begun before the
			// trace, which the trace found.
			g.unclaimed = !g.known
		}
	case to == trace.GoNotExist:
		if g := s.goroutines[id]; g != nil {
			if g.pend != nil {
				s.pending -= len(g.pend.intervals)
			}
			s.setSpan(g, "")
		}
		delete(s.goroutines, id)
	case from == trace.GoRunning && (to == trace.GoWaiting || to == trace.GoSyscall || to == trace.GoRunnable):
		reason := st.Reason
		if to == trace.GoSyscall {
			reason = ReasonSyscall
		}
		if reason == "" {
			reason = to.String()
		}
		if ignoredReasons[reason] {
			return
		}
		g := s.goroutine(id)
		stk := st.Stack
		if stk == trace.NoStack {
			stk = ev.Stack()
		}
		g.waiting, g.start, g.reason, g.stack = true, t, reason, stk
	case to == trace.GoRunning:
		if g, ok := s.goroutines[id]; ok && g.waiting {
			g.waiting = false
			s.addAt(g, s.wall(t))
		}
	}
}

// addAt records g's wait, which ended at end, Unix nanoseconds. A wait
// carried from the trace before is recorded even in a reading that leaves
// waits out: the short trace that starts a stretch.
func (s *reading) addAt(g *goroutine, end int64) {
	w := s.w
	carried := g.startWall != 0
	if w.full() || s.noWaits && !carried {
		return
	}
	start := g.startWall
	if !carried {
		start = s.wall(g.start)
	}
	g.startWall = 0
	dur := end - start
	if dur <= 0 {
		return
	}
	if s.waitsUntil != 0 {
		if start >= s.waitsUntil {
			return
		}
		dur = min(dur, s.waitsUntil-start)
	}
	k := s.kind(g.stack, g.reason, s.spanOf(g))
	if k < 0 {
		return
	}
	if !g.known {
		g.pending = append(g.pending, int32(len(w.events)))
	}
	w.events = append(w.events, event{kind: k, start: start, dur: dur})
	if w.full() {
		// Reading stops here, as though the stretch had ended now.
		s.truncated = true
		s.last = s.traceTime(end)
	}
}

// traceTime converts wall, Unix nanoseconds, to trace time; the inverse
// of wall.
func (s *reading) traceTime(wall int64) trace.Time {
	if s.haveClock {
		return s.clockTrace + trace.Time(wall-s.clockWall)
	}
	return s.first + trace.Time(wall-s.wallStart)
}

// wall converts trace time t to Unix nanoseconds.
func (s *reading) wall(t trace.Time) int64 {
	if s.haveClock {
		return s.clockWall + int64(t-s.clockTrace)
	}
	return s.wallStart + int64(t-s.first)
}

// kind returns the index of the kind of a wait on stack, for reason, in
// span; -1 for a wait left out (skipStack).
func (s *reading) kind(stack trace.Stack, reason, span string) int32 {
	w := s.w
	sl, ok := s.stacks[stack]
	if !ok {
		sl = w.stack(stack)
		s.stacks[stack] = sl
	}
	if sl.skip {
		return -1
	}
	return s.kindOf(sl.locs, reason, span)
}

// kindOf returns the index of the kind of a wait on the window's locations
// locs, for reason, in span, adding it when new.
func (s *reading) kindOf(locs []int32, reason, span string) int32 {
	w := s.w
	return w.kindOf(&s.stackKey, locs, reason, span, func() []pprofdecode.Label {
		ls := appendSpanLabels([]pprofdecode.Label{{Key: ReasonKey, Str: reason}}, span)
		if i := slices.IndexFunc(ls, func(l pprofdecode.Label) bool { return l.Key == labelkey.LocalRootSpanID }); i >= 0 {
			root := ls[i].Str
			w.roots = append(w.roots, root)
			w.rootKinds[root] = append(w.rootKinds[root], int32(len(w.kinds)))
		}
		return ls
	})
}

// kindOf returns the index of the kind of locs, reason and span, adding
// it, with the labels mk returns, when new. key is scratch space.
func (w *window) kindOf(key *[]byte, locs []int32, reason, span string, mk func() []pprofdecode.Label) int32 {
	*key = (*key)[:0]
	for _, l := range locs {
		*key = binary.LittleEndian.AppendUint32(*key, uint32(l))
	}
	kk := kindKey{stack: string(*key), reason: reason, span: span}
	if k, ok := w.byKind[kk]; ok {
		return k
	}
	k := int32(len(w.kinds))
	w.kinds = append(w.kinds, kind{locations: locs, labels: mk()})
	w.byKind[kk] = k
	return k
}

// appendSpanLabels appends the labels that link a sample to span, the
// wrapper's spelling of it, if it names one, and its request's route if
// the spelling carries it.
func appendSpanLabels(lbls []pprofdecode.Label, span string) []pprofdecode.Label {
	if traceID, spanID, rootID, route, ok := splitSpan(span); ok {
		if rootID != "" {
			lbls = append(lbls, pprofdecode.Label{Key: labelkey.LocalRootSpanID, Str: rootID})
		}
		if route != "" {
			lbls = append(lbls, pprofdecode.Label{Key: labelkey.Route, Str: route})
		}
		lbls = append(lbls, pprofdecode.Label{Key: labelkey.SpanID, Str: spanID}, pprofdecode.Label{Key: labelkey.TraceID, Str: traceID})
	}
	return lbls
}

// spanLen is the length of the wrapper's spelling of a span.
const spanLen = 64

// splitSpan splits the wrapper's spelling of a span (see
// labelkey.TraceLogCategory): the trace id's 32 hex digits, the span id's 16
// and the local root span id's 16, zeros for an unknown root, which
// splitSpan returns as "", then, as spanSwitch keeps it, the route of the
// span's request, if the record gave one.
func splitSpan(msg string) (traceID, spanID, rootID, route string, ok bool) {
	if len(msg) < spanLen {
		return "", "", "", "", false
	}
	traceID, spanID, rootID, route = msg[:32], msg[32:48], msg[48:spanLen], msg[spanLen:]
	if rootID == "0000000000000000" {
		rootID = ""
	}
	return traceID, spanID, rootID, route, true
}

// recorderFunc is the prefix of the Recorder's methods: it reads the trace
// while the trace runs, and its own waits are not the application's.
const recorderFunc = "github.com/pprofotel/profiler/internal/collect/offcpu.(*Recorder)."

// stackLocations is a stack's locations in the window, leaf first.
type stackLocations struct {
	locs []int32
	// skip marks a stack whose waits are left out (skipStack).
	skip bool
}

// stack returns the locations of stk, adding what is new to the window's
// tables.
func (w *window) stack(stk trace.Stack) stackLocations {
	if skipStack(stk.Frames()) {
		return stackLocations{skip: true}
	}
	return stackLocations{locs: w.locationsOf(stk.Frames())}
}

// skipStack reports whether frames, leaf first, are the stack of a
// goroutine whose waits are not the application's: the recorder's; the
// reader that runtime/trace starts for its subscribers; or one of the
// runtime's own, as runtime.isSystemGoroutine tells them (the garbage
// collector's workers, the sweeper, the scavenger, the tracer's
// advancer): every frame in package runtime, below any function but
// runtime.main. The goroutines that run finalizers and cleanups are the
// runtime's while idle and the application's while in its code.
func skipStack(frames iter.Seq[trace.StackFrame]) bool {
	outermost, runtimeOnly := "", true
	for f := range frames {
		if strings.HasPrefix(f.Func, recorderFunc) {
			return true
		}
		outermost = f.Func
		runtimeOnly = runtimeOnly && strings.HasPrefix(f.Func, "runtime.")
	}
	switch {
	case outermost == "":
		return false // no stack: nothing tells whose it is
	case strings.HasPrefix(outermost, "runtime/trace."):
		return true
	default:
		return runtimeOnly && outermost != "runtime.main"
	}
}

// locationsOf returns the locations of frames, leaf first, adding what is
// new to the tables.
func (t *tables) locationsOf(frames iter.Seq[trace.StackFrame]) []int32 {
	var locs []int32
	for f := range frames {
		l, ok := t.byFrame[f]
		if !ok {
			fk := funcKey{f.Func, f.File}
			fn, ok := t.byFunc[fk]
			if !ok {
				fn = int32(len(t.functions))
				t.functions = append(t.functions, pprofdecode.Function{Name: f.Func, SystemName: f.Func, Filename: f.File})
				t.byFunc[fk] = fn
			}
			l = int32(len(t.locations))
			t.locations = append(t.locations, pprofdecode.Location{
				Mapping: exeMappingIndex(f.PC),
				Address: f.PC,
				Lines:   []pprofdecode.Line{{Function: fn, Line: int64(f.Line)}},
			})
			t.byFrame[f] = l
		}
		locs = append(locs, l)
	}
	return locs
}

// SampleType is the one sample type of the profile: nanoseconds waited.
var SampleType = pprofdecode.ValueType{Type: "off_cpu", Unit: "nanoseconds"}

// built is a window built into a profile. Its events, one per wait, are
// the largest part of a window; the Recorder keeps one built for both
// windows, since only the window last collected is needed built.
type built struct {
	profile pprofdecode.Profile
	events  []pprofdecode.Event
	values  []int64
	// first and next index events by kind while they are laid out.
	first, next []int
}

// build builds the window into b: one sample per kind of wait, with an
// event per wait, in the order the waits ended: its value the wait's
// length times scale, its time the wait's start. The profile is valid
// until the next build into b, and while w is not reset.
func (w *window) build(b *built, start, end time.Time, scale float64) *pprofdecode.Profile {
	p := &b.profile
	p.SampleTypes = append(p.SampleTypes[:0], w.sampleType)
	p.DefaultSampleType = w.sampleType.Type
	p.PeriodType, p.Period = pprofdecode.ValueType{}, w.period
	if w.period != 0 {
		p.PeriodType = w.sampleType
	}
	p.TimeNanos = start.UnixNano()
	p.DurationNanos = int64(end.Sub(start))
	p.Locations = w.locations
	p.Functions = w.functions
	p.Mappings = append(p.Mappings[:0], executableMappings()...)
	p.Samples = p.Samples[:0]

	// Lay the events out kind by kind: count, then place.
	n := len(w.kinds)
	b.first = append(b.first[:0], make([]int, n+1)...)
	scaled := func(e event) int64 { return int64(float64(e.dur)*scale + 0.5) }
	for _, e := range w.events {
		if scaled(e) > 0 {
			b.first[e.kind+1]++
		}
	}
	for k := range n {
		b.first[k+1] += b.first[k]
	}
	b.next = append(b.next[:0], b.first[:n]...)
	b.events = append(b.events[:0], make([]pprofdecode.Event, b.first[n])...)
	lo, hi := start.UnixNano(), end.UnixNano()
	for _, e := range w.events {
		v := scaled(e)
		if v <= 0 {
			continue
		}
		// The clocks of the trace and of the window are read apart:
		// keep every timestamp inside the window.
		b.events[b.next[e.kind]] = pprofdecode.Event{Value: v, TimeNanos: min(max(e.start, lo), hi-1)}
		b.next[e.kind]++
	}
	b.values = append(b.values[:0], make([]int64, n)...)
	for k := range n {
		evs := b.events[b.first[k]:b.first[k+1]:b.first[k+1]]
		if len(evs) == 0 {
			continue
		}
		for _, e := range evs {
			b.values[k] += e.Value
		}
		kd := &w.kinds[k]
		p.Samples = append(p.Samples, pprofdecode.Sample{
			Locations: kd.locations,
			Values:    b.values[k : k+1 : k+1],
			Labels:    kd.labels,
			Events:    evs,
		})
	}
	return p
}
