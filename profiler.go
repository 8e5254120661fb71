package profiler

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/collect/requests"
	"github.com/pprofotel/profiler/internal/convert/otlp"
	"github.com/pprofotel/profiler/internal/deliver"
	"github.com/pprofotel/profiler/internal/processctx"
	"github.com/pprofotel/profiler/internal/validutf8"
)

// ScopeName is the instrumentation scope name of every profile the profiler
// sends.
const ScopeName = "github.com/pprofotel/profiler"

// firstWindow is the length of the first window when the configured one is
// longer: a user who starts the profiler hears within seconds whether its
// windows arrive, rather than after a minute.
const firstWindow = 10 * time.Second

// running guards against two profilers at once: the CPU profile and the
// runtime's mutex and block rates are process-wide.
var running atomic.Bool

// Profiler collects the runtime's profiles in the background and exports
// each window to its exporter. Create it with Start; its methods are safe
// for concurrent use.
type Profiler struct {
	cfg       *config
	collector *collect.Collector
	// tracker follows the requests from Start to Stop, handed from one
	// collector to the next, so that a change of settings loses none;
	// nil without routes, or when another tracker is installed.
	tracker *requests.Tracker
	// pipe converts the windows and exports them from its own goroutine,
	// so that the loop never waits on the network.
	pipe    *pipeline
	omitted collect.Omissions
	sent    deliver.Outcomes
	metrics metric.Registration

	collected    atomic.Int64
	collectNanos atomic.Int64
	convertNanos atomic.Int64
	// leaked is Stats.GoroutinesLeaked.
	leaked atomic.Int64
	// repaired is Stats.StringsRepaired; repairsLogged, touched only by
	// the loop's goroutine, says whether the profiles' repairs were
	// logged, which happens once.
	repaired      atomic.Int64
	repairsLogged bool

	// started is when the first window began.
	started time.Time

	stopOnce sync.Once
	// stopRequests carries the context of the first Stop to the loop, which
	// uses it to bound the last exports.
	stopRequests chan context.Context
	done         chan struct{}
	stopErr      error

	// restore puts back the runtime rates Start set, in reverse order.
	restore []func()

	// processContext is the published process context, nil when none is.
	processContext *processctx.Context

	// boundary, once remote control has looked the profiler up
	// (control.go), is what the loop calls at each tick in place of
	// p.window: it ends the window when due, or at once with the change of
	// settings waiting, and returns the time to the next tick. Nil
	// otherwise.
	boundary atomic.Pointer[func(due, now time.Time) time.Duration]
}

// Start starts profiling with the given options, which win over the
// environment variables, which win over the defaults (see the package
// documentation for the list).
//
// An invalid option makes Start fail with an error that names it and its
// value. An invalid environment variable does not: as the OpenTelemetry
// specification asks, it is ignored (a boolean reads as false) and a
// warning naming it and its value is logged, once, the value cut to its
// first 128 bytes when longer. A resource attribute or a pprof label
// that is not valid UTF-8 is repaired, not refused (Stats.StringsRepaired). When profiling is
// disabled through PPROFOTEL_ENABLED=false or OTEL_SDK_DISABLED=true,
// Start returns a Profiler that does nothing, and no error. Only one profiler may run at a
// time in a process; Start fails with [ErrAlreadyRunning] while another
// runs.
//
// A PPROFOTEL_ variable that the module does not read is warned about
// too, by name, with the closest name it reads. Once started, Start logs
// one info line saying what is profiled and where the windows go.
//
// Start does not wait for the network: the exporter connects when it first
// sends.
func Start(opts ...Option) (*Profiler, error) {
	cfg, err := newConfigEnv(opts, os.Getenv, os.Environ())
	if err != nil {
		return nil, err
	}
	for _, w := range cfg.warnings {
		cfg.logger.Warn("pprofotel: environment", "warning", w.Error())
	}
	if cfg.disabled {
		cfg.logger.Info(disabledMessage, "by", cfg.disabledBy)
		return &Profiler{cfg: cfg}, nil
	}
	if err := checkAvailable(cfg.profileTypes); err != nil {
		cfg.shutdownOwnExporter()
		return nil, err
	}
	if !running.CompareAndSwap(false, true) {
		cfg.shutdownOwnExporter()
		return nil, ErrAlreadyRunning
	}
	p, err := start(cfg)
	if err != nil {
		running.Store(false)
		cfg.shutdownOwnExporter()
		return nil, err
	}
	return p, nil
}

