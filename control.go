package profiler

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/pprofotel/profiler/internal/control"
	"github.com/pprofotel/profiler/internal/envconfig"
)

// The profiler's side of remote control: package
// github.com/pprofotel/profiler/opamp reaches a running Profiler through
// internal/control, so that the root package neither imports it nor grows
// an exported method for it.

func init() {
	control.SetLookup(lookupTarget)
}

// lookupTarget gives internal/control.Lookup the Target of a running
// Profiler. The profiler's loop finds no boundary func until it is called.
func lookupTarget(v any) (control.Target, bool) {
	p, ok := v.(*Profiler)
	if !ok || p == nil || p.done == nil {
		return nil, false // disabled: nothing runs to control
	}
	st, loaded := controls.LoadOrStore(p, &controlState{p: p, local: p.cfg.window, window: p.cfg.window})
	s := st.(*controlState)
	if !loaded {
		boundary := s.boundary
		p.boundary.Store(&boundary)
		go func() {
			<-p.done
			controls.Delete(p)
		}()
	}
	return controlTarget{s}, true
}

// controls holds the controlState of each running Profiler looked up.
var controls sync.Map

// controlState is the remote control of a Profiler.
type controlState struct {
	p *Profiler
	// local is the window length Start resolved: the loop looks for a
	// change at least that often, whatever the window length in effect.
	local time.Duration
	// window is the window length in effect and end the time the current
	// window is due to end, zero until a change took effect; both are
	// touched only by the loop (boundary) once it holds the boundary
	// func.
	window time.Duration
	end    time.Time
	// effective is the settings the current window runs with, nil while
	// they are the local ones.
	effective atomic.Pointer[control.Settings]
	// pending is the change waiting for the next window boundary, nil
	// when none is.
	pending atomic.Pointer[settingsChange]
}

// settingsChange is a validated change of settings.
type settingsChange struct {
	settings control.Settings
	cfg      *config
	applied  chan struct{}
}

// boundary is the loop's tick due at due, run at now. It ends the window
// at now with the change waiting, if any (reconfigure), or when the window
// in effect is due to end, as the loop does without remote control. It
// returns the time from due to the next tick: the end of the window in
// effect, or one local window when that is sooner, so that a change (an
// expiry, a correction, the client's Shutdown) waits for no more than one
// local window whatever the window in effect.
func (s *controlState) boundary(due, now time.Time) time.Duration {
	if c := s.pending.Swap(nil); c != nil {
		s.window = s.reconfigure(now, c)
		s.end = due.Add(s.window)
	} else if !due.Before(s.end) {
		s.p.window(now, false)
		s.end = due.Add(s.window)
	}
	return min(s.local, s.end.Sub(due))
}

// reconfigure ends the window at now with the settings it began with,
// sends it whole, and begins the next at the same instant with the
// change's, without touching the exporter or the queue. Paused, the
// collector has no profile: its windows are empty, and an empty window is
// neither sent nor counted. It returns the window length from now on. A
// panic while starting the new collector, the profiler's bug, is logged
// and leaves profiling paused rather than ending the application.
func (s *controlState) reconfigure(now time.Time, c *settingsChange) (window time.Duration) {
	p := s.p
	defer close(c.applied)
	p.window(now, true)
	p.restoreRuntime()
	cfg, settings := c.cfg, c.settings
	if !settings.Enabled {
		paused := *cfg
		paused.profileTypes = nil
		cfg = &paused
	}
	if err := p.startCollection(cfg, cfg.window, now); err != nil {
		p.cfg.logger.Error("pprofotel: profiling paused after an internal error while changing its settings", "error", err)
		p.restoreRuntime()
		settings = controlTarget{s}.Effective()
		settings.Enabled = false
		cfg = &config{logger: p.cfg.logger, window: cfg.window}
		_ = p.startCollection(cfg, cfg.window, now)
	}
	s.effective.Store(&settings)
	p.cfg.logger.Info("pprofotel: settings changed", "enabled", settings.Enabled,
		"profiles", strings.Join(settings.ProfileTypes, ","), "window", settings.Window)
	return cfg.window
}

