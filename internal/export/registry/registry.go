// Package registry lets an exporter package that the profiler does not
// import be chosen by name from the environment (OTEL_PROFILES_EXPORTER).
// The package registers its constructor from init, as database/sql drivers
// do, so that only a program that imports it links it and its dependencies
// (the Splunk encoding, the JSON codec). It also holds the settings of
// package autoexport that only this module may set (see Option).
package registry

import (
	"context"
	"os"
	"sync"

	"github.com/pprofotel/profiler/internal/export"
)

// Exporter has the method set of the root package's Exporter, which cannot
// be named here without an import cycle.
type Exporter = export.Exporter

// Factory builds an exporter configured from the environment alone.
type Factory func(ctx context.Context) (Exporter, error)

var (
	mu        sync.Mutex
	factories = map[string]Factory{}
)

// Register makes f the constructor of the exporter named name. It panics
// when name is registered twice: two packages claiming one name is a bug
// of this module.
func Register(name string, f Factory) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := factories[name]; dup {
		panic("registry: exporter " + name + " registered twice")
	}
	factories[name] = f
}

// Lookup returns the constructor registered for name.
func Lookup(name string) (Factory, bool) {
	mu.Lock()
	defer mu.Unlock()
	f, ok := factories[name]
	return f, ok
}

// Names returns the registered names, in no particular order.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	names := make([]string, 0, len(factories))
	for name := range factories {
		names = append(names, name)
	}
	return names
}

// Settings is what autoexport's options set.
type Settings struct {
	// Getenv reads the environment; os.Getenv unless set.
	Getenv func(string) string
	// Warn receives each warning about a variable; nil logs it.
	Warn func(error)
}

// Option is autoexport's option type. Its constructors in autoexport are
// public; WithGetenv and WithWarn are for this module (the profiler's
// tests read a map, and the profiler logs the warnings with the others).
type Option interface {
	ApplyAutoexport(*Settings)
}

// OptionFunc adapts a function to Option.
type OptionFunc func(*Settings)

// ApplyAutoexport calls f.
func (f OptionFunc) ApplyAutoexport(s *Settings) { f(s) }

// WithGetenv reads the environment through getenv.
func WithGetenv(getenv func(string) string) Option {
	return OptionFunc(func(s *Settings) { s.Getenv = getenv })
}

// WithWarn hands every warning to warn instead of logging it.
func WithWarn(warn func(error)) Option {
	return OptionFunc(func(s *Settings) { s.Warn = warn })
}

// Resolve applies opts over the defaults.
func Resolve(opts []Option) Settings {
	s := Settings{Getenv: os.Getenv}
	for _, o := range opts {
		if o != nil {
			o.ApplyAutoexport(&s)
		}
	}
	return s
}