func start(cfg *config) (*Profiler, error) {
	p := &Profiler{
		cfg:          cfg,
		stopRequests: make(chan context.Context, 1),
		done:         make(chan struct{}),
	}
	// From here on the queue owns the exporter: a failed start shuts both
	// down.
	p.pipe = newPipeline(cfg, &p.sent)

	var err error
	if p.metrics, err = p.registerMetrics(cfg.meterProvider); err != nil {
		// The profiles matter more than the metrics about them.
		cfg.logger.Warn("pprofotel: the profiler's own metrics are not reported", "error", err)
	}
	p.started = time.Now()
	p.startTracker()
	if err := p.startCollection(cfg, min(cfg.window, firstWindow), p.started); err != nil {
		p.stopTracker()
		p.restoreRuntime()
		if p.metrics != nil {
			_ = p.metrics.Unregister()
		}
		p.pipe.shutdown(context.Background())
		cfg.fromEnv = false // shut down with the queue
		return nil, err
	}
	if r := cfg.resourceRepairs; r.n > 0 {
		p.repaired.Add(r.n)
		cfg.logger.Warn("pprofotel: resource attributes that were not valid UTF-8 are sent with U+FFFD in place of the invalid bytes",
			"attributes", r.keys)
	}
	if cfg.processContext {
		p.publishProcessContext()
	}
	logStart(cfg)
	go p.loop()
	return p, nil
}

// logStart logs the one line that says the profiler works: what it
// profiles and where the windows go.
func logStart(cfg *config) {
	names := make([]string, len(cfg.profileTypes))
	for i, t := range cfg.profileTypes {
		names[i] = t.String()
	}
	attrs := []any{"profiles", strings.Join(names, ","), "window", cfg.window}
	if slices.Contains(cfg.profileTypes, CPUProfile) {
		attrs = append(attrs, "cpu_duty_cycle", strconv.Itoa(cfg.cpuDuty)+"%")
	}
	cfg.logger.Info(startMessage, append(attrs, "exporter", describeExporter(cfg.exporter))...)
}

// describeExporter says where exp sends the windows: its String, if it
// has one (the exporter packages' say the endpoint or directory), else
// its type.
func describeExporter(exp Exporter) string {
	if e, ok := exp.(fmt.Stringer); ok {
		return e.String()
	}
	return fmt.Sprintf("%T", exp)
}

// publishProcessContext publishes the resource the exporter sends, so that
// the OpenTelemetry eBPF profiler names this process as we do. Failing to
// publish costs that name, not the profiles, so it is logged and no more.
func (p *Profiler) publishProcessContext() {
	c, dropped, err := processctx.Publish(toProtoResource(p.cfg.resource))
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		p.cfg.logger.Debug("pprofotel: no process context on this platform")
	case err != nil:
		p.cfg.logger.Warn("pprofotel: the process context is not published", "error", err)
	default:
		p.processContext = c
		if len(dropped) > 0 {
			p.cfg.logger.Warn("pprofotel: resource attributes left out of the process context to fit the readers' limit",
				"limit_bytes", processctx.MaxPayloadSize, "dropped", dropped)
		}
	}
}

// startTracker installs the requests tracker the collectors use, unless
// routes are off. Another one installed (only one profiler runs at a
// time) costs the windows their routes and request counts, said once.
func (p *Profiler) startTracker() {
	if p.cfg.maxRoutes <= 0 {
		return
	}
	t := requests.New(requests.Config{MaxRoutes: p.cfg.maxRoutes})
	if err := t.Install(); err != nil {
		p.cfg.logger.Warn("pprofotel: samples carry no route and windows no request counts: another request tracker is installed", "error", err)
		return
	}
	p.tracker = t
}

// stopTracker uninstalls the requests tracker, if any.
func (p *Profiler) stopTracker() {
	if p.tracker != nil {
		p.tracker.Stop()
		p.tracker = nil
	}
}

