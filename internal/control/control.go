// Package control is the hook through which a remote-control package
// (github.com/pprofotel/profiler/opamp) reaches a running profiler without
// the root package importing it, and without an exported root API: Lookup
// turns a *profiler.Profiler into a Target, through the function the root
// registers from init (SetLookup), which the compiler checks. A program
// that does not import the remote-control package links no OpAMP client;
// it does link the root's side of remote control (docs/footprint.md).
package control

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// Settings is what can change while the profiler runs. Every field is set:
// the effective and the local settings are complete, and a change is the
// local settings with some fields replaced.
type Settings struct {
	// Enabled is false while profiling is paused: no window is collected
	// or sent, the runtime's rates are restored, and the profiler keeps
	// running, its exporter open.
	Enabled bool
	// ProfileTypes are the profile types' names, as PPROFOTEL_PROFILES
	// spells them, in the order the profiler collects them.
	ProfileTypes []string
	// Window is the length of a window.
	Window time.Duration
	// CPUDuty and OffCPUDuty are the duty cycles in percent.
	CPUDuty, OffCPUDuty int
	// MutexFraction and BlockRate are the runtime rates of the mutex and
	// block profiles.
	MutexFraction, BlockRate int
	// MaxGoroutines is the goroutine guard, 0 for no limit.
	MaxGoroutines int
	// LeakInterval is the least time between two reads of the
	// goroutine-leak profile.
	LeakInterval time.Duration
}

// Target is a running profiler as the remote-control package sees it.
// Its methods are safe for concurrent use and never block on the
// profiler's work.
type Target interface {
	// Local returns the settings Start resolved from the options, the
	// environment and the defaults.
	Local() Settings
	// Effective returns the settings the current window runs with.
	Effective() Settings
	// Apply validates s as Start validates its options and, when valid,
	// makes it the change the profiler applies at its next window
	// boundary, replacing any change still waiting. The window that
	// ends there is collected and sent whole with the settings it began
	// with; the next begins at the same instant with s. The returned
	// channel is closed once s took effect, or once a later Apply
	// replaced it; when the profiler stops first, Done is closed
	// instead. An invalid s is refused whole with the options' error
	// and changes nothing. A valid s is returned as the profiler spells
	// it, which Effective returns once it took effect: the profile
	// types' names in lower case, each once, in the profiler's order.
	Apply(s Settings) (canonical Settings, applied <-chan struct{}, err error)
	// Resource returns the attributes of the resource the profiler
	// sends: service.name, service.instance.id when set,
	// telemetry.sdk.*...
	Resource() []attribute.KeyValue
	// Done is closed when the profiler has stopped.
	Done() <-chan struct{}
}

// lookup is the root package's lookup, set from its init.
var lookup func(p any) (Target, bool)

// SetLookup makes f the function Lookup calls. The root package calls it
// from init, as the only package that can see a Profiler's insides.
func SetLookup(f func(p any) (Target, bool)) { lookup = f }

// Lookup returns the Target of p, a *profiler.Profiler, and false when p
// is not one that runs (nil, or disabled by the environment).
func Lookup(p any) (Target, bool) {
	if lookup == nil {
		return nil, false
	}
	return lookup(p)
}
