package profiler

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/export"
	"github.com/pprofotel/profiler/internal/otlp"
)

// ScopeName is the instrumentation scope name of every profile the profiler
// sends.
const ScopeName = "github.com/pprofotel/profiler"

// Hooks that tests replace to record what the collector read.
var (
	profileSource = collect.RuntimeSource
	cpuProfiler   collect.CPUProfiler // zero: runtime/pprof's
)

// running guards against two profilers at once: the CPU profile and the
// runtime's mutex and block rates are process-wide.
var running atomic.Bool

// Profiler collects the runtime's profiles in the background and exports
// one OTLP request per period. Create it with Start; its methods are safe
// for concurrent use.
type Profiler struct {
	cfg       *config
	collector *collect.Collector
	builder   *otlp.Builder
	exporter  export.Exporter
	stats     collect.Stats

	stopOnce sync.Once
	// stopRequests carries the context of the first Stop to the loop, which
	// uses it to bound the last export.
	stopRequests chan context.Context
	done         chan struct{}
	stopErr      error

	// The runtime's rates before Start, restored by Stop.
	prevMutexFraction int
	prevBlockRate     int
	setBlockRate      bool
}

// Start starts profiling with the given options, which win over the
// environment variables, which win over the defaults (see the package
// documentation for the list).
//
// An invalid option or environment variable makes Start fail with an error
// that names it and its value. When profiling is disabled through
// PPROFOTEL_ENABLED=false or OTEL_SDK_DISABLED=true, Start returns a
// Profiler that does nothing, and no error. Only one profiler may run at a
// time in a process; Start fails while another runs.
//
// Start does not wait for the network: the exporter connects when it first
// sends.
func Start(opts ...Option) (*Profiler, error) {
	cfg, err := newConfig(opts, os.Getenv)
	if err != nil {
		return nil, err
	}
	if cfg.disabled {
		return &Profiler{cfg: cfg}, nil
	}
	if !running.CompareAndSwap(false, true) {
		return nil, errors.New("profiler: another profiler is already running in this process; Stop it first")
	}
	p, err := start(cfg)
	if err != nil {
		running.Store(false)
		return nil, err
	}
	return p, nil
}

func start(cfg *config) (*Profiler, error) {
	exp, err := newExporter(cfg)
	if err != nil {
		return nil, err
	}
	p := &Profiler{
		cfg:          cfg,
		exporter:     exp,
		stopRequests: make(chan context.Context, 1),
		done:         make(chan struct{}),
	}
	names := make([]string, len(cfg.profileTypes))
	for i, t := range cfg.profileTypes {
		names[i] = t.String()
	}
	p.collector, err = collect.New(collect.Config{
		Profiles: names,
		Source:   profileSource,
		CPU:      cpuProfiler,
		Logger:   cfg.logger,
		Stats:    &p.stats,
	})
	if err != nil {
		exp.Shutdown(context.Background())
		return nil, err
	}
	p.builder = otlp.NewBuilder(toProtoResource(cfg.resource),
		&commonpb.InstrumentationScope{Name: ScopeName, Version: Version},
		otlp.WithExecutable(executable()))

	for _, t := range cfg.profileTypes {
		switch t {
		case MutexProfile:
			p.prevMutexFraction = runtime.SetMutexProfileFraction(cfg.mutexFraction)
		case BlockProfile:
			// The runtime offers no way to read the block rate back, so
			// Stop can only restore the runtime's default, which is off.
			runtime.SetBlockProfileRate(cfg.blockRate)
			p.setBlockRate = true
		}
	}
	p.collector.Start(time.Now())
	go p.loop()
	return p, nil
}

func newExporter(cfg *config) (export.Exporter, error) {
	switch cfg.exporter {
	case ExporterFile:
		return export.NewFile(cfg.file)
	case ExporterNone:
		return export.NewNone(), nil
	default:
		return export.NewOTLP(cfg.otlp)
	}
}

// loop ends a window every period until Stop asks for the last one.
func (p *Profiler) loop() {
	defer close(p.done)
	ticker := time.NewTicker(p.cfg.period)
	defer ticker.Stop()
	for {
		select {
		case now := <-ticker.C:
			p.window(context.Background(), now, false)
		case ctx := <-p.stopRequests:
			p.stopErr = p.window(ctx, time.Now(), true)
			p.restoreRuntime()
			if err := p.exporter.Shutdown(ctx); err != nil && p.stopErr == nil {
				p.stopErr = fmt.Errorf("profiler: shutting down the exporter: %w", err)
			}
			running.Store(false)
			return
		}
	}
}

// window collects, converts and exports one window. A panic in any of it is
// the profiler's bug, not the application's problem: it is logged and the
// window is lost, and profiling goes on.
func (p *Profiler) window(ctx context.Context, now time.Time, last bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			p.cfg.logger.Error("pprofotel: window dropped after an internal error", "panic", r)
			err = fmt.Errorf("profiler: internal error: %v", r)
		}
	}()
	var w collect.Window
	if last {
		w = p.collector.Stop(now)
	} else {
		w = p.collector.Collect(now)
	}
	inputs := make([]otlp.Input, len(w.Profiles))
	for i, prof := range w.Profiles {
		inputs[i] = otlp.Input{Name: prof.Name, Profile: prof.Data}
	}
	req := p.builder.Build(w.Start, w.End, inputs)
	if !last {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.cfg.otlp.Timeout)
		defer cancel()
	}
	if err := p.exporter.Export(ctx, req); err != nil {
		p.cfg.logger.Warn("pprofotel: window not delivered", "start", w.Start, "end", w.End, "error", err)
		return fmt.Errorf("profiler: window %s–%s not delivered: %w",
			w.Start.Format(time.RFC3339), w.End.Format(time.RFC3339), err)
	}
	p.cfg.logger.Debug("pprofotel: window exported", "start", w.Start, "end", w.End, "profiles", len(inputs))
	return nil
}

func (p *Profiler) restoreRuntime() {
	for _, t := range p.cfg.profileTypes {
		switch t {
		case MutexProfile:
			runtime.SetMutexProfileFraction(p.prevMutexFraction)
		case BlockProfile:
			if p.setBlockRate {
				runtime.SetBlockProfileRate(0)
			}
		}
	}
}

// Stop ends profiling: it collects the current, partial window of every
// profile type, exports it and waits for that export, for no longer than
// ctx allows. It restores the runtime's mutex and block profile rates and
// frees the CPU profiler. Stop may be called more than once and from any
// goroutine; every call waits for the same shutdown and returns its result.
func (p *Profiler) Stop(ctx context.Context) error {
	if p == nil || p.done == nil {
		return nil // disabled
	}
	p.stopOnce.Do(func() {
		p.stopRequests <- ctx
	})
	select {
	case <-p.done:
		return p.stopErr
	case <-ctx.Done():
		return fmt.Errorf("profiler: stop: %w", ctx.Err())
	}
}

// executable returns the path and Go build id of the running binary, for the
// main mapping's process.executable.build_id.go. Either may be empty: a
// missing build id costs an attribute, not the profile.
func executable() (path, goBuildID string) {
	path, err := os.Executable()
	if err != nil {
		return "", ""
	}
	id, _ := otlp.GoBuildID(path)
	return path, id
}