// startCollection begins, at now, collecting the profiles cfg asks for,
// the first window lasting first: it builds the collector, sets the
// profiles' runtime rates (restoreRuntime puts the previous ones back),
// reads the baselines and starts the CPU profile. At Start it runs on the
// application's goroutine, so a panic in it, the profiler's bug, is
// turned into an error instead of ending the application.
func (p *Profiler) startCollection(cfg *config, first time.Duration, now time.Time) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("profiler: internal error while starting: %v", r)
			// Leave nothing installed for the process (the request
			// tracker) by a collector that will not run.
			if p.collector != nil {
				p.collector.Abandon()
				p.collector = nil
			}
		}
	}()
	names := make([]string, len(cfg.profileTypes))
	intervals := make(map[string]time.Duration)
	for i, t := range cfg.profileTypes {
		names[i] = t.String()
		if cfg.intervals[t] != 0 {
			intervals[names[i]] = cfg.intervals[t]
		}
	}
	maxGoroutines := cfg.maxGoroutines
	if maxGoroutines == 0 {
		maxGoroutines = -1 // no limit, in collect.Config's terms
	}
	maxRoutes := cfg.maxRoutes
	if p.tracker == nil {
		maxRoutes = 0 // routes off, or another tracker installed
	}
	source := cfg.runtime.source
	if source == nil {
		source = collect.RuntimeSource
	}
	c, err := collect.New(collect.Config{
		Profiles:      names,
		Source:        source,
		CPU:           cfg.runtime.cpu,
		Logger:        cfg.logger,
		Omissions:     &p.omitted,
		MaxGoroutines: maxGoroutines,
		Window:        cfg.window,
		Intervals:     intervals,
		CPUDuration:   cfg.cpuDuration,
		SlowThreshold: cfg.slowThreshold,
		FirstWindow:   first,
		MaxRoutes:     maxRoutes,
		Tracker:       p.tracker,
	})
	if err == nil {
		p.collector = c
		for _, t := range cfg.profileTypes {
			if r := t.descriptor().Rate; r != nil {
				p.restore = append(p.restore, r.Set(cfg.rates[t]))
			}
		}
		c.Start(now)
	}
	return err
}

// loop ends a window every window length until Stop asks for the last one. It
// hands each window to the sender and goes on: it never waits on the
// network.
func (p *Profiler) loop() {
	defer close(p.done)
	// The first window is short (firstWindow), so that the first export,
	// and any trouble with the receiver, comes within seconds of Start;
	// the others are the configured length, on a schedule that does not
	// drift with the time each window takes.
	// window is the length of the windows, which a remote change
	// (control.go) may set at a window boundary.
	window := p.cfg.window
	next := p.started.Add(min(window, firstWindow))
	ticker := time.NewTimer(time.Until(next))
	defer ticker.Stop()
	// changeTimer fires for what the collector does within a window
	// (Collector.NextChange): starting and stopping the CPU profile under
	// a duty cycle, ending its parts, reading goroutines that outlive
	// their requests; change is nil while nothing is due.
	changeTimer := time.NewTimer(time.Hour)
	defer changeTimer.Stop()
	var change <-chan time.Time
	arm := func() {
		change = nil
		changeTimer.Stop()
		if at, ok := p.collector.NextChange(); ok {
			changeTimer.Reset(time.Until(at))
			change = changeTimer.C
		}
	}
	arm()
	for {
		select {
		case <-ticker.C:
			// The window ends when it is collected, not when the timer
			// fired: on a loaded machine the loop may run late, and the
			// CPU recording it stops must end within the window.
			now := time.Now()
			if boundary := p.boundary.Load(); boundary != nil {
				window = (*boundary)(next, now)
			} else {
				p.window(now, false)
			}
			next = next.Add(window)
			if now.After(next) {
				next = now.Add(window) // windows took longer than one window: start afresh
			}
			ticker.Reset(time.Until(next))
			arm()
		case <-change:
			if p.change() {
				arm()
			} else {
				change = nil // until the next window, rather than again at once
			}
		case ctx := <-p.stopRequests:
			p.stopErr = p.finish(ctx)
			running.Store(false)
			return
		}
	}
}

// finish ends the last window, sends it, restores the runtime and shuts
// the pipeline down within ctx, for Stop.
func (p *Profiler) finish(ctx context.Context) error {
	lastErr := p.window(time.Now(), true)
	p.stopTracker()
	p.restoreRuntime()
	if err := p.processContext.Withdraw(); err != nil {
		p.cfg.logger.Warn("pprofotel: withdrawing the process context", "error", err)
	}
	var errs []error
	if lastErr != nil {
		errs = append(errs, lastErr)
	}
	if err := p.pipe.shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("profiler: stop: %w", publicErrors(err)))
	}
	if p.metrics != nil {
		if err := p.metrics.Unregister(); err != nil {
			p.cfg.logger.Warn("pprofotel: unregistering the profiler's own metrics", "error", err)
		}
	}
	return errors.Join(errs...)
}