// settings returns the part of c that can change while running.
func (c *config) settings(enabled bool) control.Settings {
	names := make([]string, len(c.profileTypes))
	for i, t := range c.profileTypes {
		names[i] = t.String()
	}
	return control.Settings{
		Enabled:       enabled,
		ProfileTypes:  names,
		Window:        c.window,
		CPUDuty:       c.cpuDuty,
		OffCPUDuty:    c.rates[OffCPUProfile],
		MutexFraction: c.rates[MutexProfile],
		BlockRate:     c.rates[BlockProfile],
		MaxGoroutines: c.maxGoroutines,
		LeakInterval:  c.intervals[GoroutineLeakProfile],
	}
}

// configFor validates s exactly as Start validates its options, and
// returns the profiler's configuration with the values s holds in place of
// its own: s is turned into the options that set each of its values, which
// resolve, over an empty environment, into a scratch configuration whose
// values of s are copied over. Every other setting (the routes' bound,
// the slow-request threshold, whether from an option or the environment)
// stays as Start resolved it. The errors are the options' own.
func (p *Profiler) configFor(s control.Settings) (*config, error) {
	types, err := parseProfileList(strings.Join(s.ProfileTypes, ","))
	if err != nil {
		return nil, fmt.Errorf("profiler: WithProfileTypes: %w", err)
	}
	opts := []Option{
		WithWindow(s.Window),
		WithProfileTypes(types...),
		WithCPUDutyCycle(s.CPUDuty),
		WithOffCPUDutyCycle(s.OffCPUDuty),
		WithMutexProfileFraction(s.MutexFraction),
		WithBlockProfileRate(s.BlockRate),
		WithMaxGoroutines(s.MaxGoroutines),
		WithGoroutineLeakInterval(s.LeakInterval),
	}
	o := options{runtime: p.cfg.runtime}
	for _, opt := range opts {
		opt.apply(&o)
	}
	r := *p.cfg
	env := envconfig.New(func(string) string { return "" }, "profiler: ")
	r.resolveSampling(&o, env)
	r.resolveCollect(&o, env)
	if len(o.errs) > 0 {
		return nil, errors.Join(o.errs...)
	}
	if err := checkAvailable(r.profileTypes); err != nil {
		return nil, err
	}
	c := *p.cfg
	c.window, c.profileTypes = r.window, r.profileTypes
	c.cpuDuty, c.cpuDuration = r.cpuDuty, r.cpuDuration
	for _, t := range []ProfileType{OffCPUProfile, MutexProfile, BlockProfile} {
		c.rates[t] = r.rates[t]
	}
	c.maxGoroutines = r.maxGoroutines
	c.intervals[GoroutineLeakProfile] = r.intervals[GoroutineLeakProfile]
	return &c, nil
}

// controlTarget is a Profiler as internal/control's Target.
type controlTarget struct{ s *controlState }

func (t controlTarget) Local() control.Settings { return t.s.p.cfg.settings(true) }

func (t controlTarget) Effective() control.Settings {
	if s := t.s.effective.Load(); s != nil {
		return clone(*s)
	}
	return t.Local()
}

func (t controlTarget) Apply(s control.Settings) (control.Settings, <-chan struct{}, error) {
	s = clone(s)
	cfg, err := t.s.p.configFor(s)
	if err != nil {
		return control.Settings{}, nil, err
	}
	// The names as the profiler spells them, in its order.
	s.ProfileTypes = cfg.settings(s.Enabled).ProfileTypes
	c := &settingsChange{settings: s, cfg: cfg, applied: make(chan struct{})}
	select {
	case <-t.s.p.done:
		return control.Settings{}, nil, errors.New("profiler: stopped")
	default:
	}
	if prev := t.s.pending.Swap(c); prev != nil {
		close(prev.applied) // replaced before it took effect
	}
	return clone(s), c.applied, nil
}

func (t controlTarget) Resource() []attribute.KeyValue { return t.s.p.cfg.resource.Attributes() }

func (t controlTarget) Done() <-chan struct{} { return t.s.p.done }

// clone copies s, so that no caller shares its slice.
func clone(s control.Settings) control.Settings {
	s.ProfileTypes = append([]string(nil), s.ProfileTypes...)
	return s
}
