// Package registry lets an exporter package that the root package does not
// import be chosen by name from the environment (OTEL_PROFILES_EXPORTER,
// PPROFOTEL_EXPORTER). The package registers its constructor from init, as
// database/sql drivers do, so that only a program that imports it links it
// and its dependencies (the Splunk encoding, the JSON codec).
package registry

import (
	"context"
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
