package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"time"

	ddprofiler "github.com/DataDog/dd-trace-go/v2/profiler"
	"github.com/felixge/fgprof"
	"github.com/grafana/pyroscope-go"

	"github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/exporters/otlpprofilehttp"
	_ "github.com/pprofotel/profiler/offcpu"
)

// The sampling rates every profiler that collects mutex and block profiles
// runs with: pprofotel's defaults, given explicitly to the peers (whose
// defaults differ: dd-trace-go samples blocking once per 100 ms, and
// pyroscope-go leaves both rates to the application).
const (
	mutexFraction = 10
	blockRateNS   = 10000
)

// setup is one configuration under test: a name for the table and a
// function that starts the profiler in the child process and returns a
// function that stops it.
type setup struct {
	name  string
	label string
	start func(stubAddr string, period time.Duration) (stop func(), err error)
	// traced serves the HTTP service's requests in server spans (see
	// traced.go), as an instrumented service does.
	traced bool
}

var setups = []setup{
	{"none", "no profiler", startNone, false},
	{"floor", "runtime CPU profiler alone (the floor)", startFloor, false},
	{"pprofotel", "pprofotel, defaults (cpu, heap, goroutine; CPU a sixth of each window)", startPprofotelDefaults, false},
	{"pprofotel-continuous", "pprofotel, all five types, CPU continuous", startPprofotelAll, false},
	{"pprofotel-duty", "pprofotel, all five types, default duty cycle (CPU a sixth of each window)", startPprofotelDuty, false},
	{"pyroscope", "pyroscope-go, all five types", startPyroscope, false},
	{"datadog", "dd-trace-go profiler, all five types, CPU continuous", startDatadog, false},
	{"datadog-default", "dd-trace-go profiler, defaults (cpu, heap, metrics; CPU the whole period)", startDatadogDefaults, false},
	{"datadog-quarter", "dd-trace-go profiler, defaults but CPU a quarter of each period", startDatadogQuarter, false},
	{"pprofotel-offcpu", "pprofotel, defaults + offcpu (duty cycle 10 %)", startPprofotelOffCPU, false},
	{"pprofotel-offcpu-100", "pprofotel, defaults + offcpu, duty cycle 100 %", startPprofotelOffCPUAlways, false},
	{"fgprof", "fgprof (99 Hz wall-clock stacks of every goroutine), one profile per period", startFgprof, false},
	{"pprofotel-offcpu-flightrecorder", "pprofotel, defaults + offcpu, and the runtime's flight recorder kept running (issue 29's option b)", startPprofotelOffCPUFlightRecorder, false},
	// Issue 29: the service in server spans, with a slow request now and
	// then (-lock-every), without a profiler and with the profile types of
	// the proof; run against a build of the SDK before the issue
	// (-baseline) to see what routes and slow requests add.
	{"spans", "no profiler, traced service", startNone, true},
	{"pprofotel-cpu-offcpu-spans", "pprofotel cpu,offcpu (default duty cycles), traced service", startPprofotelCPUOffCPU, true},
}

func setupByName(name string) (setup, bool) {
	for _, s := range setups {
		if s.name == name {
			return s, true
		}
	}
	return setup{}, false
}

func startNone(string, time.Duration) (func(), error) { return func() {}, nil }

// startFloor runs the runtime's CPU profiler and nothing else, writing
// nowhere: what every profiler that profiles CPU continuously pays at
// least.
func startFloor(string, time.Duration) (func(), error) {
	if err := pprof.StartCPUProfile(io.Discard); err != nil {
		return nil, err
	}
	return pprof.StopCPUProfile, nil
}

func startPprofotel(stubAddr string, period time.Duration, opts ...profiler.Option) (func(), error) {
	exp, err := otlpprofilehttp.New(context.Background(),
		otlpprofilehttp.WithEndpointURL("http://"+stubAddr+"/v1development/profiles"))
	if err != nil {
		return nil, err
	}
	opts = append([]profiler.Option{
		profiler.WithServiceName("overhead-bench"),
		profiler.WithWindow(period),
		profiler.WithExporter(exp),
		profiler.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	}, opts...)
	p, err := profiler.Start(opts...)
	if err != nil {
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Stop(ctx)
	}, nil
}

func startPprofotelDefaults(stubAddr string, period time.Duration) (func(), error) {
	return startPprofotel(stubAddr, period)
}

// allTypes asks pprofotel for all five profile types.
var allTypes = profiler.WithProfileTypes(
	profiler.CPUProfile, profiler.HeapProfile, profiler.GoroutineProfile,
	profiler.MutexProfile, profiler.BlockProfile)

func startPprofotelAll(stubAddr string, period time.Duration) (func(), error) {
	return startPprofotel(stubAddr, period, allTypes, profiler.WithCPUDutyCycle(100))
}

func startPprofotelDuty(stubAddr string, period time.Duration) (func(), error) {
	return startPprofotel(stubAddr, period, allTypes)
}

// startPprofotelOffCPU adds the off-CPU profile at its default duty
// cycle to the defaults.
func startPprofotelOffCPU(stubAddr string, period time.Duration) (func(), error) {
	return startPprofotel(stubAddr, period, profiler.WithProfileTypes(
		profiler.CPUProfile, profiler.HeapProfile, profiler.GoroutineProfile, profiler.OffCPUProfile))
}

// startPprofotelOffCPUAlways traces all the time: the execution tracer's
// own cost, of which the default duty cycle pays a share.
func startPprofotelOffCPUAlways(stubAddr string, period time.Duration) (func(), error) {
	return startPprofotel(stubAddr, period, profiler.WithProfileTypes(
		profiler.CPUProfile, profiler.HeapProfile, profiler.GoroutineProfile, profiler.OffCPUProfile),
		profiler.WithOffCPUDutyCycle(100))
}

