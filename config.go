package profiler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/pprofotel/profiler/exporters/autoexport"
	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/collect/requests"
	"github.com/pprofotel/profiler/internal/envconfig"
	"github.com/pprofotel/profiler/internal/export"
	"github.com/pprofotel/profiler/internal/export/registry"
)

// config is the resolved configuration: options over environment variables
// over defaults, every value validated.
type config struct {
	// disabled is set by PPROFOTEL_ENABLED=false or OTEL_SDK_DISABLED=true.
	// A disabled config carries only the logger: nothing else is read or
	// validated, because a profiler switched off must never stop the
	// application from starting.
	disabled bool
	// disabledBy names the setting that disabled it.
	disabledBy string
	window     time.Duration
	// profileTypes is non-empty, without duplicates, in ascending order.
	profileTypes []ProfileType
	// rates holds, for each profile type whose descriptor has a Rate, the
	// runtime rate set while it is collected (0 for the others).
	rates [numProfileTypes]int
	// intervals holds, for each profile type whose descriptor has an
	// Interval, the least time between two reads (0 for the others).
	intervals [numProfileTypes]time.Duration
	// cpuDuty is the CPU duty cycle in percent, and cpuDuration the part
	// of each window the CPU profile records at it, at most window
	// (continuous); see WithCPUDutyCycle.
	cpuDuty     int
	cpuDuration time.Duration
	// maxGoroutines is the goroutine count above which the goroutine
	// profile is skipped, 0 for no limit; see WithMaxGoroutines.
	maxGoroutines int
	// slowThreshold is the least duration of a request explained as slow;
	// see WithSlowRequestThreshold.
	slowThreshold time.Duration
	// maxRoutes bounds the distinct routes of a window; see
	// WithMaxRoutes.
	maxRoutes int
	// exporter is the option's, or one built from the environment
	// (fromEnv), which a failed Start shuts down again.
	exporter Exporter
	fromEnv  bool
	// maxWindows and maxBytes bound the delivery queue; 0 takes its
	// defaults.
	maxWindows    int
	maxBytes      int64
	meterProvider metric.MeterProvider
	resource      *resource.Resource
	// resourceRepairs is what making the resource valid UTF-8 took.
	resourceRepairs resourceRepairs
	logger          *slog.Logger
	// processContext publishes the resource for readers outside the
	// process (OTEP 4719); see WithProcessContext.
	processContext bool
	// stopTimeout bounds Stop when its context has no deadline.
	stopTimeout time.Duration
	runtime     runtimeHooks
	// warnings are about the environment: invalid values, ignored as the
	// OpenTelemetry specification asks. Start logs each once.
	warnings []error
}

// newConfig resolves opts, the environment seen through getenv, and the
// defaults. An invalid option is a programming error: newConfig reports
// every one at once, each naming the option and its value. An invalid
// variable is not an error: it is ignored (a boolean reads as false), as
// the OpenTelemetry specification asks, and recorded in the config's
// warnings, so that the environment can never stop a service from
// starting. A variable is read only when it decides something: one
// shadowed by an option is not validated.
func newConfig(opts []Option, getenv func(string) string) (*config, error) {
	return newConfigEnv(opts, getenv, nil)
}

// newConfigEnv is newConfig; it warns, besides, about every PPROFOTEL_
// variable of environ (os.Environ's form) that the module does not read,
// an old name saying what replaced it.
func newConfigEnv(opts []Option, getenv func(string) string, environ []string) (*config, error) {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	env := envconfig.New(getenv, "profiler: ")
	env.CheckNames(environ, envPrefix, knownVariables(), devVariables)

	c := &config{logger: o.logger, runtime: o.runtime}
	if c.logger == nil {
		c.logger = slog.New(minLevelHandler{min: slog.LevelWarn, next: slog.Default().Handler()})
	}
	if c.disabledBy = disabled(env); c.disabledBy != "" {
		c.disabled = true
		c.warnings = env.Warnings()
		return c, nil
	}
	c.logger = slog.New(reportingHandler{next: c.logger.Handler(), logErrors: o.logger != nil})
	if v, ok := env.Lookup(envConfigFile); ok {
		env.Warn(fmt.Errorf("%s=%q: the profiler does not read the configuration file (its schema has no profiles section); "+
			"its options and the environment variables apply", envConfigFile, v))
	}

	if len(o.errs) == 0 {
		if err := c.resolveExporter(&o, env, getenv); err != nil {
			return nil, err
		}
	}
	c.resolveSampling(&o, env)
	c.resolveCollect(&o, env)
	c.processContext = true
	if o.processContext != nil {
		c.processContext = *o.processContext
	} else {
		c.processContext = env.BoolDefaultTrue(envProcessCtx)
	}
	c.maxWindows, c.maxBytes, c.meterProvider = o.maxWindows, o.maxBytes, o.meterProvider
	c.stopTimeout = defaultStopTimeout
	if o.stopTimeout != nil {
		c.stopTimeout = *o.stopTimeout
	}
	in := resourceFromEnv(&o, env)

	if len(o.errs) > 0 {
		c.shutdownOwnExporter()
		return nil, errors.Join(o.errs...)
	}
	c.warnings = env.Warnings()
	c.resource, c.resourceRepairs = buildResource(context.Background(), in, c.logger)
	return c, nil
}

