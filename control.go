package profiler

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	_ "unsafe" // for go:linkname

	"go.opentelemetry.io/otel/attribute"

	"github.com/pprofotel/profiler/internal/control"
	"github.com/pprofotel/profiler/internal/envconfig"
)

// The profiler's side of remote control: package
// github.com/pprofotel/profiler/opamp reaches a running Profiler through
// internal/control, so that the root package neither imports it nor grows
// an exported method for it.

// lookupTarget gives internal/control.Lookup the Target of a running
// Profiler. Only internal/control refers to it, by name: a program that
// never calls Lookup links none of the code of this file, and its loop
// finds no windowHook (benchmark/README.md, "Footprint of remote
// control").
//
//go:linkname lookupTarget
func lookupTarget(v any) (control.Target, bool) {
	p, ok := v.(*Profiler)
	if !ok || p == nil || p.done == nil {
		return nil, false // disabled: nothing runs to control
	}
	p.hook.CompareAndSwap(nil, &controlState{p: p})
	return controlTarget{p.hook.Load().(*controlState)}, true
}

// controlHook returns the hook of remote control, nil when nothing looked
// the profiler up.
func (p *Profiler) controlHook() windowHook {
	h, _ := p.hook.Load().(windowHook)
	return h
}

// windowHook is what the loop asks at each window boundary and at Stop.
type windowHook interface {
	// boundary applies the change waiting, if any, at now: it ends the
	// window and begins the next with the new settings, sets *window
	// to their window length, and reports true. Without a change it
	// reports false and the loop ends the window as usual.
	boundary(now time.Time, window *time.Duration) bool
	// stopped tells that the loop has ended.
	stopped()
}

// controlState is the remote control of a Profiler.
type controlState struct {
	p *Profiler
	// effective is the settings the current window runs with, nil while
	// they are the local ones.
	effective atomic.Pointer[control.Settings]
	// pending is the change waiting for the next window boundary, nil
	// when none is; done is set once the loop has ended.
	pending atomic.Pointer[settingsChange]
	done    atomic.Bool
}

// settingsChange is a validated change of settings.
type settingsChange struct {
	settings control.Settings
	cfg      *config
	applied  chan struct{}
}

func (s *controlState) boundary(now time.Time, window *time.Duration) bool {
	c := s.pending.Swap(nil)
	if c == nil {
		return false
	}
	*window = s.p.reconfigure(now, c)
	return true
}

// stopped gives up the change waiting: its waiter hears that it will
// never take effect.
func (s *controlState) stopped() {
	s.done.Store(true)
	if c := s.pending.Swap(nil); c != nil {
		close(c.applied)
	}
}

// reconfigure ends the window at now with the settings it began with,
// sends it whole, and begins the next at the same instant with the
// change's, without touching the exporter or the queue. It returns the
// window length from now on. A panic in it, the profiler's bug, is logged
// and leaves profiling paused rather than ending the application.
func (p *Profiler) reconfigure(now time.Time, c *settingsChange) (window time.Duration) {
	window = c.cfg.window
	defer close(c.applied)
	defer func() {
		if r := recover(); r != nil {
			p.cfg.logger.Error("pprofotel: profiling paused after an internal error while changing its settings", "panic", r)
			p.collector = nil
			p.restoreRuntime()
			st := p.hook.Load().(*controlState)
			paused := controlTarget{st}.Effective()
			paused.Enabled = false
			st.effective.Store(&paused)
		}
	}()
	if p.collector != nil {
		p.window(now, true)
		p.collector = nil
		p.restoreRuntime()
	}
	if c.settings.Enabled {
		collector, err := p.newCollector(c.cfg, c.cfg.window)
		if err != nil {
			panic(err) // the change was validated: the profiler's bug
		}
		p.setRates(c.cfg)
		collector.Start(now)
		p.collector = collector
	}
	p.hook.Load().(*controlState).effective.Store(&c.settings)
	p.cfg.logger.Info("pprofotel: settings changed", "enabled", c.settings.Enabled,
		"profiles", strings.Join(c.settings.ProfileTypes, ","), "window", c.settings.Window)
	return window
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

// configFor validates s exactly as Start validates its options: s is
// turned into the options that set each of its values, which resolve, over
// an empty environment, into the configuration the collector is built
// from. The errors are the options' own.
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
	c := *p.cfg
	env := envconfig.New(func(string) string { return "" }, "profiler: ")
	c.resolveSampling(&o, env)
	c.resolveCollect(&o, env)
	if len(o.errs) > 0 {
		return nil, errors.Join(o.errs...)
	}
	if err := checkAvailable(c.profileTypes); err != nil {
		return nil, err
	}
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

func (t controlTarget) Apply(s control.Settings) (<-chan struct{}, error) {
	s = clone(s)
	cfg, err := t.s.p.configFor(s)
	if err != nil {
		return nil, err
	}
	// The names as the profiler spells them, in its order.
	s.ProfileTypes = cfg.settings(s.Enabled).ProfileTypes
	c := &settingsChange{settings: s, cfg: cfg, applied: make(chan struct{})}
	if prev := t.s.pending.Swap(c); prev != nil {
		close(prev.applied) // replaced before it took effect
	}
	if t.s.done.Load() {
		// The loop ended, before or while c was stored: take c back,
		// unless stopped already did.
		if t.s.pending.CompareAndSwap(c, nil) {
			close(c.applied)
		}
		return nil, errors.New("profiler: stopped")
	}
	return c.applied, nil
}

func (t controlTarget) Resource() []attribute.KeyValue { return t.s.p.cfg.resource.Attributes() }

func (t controlTarget) Done() <-chan struct{} { return t.s.p.done }

// clone copies s, so that no caller shares its slice.
func clone(s control.Settings) control.Settings {
	s.ProfileTypes = append([]string(nil), s.ProfileTypes...)
	return s
}
