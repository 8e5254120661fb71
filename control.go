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
	control.Register(func(v any) (control.Target, bool) {
		p, ok := v.(*Profiler)
		if !ok || p == nil || p.done == nil {
			return nil, false // disabled: nothing runs to control
		}
		return controlTarget{p}, true
	})
}

// controlState is what a Profiler keeps for remote control.
type controlState struct {
	// local is the settings Start resolved; set before the loop starts,
	// never changed.
	local control.Settings
	// effective is the settings the current window runs with.
	effective atomic.Pointer[control.Settings]

	mu sync.Mutex
	// pending is the change waiting for the next window boundary, nil
	// when none is; stopped is set when the loop ended.
	pending *settingsChange
	stopped bool
}

// settingsChange is a validated change of settings: cfg is their resolved
// configuration.
type settingsChange struct {
	settings control.Settings
	cfg      *config
	applied  chan struct{}
}

// initControl records the local settings; start calls it.
func (p *Profiler) initControl() {
	p.ctl.local = p.cfg.settings(true)
	p.ctl.effective.Store(&p.ctl.local)
}

// take returns the change waiting, if any, and forgets it.
func (s *controlState) take() *settingsChange {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.pending
	s.pending = nil
	return c
}

// discard gives up the change waiting, at Stop: its waiter hears that it
// will never take effect.
func (s *controlState) discard() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending != nil {
		close(s.pending.applied)
		s.pending = nil
	}
	s.stopped = true
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
			paused := *p.ctl.effective.Load()
			paused.Enabled = false
			p.ctl.effective.Store(&paused)
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
	p.ctl.effective.Store(&c.settings)
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
type controlTarget struct{ p *Profiler }

func (t controlTarget) Local() control.Settings { return clone(t.p.ctl.local) }

func (t controlTarget) Effective() control.Settings { return clone(*t.p.ctl.effective.Load()) }

func (t controlTarget) Apply(s control.Settings) (<-chan struct{}, error) {
	s = clone(s)
	cfg, err := t.p.configFor(s)
	if err != nil {
		return nil, err
	}
	// The names as the profiler spells them, in its order.
	s.ProfileTypes = cfg.settings(s.Enabled).ProfileTypes
	c := &settingsChange{settings: s, cfg: cfg, applied: make(chan struct{})}
	ctl := &t.p.ctl
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	if ctl.stopped {
		return nil, errors.New("profiler: stopped")
	}
	if ctl.pending != nil {
		close(ctl.pending.applied)
	}
	ctl.pending = c
	return c.applied, nil
}

func (t controlTarget) Resource() []attribute.KeyValue { return t.p.cfg.resource.Attributes() }

func (t controlTarget) Done() <-chan struct{} { return t.p.done }

// clone copies s, so that no caller shares its slice.
func clone(s control.Settings) control.Settings {
	s.ProfileTypes = append([]string(nil), s.ProfileTypes...)
	return s
}