// resolveExporter takes the option's exporter, or builds the one the
// environment names.
func (c *config) resolveExporter(o *options, env *envconfig.Reader, getenv func(string) string) error {
	if o.exporter != nil {
		c.exporter = o.exporter
		return nil
	}
	// The exporter logs through the profiler's logger.
	exp, err := autoexport.NewExporter(export.ContextWithLogger(context.Background(), c.logger),
		registry.WithGetenv(getenv), registry.WithWarn(env.Warn))
	if err != nil {
		return fmt.Errorf("profiler: the exporter the environment names: %w", err)
	}
	c.exporter, c.fromEnv = exp, true
	return nil
}

// shutdownOwnExporter shuts down an exporter built from the environment,
// when Start fails after building it. An exporter given as an option stays
// the application's until Start succeeds.
func (c *config) shutdownOwnExporter() {
	if c.fromEnv && c.exporter != nil {
		_ = c.exporter.Shutdown(context.Background())
	}
}

// availableProfileTypes leaves out of types, read from the environment,
// those this program cannot provide, with a warning each: the environment
// is the operator's, who cannot link a profile in or change the Go
// release, so it must not stop the other profiles. An option asking for
// one makes Start fail instead (checkAvailable). When none is left, the
// variable is ignored as a whole.
func availableProfileTypes(env *envconfig.Reader, types []ProfileType) []ProfileType {
	var kept []ProfileType
	for _, t := range types {
		if err := t.Available(); err != nil {
			env.Warn(fmt.Errorf("%s: %s left out: %w", envProfiles, t, err))
			continue
		}
		kept = append(kept, t)
	}
	if len(kept) == 0 && len(types) > 0 {
		env.Warn(fmt.Errorf("%s: no profile type this program provides; ignored", envProfiles))
	}
	return kept
}

// resolveSampling resolves the window, the profile types and their
// runtime rates. Where neither an option nor a variable sets the window
// or the types, the exporter's collection defaults (Splunk's) apply, then
// the profiler's.
func (c *config) resolveSampling(o *options, env *envconfig.Reader) {
	exporterTypes, exporterWindow, err := exporterDefaults(c.exporter)
	if err != nil {
		o.errs = append(o.errs, err)
	}
	floor := c.runtime.minWindow()
	c.window = defaultWindow
	switch {
	case o.window != nil:
		if *o.window < floor {
			o.fail("WithWindow", *o.window, fmt.Sprintf("window must be at least %s", floor))
		} else {
			c.window = *o.window
		}
	default:
		if d, ok := env.Duration(envWindow, "window", floor); ok {
			c.window = d
		} else if exporterWindow >= floor {
			c.window = exporterWindow
		}
	}

	var types []ProfileType
	if o.profileTypes != nil {
		types = o.profileTypes
	} else if t, ok := profileTypesFromEnv(env); ok {
		types = availableProfileTypes(env, t)
	}
	if len(types) == 0 {
		types = exporterTypes
	}
	if len(types) == 0 {
		types = defaultProfileTypes()
	}
	c.profileTypes = canonicalProfileTypes(types)

	for t := range ProfileType(numProfileTypes) {
		if r := t.descriptor().Rate; r != nil {
			c.rates[t] = r.Default
			if o.rates[t] != 0 {
				c.rates[t] = o.rates[t]
			} else if n, ok := env.IntBetween(r.Env, 1, rateMax(r), r.Want+" (0 would switch "+t.String()+" profiling off)"); ok {
				c.rates[t] = n
			}
		}
		if iv := t.descriptor().Interval; iv != nil {
			c.intervals[t] = iv.Default
			if o.intervals[t] != 0 {
				c.intervals[t] = o.intervals[t]
			} else if d, ok := env.Duration(iv.Env, "interval", 0); ok {
				c.intervals[t] = d
			}
		}
	}
}