// startPprofotelCPUOffCPU runs the profile types of issue 29's proof,
// PPROFOTEL_PROFILES=cpu,offcpu, everything else at its default.
func startPprofotelCPUOffCPU(stubAddr string, period time.Duration) (func(), error) {
	return startPprofotel(stubAddr, period, profiler.WithProfileTypes(profiler.CPUProfile, profiler.OffCPUProfile))
}

// startPprofotelOffCPUFlightRecorder is pprofotel-offcpu with the
// runtime's flight recorder running all along, as keeping the last
// seconds of trace at hand for slow requests would (issue 29's option b):
// the tracer's hooks on every goroutine and the flight recorder's copying,
// never read.
func startPprofotelOffCPUFlightRecorder(stubAddr string, period time.Duration) (func(), error) {
	stop, err := startPprofotelOffCPU(stubAddr, period)
	if err != nil {
		return nil, err
	}
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{})
	if err := fr.Start(); err != nil {
		stop()
		return nil, err
	}
	return func() { fr.Stop(); stop() }, nil
}

// startFgprof runs fgprof, the peer for wall-clock (on- and off-CPU) time,
// as a continuous profiler would: at its only rate (99 Hz), one profile
// per period, each written in pprof format and discarded (its cost is the
// sampling and the write; nothing is uploaded).
func startFgprof(_ string, period time.Duration) (func(), error) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			stop := fgprof.Start(io.Discard, fgprof.FormatPprof)
			select {
			case <-time.After(period):
				stop()
			case <-done:
				stop()
				return
			}
		}
	}()
	return func() { close(done); <-stopped }, nil
}

// startPyroscope asks pyroscope-go for the same five profiles. It does not
// set the mutex and block rates itself; its documentation tells the
// application to, so we do, with the shared rates.
func startPyroscope(stubAddr string, period time.Duration) (func(), error) {
	runtime.SetMutexProfileFraction(mutexFraction)
	runtime.SetBlockProfileRate(blockRateNS)
	p, err := pyroscope.Start(pyroscope.Config{
		ApplicationName: "overhead-bench",
		ServerAddress:   "http://" + stubAddr,
		UploadRate:      period,
		ProfileTypes: []pyroscope.ProfileType{
			pyroscope.ProfileCPU,
			pyroscope.ProfileAllocObjects, pyroscope.ProfileAllocSpace,
			pyroscope.ProfileInuseObjects, pyroscope.ProfileInuseSpace,
			pyroscope.ProfileGoroutines,
			pyroscope.ProfileMutexCount, pyroscope.ProfileMutexDuration,
			pyroscope.ProfileBlockCount, pyroscope.ProfileBlockDuration,
		},
	})
	if err != nil {
		return nil, err
	}
	return func() { p.Stop() }, nil
}

// startDatadog asks dd-trace-go's profiler for the same five profiles with
// a CPU profile that covers the whole period, as the others do. Execution
// tracing (on by default on amd64, one trace per 15 minutes) and
// instrumentation telemetry are not profiles and are switched off through
// their environment variables by the parent; see childEnv.
func startDatadog(stubAddr string, period time.Duration) (func(), error) {
	err := ddprofiler.Start(
		ddprofiler.WithService("overhead-bench"),
		ddprofiler.WithAgentAddr(stubAddr),
		ddprofiler.WithPeriod(period),
		ddprofiler.CPUDuration(period),
		ddprofiler.WithProfileTypes(
			ddprofiler.CPUProfile, ddprofiler.HeapProfile, ddprofiler.GoroutineProfile,
			ddprofiler.MutexProfile, ddprofiler.BlockProfile),
		ddprofiler.MutexProfileFraction(mutexFraction),
		ddprofiler.BlockProfileRate(blockRateNS),
		ddprofiler.WithLogStartup(false),
	)
	if err != nil {
		return nil, err
	}
	return ddprofiler.Stop, nil
}

// startDatadogDefaults runs dd-trace-go's profiler at its defaults: CPU
// and heap profiles (and its runtime metrics), its default rates, and a
// CPU profile for the whole of each period (its DefaultDuration, a
// minute, is cut to the period). Only the period is the run's.
func startDatadogDefaults(stubAddr string, period time.Duration) (func(), error) {
	return startDatadogWith(stubAddr, period)
}

// startDatadogQuarter is startDatadogDefaults with the CPU profile
// recording a quarter of each period: what datadog-default ran before it
// was found not to be dd-trace-go's default, kept to compare with the
// figures of that time.
func startDatadogQuarter(stubAddr string, period time.Duration) (func(), error) {
	return startDatadogWith(stubAddr, period, ddprofiler.CPUDuration(period/4))
}

func startDatadogWith(stubAddr string, period time.Duration, opts ...ddprofiler.Option) (func(), error) {
	err := ddprofiler.Start(append([]ddprofiler.Option{
		ddprofiler.WithService("overhead-bench"),
		ddprofiler.WithAgentAddr(stubAddr),
		ddprofiler.WithPeriod(period),
		ddprofiler.WithLogStartup(false),
	}, opts...)...)
	if err != nil {
		return nil, err
	}
	return ddprofiler.Stop, nil
}

// childEnv is the environment of every child, whatever its configuration,
// so that no configuration differs from another by a variable.
func childEnv() []string {
	return append(os.Environ(),
		"DD_PROFILING_EXECUTION_TRACE_ENABLED=false",
		"DD_INSTRUMENTATION_TELEMETRY_ENABLED=false",
		"DD_TRACE_STARTUP_LOGS=false",
	)
}

func describeRates() string {
	return fmt.Sprintf("mutex fraction %d, block rate %d ns", mutexFraction, blockRateNS)
}
