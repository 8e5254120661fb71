package profiler

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/pprofotel/profiler/internal/collect"
)

// Option configures the profiler. Options given in code take precedence over
// environment variables, which take precedence over defaults. An option
// given an invalid value makes Start return an error that names the option
// and the value. When the same option is given twice, the last one wins; an
// invalid value is reported even when a later option replaces it.
type Option interface {
	apply(*options)
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// options records what the application set in code. A nil pointer or a
// zero means "not set in code", so that the environment and the defaults
// still apply.
type options struct {
	exporter     Exporter
	serviceName  *string
	resource     *resource.Resource
	window       *time.Duration
	profileTypes []ProfileType
	// rates holds the runtime rates set in code, 0 where none was.
	rates [numProfileTypes]int
	// intervals holds the read intervals set in code, 0 where none was.
	intervals      [numProfileTypes]time.Duration
	cpuDuty        int
	maxGoroutines  *int
	slowThreshold  time.Duration
	maxRoutes      int
	processContext *bool

	stopTimeout   *time.Duration
	maxWindows    int
	maxBytes      int64
	meterProvider metric.MeterProvider
	logger        *slog.Logger

	// runtime is what the package's tests put in place of the runtime's
	// profiles and floors; see testing.go.
	runtime runtimeHooks

	errs []error
}

func (o *options) fail(option string, arg any, reason string) {
	o.errs = append(o.errs, fmt.Errorf("profiler: %s(%v): %s", option, arg, reason))
}

// setRate records the runtime rate of profile type t, from the option
// its descriptor names.
func (o *options) setRate(t ProfileType, rate int, reason string) {
	if r := t.descriptor().Rate; rate <= 0 || r.Max > 0 && rate > r.Max {
		o.fail(t.descriptor().Rate.Option, rate, reason)
		return
	}
	o.rates[t] = rate
}

// WithExporter sets where the windows go. Without it, the environment
// chooses: package exporters/autoexport builds what OTEL_PROFILES_EXPORTER
// names, "otlp" (the default, over the protocol of
// OTEL_EXPORTER_OTLP_PROTOCOL), "none", "file" or "splunk"; the last two
// when their package is imported. The
// profiler owns the exporter from a successful Start on: Stop shuts it
// down.
func WithExporter(e Exporter) Option {
	return optionFunc(func(o *options) {
		if e == nil {
			o.fail("WithExporter", "nil", "exporter must not be nil")
			return
		}
		o.exporter = e
	})
}

// WithServiceName sets the service.name resource attribute. It takes
// precedence over a service.name in WithResource, OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES.
func WithServiceName(name string) Option {
	return optionFunc(func(o *options) {
		if strings.TrimSpace(name) == "" {
			o.fail("WithServiceName", strconv.Quote(name), "service name must not be empty")
			return
		}
		o.serviceName = &name
	})
}

// WithResource adds attributes that describe the profiled process, such as
// the TracerProvider's resource (resource.Default() detects host and
// process attributes; the profiler itself sets only service.name and
// telemetry.sdk.*). They are merged over the attributes of
// OTEL_RESOURCE_ATTRIBUTES and over the profiler's; the application's
// values win. A nil resource adds nothing.
func WithResource(r *resource.Resource) Option {
	return optionFunc(func(o *options) { o.resource = r })
}

// WithWindow sets the length of a window: every window, the profiler reads
// the runtime's profiles and exports what happened during it. (A profile's
// sample period, such as the CPU profiler's 10ms, is another thing.) The
// default is 60s, overridden by PPROFOTEL_WINDOW.
//
// It must be at least 1s. Every window reads the heap, goroutine, mutex and
// block profiles, converts them and sends a request: a few milliseconds of
// work, more on a large heap or with many goroutines (the goroutine profile
// holds the application back for about 6µs per goroutine), so that windows
// a millisecond apart would take half a core. The data do not change faster
// anyway: the heap profile is that of the last completed garbage
// collection, usually seconds old, and the CPU profiler samples a busy
// thread 100 times a second, so that a shorter window would hold fewer
// than 100 samples of it.
func WithWindow(d time.Duration) Option {
	// The floor is checked once every option is applied: the package's
	// tests lower it with an option of their own.
	return optionFunc(func(o *options) { o.window = &d })
}

// WithProfileTypes replaces the set of collected profiles. Duplicates are
// ignored; profiles are always collected in the order of the ProfileType
// constants. The default is CPUProfile, HeapProfile and GoroutineProfile,
// overridden by PPROFOTEL_PROFILES.
func WithProfileTypes(types ...ProfileType) Option {
	types = append([]ProfileType(nil), types...)
	return optionFunc(func(o *options) {
		if len(types) == 0 {
			o.fail("WithProfileTypes", "", "at least one profile type is required")
			return
		}
		for _, t := range types {
			if !t.valid() {
				o.fail("WithProfileTypes", t, "unknown profile type")
				return
			}
		}
		o.profileTypes = types
	})
}

// WithCPUDutyCycle sets the share of every window, in percent from 1 to
// 100, during which the CPU profile records. The runtime's CPU profiler,
// which samples every thread 100 times a second, costs the application far
// more than anything else the profiler does, and that cost falls in
// proportion to the share. Where in the window the recording falls is
// drawn at random for every window, so that work recurring with the
// window is not always missed. The exported CPU profile's time range and
// duration are the recorded ones, so rates computed from it stay true; the
// other profile types cover the whole window. 100 records continuously,
// back to back. A recording is never shorter than 100ms, ten samples of a
// busy thread. The default is 17 (about a sixth: 10.2s of the default
// 60s window), overridden by PPROFOTEL_CPU_DUTY_CYCLE.
func WithCPUDutyCycle(percent int) Option {
	return optionFunc(func(o *options) {
		if percent < 1 || percent > 100 {
			o.fail("WithCPUDutyCycle", percent, "duty cycle must be a percentage from 1 to 100")
			return
		}
		o.cpuDuty = percent
	})
}

// WithOffCPUDutyCycle sets the share of every cycle, in percent from 1 to
// 100, during which OffCPUProfile runs the execution tracer: the cycle is
// the window, or 10s when the window is longer, and the traced part comes
// first; the untraced rest varies by up to half its length either way, so
// that the traced parts do not keep step with periodic work. Waits are
// measured in the traced parts and scaled to the window.
// The default is 10, overridden by PPROFOTEL_OFFCPU_DUTY_CYCLE. Package
// github.com/pprofotel/profiler/offcpu, which links the profile in, has an
// example.
func WithOffCPUDutyCycle(percent int) Option {
	return optionFunc(func(o *options) {
		o.setRate(OffCPUProfile, percent, "duty cycle must be a percentage from 1 to 100")
	})
}

// WithSlowRequestThreshold sets the least duration of a request (a local
// root span of a tracer wrapped by package labels) that OffCPUProfile
// explains as slow, in a profile of its own (slowrequests: where its wall
// time went, on CPU, off CPU by wait reason and runnable, by stack,
// linked to its span). A request is watched, and the execution tracer
// started if it is not running, once it has run half the threshold. It
// must be at least 10ms. The default is 100ms, overridden by
// PPROFOTEL_SLOW_REQUEST_THRESHOLD. docs/slow-requests.md says what is
// captured and what it costs.
func WithSlowRequestThreshold(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d < collect.MinSlowThreshold {
			o.fail("WithSlowRequestThreshold", d, "threshold must be at least "+collect.MinSlowThreshold.String())
			return
		}
		o.slowThreshold = d
	})
}