// resolveCollect resolves how each window is collected, beyond the
// profile types and their rates.
func (c *config) resolveCollect(o *options, env *envconfig.Reader) {
	c.maxGoroutines = collect.DefaultMaxGoroutines
	if o.maxGoroutines != nil {
		c.maxGoroutines = *o.maxGoroutines
	} else if n, ok := env.IntAtLeast(envMaxGoroutines, 0, "must be a whole number of goroutines, 0 for no limit"); ok {
		c.maxGoroutines = n
	}

	c.maxRoutes = requests.DefaultMaxRoutes
	if o.maxRoutes != 0 {
		c.maxRoutes = o.maxRoutes
	} else if n, ok := env.IntBetween(envMaxRoutes, 1, maxMaxRoutes, "must be a whole number of routes from 1 to 10000"); ok {
		c.maxRoutes = n
	}

	duty := defaultCPUDuty
	if o.cpuDuty != 0 {
		duty = o.cpuDuty
	} else if n, ok := env.IntBetween(envCPUDutyCycle, 1, 100, "duty cycle must be a percentage from 1 to 100"); ok {
		duty = n
	}
	c.cpuDuty = duty
	c.cpuDuration = cpuDuration(c.window, duty, c.runtime.minCPUDuration())

	c.slowThreshold = collect.DefaultSlowThreshold
	if o.slowThreshold != 0 {
		c.slowThreshold = o.slowThreshold
	} else if d, ok := env.Duration(envSlowThreshold, "threshold", collect.MinSlowThreshold); ok {
		c.slowThreshold = d
	}
}

// rateMax is the most a runtime rate's variable may be.
func rateMax(r *collect.Rate) int {
	if r.Max > 0 {
		return r.Max
	}
	return int(^uint(0) >> 1)
}

// cpuDuration is the part of a window the CPU profile records at a duty
// cycle of percent: never less than floor (ten samples of a busy thread)
// nor more than the window.
func cpuDuration(window time.Duration, percent int, floor time.Duration) time.Duration {
	if percent >= 100 {
		return window
	}
	return min(max(window*time.Duration(percent)/100, floor), window)
}

// resourceFromEnv gathers the sources of the resource.
func resourceFromEnv(o *options, env *envconfig.Reader) resourceInputs {
	var in resourceInputs
	if o.serviceName != nil {
		in.serviceName = *o.serviceName
	}
	in.user = o.resource
	in.envServiceName, _ = env.Lookup(envServiceName)
	// An undecodable value is kept as written, as otel-go's resource
	// detector keeps it.
	if kvs, ok := env.KeyValues(envconfig.List{KeepUndecoded: true}, envResourceAttributes); ok {
		for _, kv := range kvs {
			in.envAttrs = append(in.envAttrs, attribute.String(kv.Key, kv.Value))
		}
	}
	return in
}

// disabled returns the variable that turns the profiler off, "" when
// neither does.
// OTEL_SDK_DISABLED follows the specification's boolean rule: only "true"
// switches off, any other value reads as false (warned about unless it is
// "false"). PPROFOTEL_ENABLED, on by default, is switched off only by
// "false"; another value is warned about and leaves it on.
func disabled(env *envconfig.Reader) string {
	if sdkDisabled, _ := env.Bool(envSDKDisabled); sdkDisabled {
		return envSDKDisabled
	}
	if !env.BoolDefaultTrue(envEnabled) {
		return envEnabled
	}
	return ""
}

// profileTypesFromEnv reads PPROFOTEL_PROFILES as parseProfileList does,
// except that an entry it cannot read costs that entry alone, with one
// warning naming every such entry; the variable is ignored as a whole
// only when no entry is left.
func profileTypesFromEnv(env *envconfig.Reader) ([]ProfileType, bool) {
	v, ok := env.Lookup(envProfiles)
	if !ok {
		return nil, false
	}
	var types []ProfileType
	var unknown []string
	for f := range strings.SplitSeq(v, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		if t, ok := parseProfileType(f); ok {
			types = append(types, t)
		} else {
			unknown = append(unknown, strconv.Quote(f))
		}
	}
	switch {
	case len(types) == 0:
		env.Invalid(envProfiles, v, fmt.Errorf("no profile type named (want %s)", collect.NameList()))
		return nil, false
	case len(unknown) > 0:
		env.Warn(fmt.Errorf("%s=%q: unknown profile type %s (want %s); left out, the other entries stand",
			envProfiles, v, strings.Join(unknown, ", "), collect.NameList()))
	}
	return types, true
}

// parseProfileList parses PPROFOTEL_PROFILES: names separated by commas,
// blanks around them allowed.
func parseProfileList(s string) ([]ProfileType, error) {
	var types []ProfileType
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		t, ok := parseProfileType(f)
		if !ok {
			return nil, fmt.Errorf("unknown profile type %q (want %s)", f, collect.NameList())
		}
		types = append(types, t)
	}
	if len(types) == 0 {
		return nil, fmt.Errorf("no profile type named (want %s)", collect.NameList())
	}
	return types, nil
}

// canonicalProfileTypes returns types without duplicates, in ascending
// order, in a new slice.
func canonicalProfileTypes(types []ProfileType) []ProfileType {
	var seen [numProfileTypes]bool
	for _, t := range types {
		seen[t] = true
	}
	out := make([]ProfileType, 0, len(types))
	for t, ok := range seen {
		if ok {
			out = append(out, ProfileType(t))
		}
	}
	return out
}