// window collects and converts one window and queues it for export. A
// panic in any of it is the profiler's bug, not the application's problem:
// it is logged and the window is lost, and profiling goes on.
func (p *Profiler) window(now time.Time, last bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			p.cfg.logger.Error("pprofotel: window dropped after an internal error", "panic", r)
			err = fmt.Errorf("profiler: internal error: %v", r)
		}
	}()
	began := time.Now()
	var w collect.Window
	if last {
		w = p.collector.Stop(now)
	} else {
		w = p.collector.Collect(now)
	}
	collected := time.Now()
	p.countLeaks(w)
	// Counted before the queue can export it, so that Stats never shows
	// more windows exported than collected; a window with nothing to send
	// is then taken back, so that every counted window ends exported,
	// failed or dropped, as Stats says.
	p.collected.Add(1)
	queued, repairs, err := p.pipe.send(w)
	p.collectNanos.Add(int64(collected.Sub(began)))
	p.convertNanos.Add(int64(time.Since(collected)))
	p.countRepairs(repairs)
	if !queued && err == nil {
		p.collected.Add(-1)
	}
	if err != nil {
		p.sent.Failed.Add(1)
		p.cfg.logger.Error("pprofotel: window not converted", "start", w.Start, "end", w.End, "error", err)
		return fmt.Errorf("profiler: window %s–%s not converted: %w",
			w.Start.Format(time.RFC3339), w.End.Format(time.RFC3339), err)
	}
	return nil
}

// countRepairs counts the strings of a window that were repaired into valid
// UTF-8, and logs the first window that had any: a label that is not valid
// UTF-8 usually comes back in every window, and the count says how often.
func (p *Profiler) countRepairs(r validutf8.Repairs) {
	if r.N == 0 {
		return
	}
	p.repaired.Add(r.N)
	if p.repairsLogged {
		return
	}
	p.repairsLogged = true
	p.cfg.logger.Warn("pprofotel: strings of the profiles that were not valid UTF-8 (pprof labels, function or file names) "+
		"are sent with U+FFFD in place of the invalid bytes; later ones are counted in Stats.StringsRepaired, not logged",
		"strings", r.N, "first", validutf8.Clip(r.First, validutf8.LogLimit))
}

// change does what the collector planned within the window
// (Collector.Change). Like a window, a panic in it is logged, not passed
// on to the application; it then reports false.
func (p *Profiler) change() (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			p.cfg.logger.Error("pprofotel: profiling within the window stopped after an internal error", "panic", r)
			ok = false
		}
	}()
	p.collector.Change(time.Now())
	return true
}

// restoreRuntime undoes what start set.
func (p *Profiler) restoreRuntime() {
	for i := len(p.restore) - 1; i >= 0; i-- {
		p.restore[i]()
	}
	p.restore = nil
}

// Stop ends profiling: it collects the current, partial window of every
// profile type and exports it after the windows still queued, for no longer
// than ctx allows, or, when ctx has no deadline, than WithStopTimeout
// allows (5s by default). When that time is up, the export in flight is
// cancelled, the rest is given up, and the error, which holds an
// [*UndeliveredError], lists every window that was not delivered, by its
// time range, and why. Stop restores the runtime's mutex and block profile
// rates, frees the CPU profiler, shuts the exporter down, and returns when
// the profiler's goroutines have ended.
//
// Stop returns by its deadline even when the exporter ignores the
// cancellation of the export in flight (an application's transport, say).
// That export's window is then reported undelivered, and the profiler's
// goroutine that made the call is left blocked in the exporter: when the
// call returns, it ends without counting, logging or calling anything.
//
// Stop may be called more than once and from any goroutine; every call
// waits for the same shutdown, bounded by the first call's ctx, and returns
// its result.
func (p *Profiler) Stop(ctx context.Context) error {
	if p == nil || p.done == nil {
		return nil // disabled
	}
	p.stopOnce.Do(func() {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, p.cfg.stopTimeout)
			defer cancel()
		}
		p.stopRequests <- ctx
		// The deadline must outlive the shutdown it bounds; later calls
		// wait here, in Do, for the same shutdown.
		<-p.done
	})
	<-p.done
	return p.stopErr
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