// WithMutexProfileFraction sets the rate passed to
// runtime.SetMutexProfileFraction while MutexProfile is collected: on
// average one in rate contention events is recorded. It must be positive,
// since 0 would turn off the very profile that was asked for. The default
// is 10, overridden by PPROFOTEL_MUTEX_PROFILE_FRACTION.
func WithMutexProfileFraction(rate int) Option {
	return optionFunc(func(o *options) {
		o.setRate(MutexProfile, rate, "fraction must be positive")
	})
}

// WithBlockProfileRate sets the rate, in nanoseconds, passed to
// runtime.SetBlockProfileRate while BlockProfile is collected: blocking
// events are sampled on average once per rate nanoseconds spent blocked. It
// must be positive, since 0 would turn off the very profile that was asked
// for. The default is 10000 (10µs), overridden by PPROFOTEL_BLOCK_PROFILE_RATE.
func WithBlockProfileRate(rate int) Option {
	return optionFunc(func(o *options) {
		o.setRate(BlockProfile, rate, "rate must be positive")
	})
}

// WithGoroutineLeakInterval sets the least time between two reads of
// GoroutineLeakProfile, each of which runs a full garbage collection: it is
// read in the first window, then in every nth window, n being d divided by
// the window and rounded up, and in the last window, at Stop. An interval
// no longer than the window reads it every window. It must be positive. The
// default is 5 minutes (every fifth window at the default window),
// overridden by PPROFOTEL_GOROUTINELEAK_INTERVAL.
func WithGoroutineLeakInterval(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d <= 0 {
			o.fail(GoroutineLeakProfile.descriptor().Interval.Option, d, "interval must be positive")
			return
		}
		o.intervals[GoroutineLeakProfile] = d
	})
}

// WithMaxGoroutines sets the number of running goroutines above which a
// window goes without its goroutine profile: the runtime writes that
// profile while the application's goroutines wait, for a time that grows
// with their number (about 6µs per goroutine on the machine of
// benchmark/README.md, "Goroutine profile"). Skipped profiles are counted
// in Stats.GoroutineProfilesSkipped and logged; every window checks again.
// 0 sets no limit; a negative n is an error. The default is 10,000,
// overridden by PPROFOTEL_MAX_GOROUTINES.
func WithMaxGoroutines(n int) Option {
	return optionFunc(func(o *options) {
		if n < 0 {
			o.fail("WithMaxGoroutines", n, "must not be negative (0 sets no limit)")
			return
		}
		o.maxGoroutines = &n
	})
}

// maxMaxRoutes is the largest bound WithMaxRoutes takes: each
// distinct route can multiply a window's samples, one per stack and
// route, and ten thousand is already more than a backend's label index
// is glad to hold.
const maxMaxRoutes = 10_000

// WithMaxRoutes sets the number of distinct routes a window carries:
// the sample attribute "route" of CPU, off-CPU and goroutine samples
// taken in a request (a local root span of a TracerProvider wrapped with
// package labels) and the request counts. The requests of the routes
// past the first n of a window are counted under the route "_other",
// and in Stats.RoutesOverflowed. n must be from 1 to 10,000; the
// default is 100, overridden by PPROFOTEL_MAX_ROUTES.
func WithMaxRoutes(n int) Option {
	return optionFunc(func(o *options) {
		if n < 1 || n > maxMaxRoutes {
			o.fail("WithMaxRoutes", n, "must be from 1 to 10000")
			return
		}
		o.maxRoutes = n
	})
}

// WithProcessContext turns on or off the publication of the profiler's
// resource as the process context of OTEP 4719, which the OpenTelemetry
// eBPF profiler reads to tell which service a process is. It is on by
// default on Linux amd64 and arm64 (and does nothing elsewhere),
// overridden by PPROFOTEL_PROCESS_CONTEXT=false.
func WithProcessContext(publish bool) Option {
	return optionFunc(func(o *options) { o.processContext = &publish })
}

// WithQueueLimits bounds the windows waiting to be exported while the
// receiver is slow or unreachable: at most windows of them, whose requests
// take at most bytes in protobuf encoding (the decoded requests the queue
// holds take a few times that in memory). When a new window does not fit,
// the oldest queued windows are dropped; drops are counted (Stats) and
// logged, at most one line a minute. The newest window is always kept,
// even when it alone exceeds bytes. The window being exported is not
// counted. The defaults are 10 windows and 16 MiB.
func WithQueueLimits(windows int, bytes int64) Option {
	return optionFunc(func(o *options) {
		if windows <= 0 || bytes <= 0 {
			o.fail("WithQueueLimits", fmt.Sprintf("%d, %d", windows, bytes), "both limits must be positive")
			return
		}
		o.maxWindows, o.maxBytes = windows, bytes
	})
}

// WithStopTimeout bounds how long Profiler.Stop waits for the last windows
// to be delivered when the context it is given has no deadline; a context
// with a deadline decides alone. It must be positive. The default is 5s.
func WithStopTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d <= 0 {
			o.fail("WithStopTimeout", d, "timeout must be positive")
			return
		}
		o.stopTimeout = &d
	})
}

// WithMeterProvider sets the MeterProvider that receives the profiler's own
// metrics (see Stats for what they count). By default they go to the global
// MeterProvider, otel.GetMeterProvider(), which discards them unless the
// application installs one, before or after Start. A nil provider keeps the
// default.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(o *options) { o.meterProvider = mp })
}

// WithLogger sets the logger for the profiler's own diagnostics. By default
// the profiler is quiet: it passes only warnings to the handler of
// slog.Default() as it is when Start is called. Errors (windows not
// delivered or dropped) always go to otel.Handle, as the OpenTelemetry
// SDK's own do; they reach slog too only when WithLogger is given, so that
// they are not printed twice by default. To silence the profiler's logs,
// pass slog.New(slog.DiscardHandler) (and set otel.SetErrorHandler for its
// errors).
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) {
		if l == nil {
			o.fail("WithLogger", "nil", "logger must not be nil")
			return
		}
		o.logger = l
	})
}

// runtimeHooks replaces, in the package's tests, what the profiler reads
// from the runtime and the floors that keep production windows sane; the
// zero value is the runtime's own.
type runtimeHooks struct {
	source collect.Source // nil: runtime/pprof's profiles
	cpu    collect.CPUProfiler
	// short lowers the floors, so that tests run windows of milliseconds.
	short bool
}

func (h runtimeHooks) minWindow() time.Duration {
	if h.short {
		return time.Millisecond
	}
	return collect.MinWindow
}

func (h runtimeHooks) minCPUDuration() time.Duration {
	if h.short {
		return time.Millisecond
	}
	return collect.MinCPUDuration
}
