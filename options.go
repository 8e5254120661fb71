package profiler

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/envconfig"
	"github.com/pprofotel/profiler/internal/export"
)

// ExporterKind selects where profiles go.
type ExporterKind string

// The exporter kinds, spelled as in PPROFOTEL_EXPORTER.
const (
	// ExporterOTLP sends profiles to an OTLP endpoint (the default).
	ExporterOTLP ExporterKind = "otlp"
	// ExporterFile writes one file per window into a directory; see
	// WithFileDir, WithFileJSON and WithFileRetention (the oldest files go
	// beyond 1000 files or 1 GiB).
	ExporterFile ExporterKind = "file"
	// ExporterNone collects profiles and discards them. It measures the
	// profiler's own overhead without a collector.
	ExporterNone ExporterKind = "none"
	// ExporterSplunk sends CPU (and, with the heap profile, allocation)
	// profiles as OTLP logs over gRPC in Splunk's AlwaysOn Profiling
	// format, pprof-gzip-base64. SPLUNK_PROFILER_ENABLED=true selects it
	// too; README lists the SPLUNK_PROFILER_* variables it reads.
	ExporterSplunk ExporterKind = "splunk"
)

func (k ExporterKind) valid() bool { return slices.Contains(exporterNames(), string(k)) }

// Protocol is the OTLP transport, spelled as in OTEL_EXPORTER_OTLP_PROTOCOL.
type Protocol string

// The OTLP transports.
const (
	// ProtocolGRPC is OTLP over gRPC.
	ProtocolGRPC Protocol = "grpc"
	// ProtocolHTTPProtobuf is OTLP over HTTP with binary protobuf bodies
	// (the default).
	ProtocolHTTPProtobuf Protocol = "http/protobuf"
	// ProtocolHTTPJSON is OTLP over HTTP with JSON bodies.
	ProtocolHTTPJSON Protocol = "http/json"
)

var protocolNames = []string{string(ProtocolGRPC), string(ProtocolHTTPProtobuf), string(ProtocolHTTPJSON)}

func (p Protocol) valid() bool { return slices.Contains(protocolNames, string(p)) }

// Compression is the compression of OTLP requests, spelled as in
// OTEL_EXPORTER_OTLP_COMPRESSION.
type Compression string

// The OTLP compressions.
const (
	// GzipCompression compresses requests with gzip.
	GzipCompression Compression = "gzip"
	// NoCompression sends requests uncompressed (the default).
	NoCompression Compression = "none"
)

var compressionNames = []string{string(GzipCompression), string(NoCompression)}

func (c Compression) valid() bool { return slices.Contains(compressionNames, string(c)) }

// Option configures the profiler. Options given in code take precedence over
// environment variables, which take precedence over defaults. An option
// given an invalid value makes Start return an error that names the option
// and the value. When the same option is given twice, the last one wins; an invalid
// value is reported even when a later option replaces it.
type Option interface {
	apply(*options)
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// options records what the application set in code. A nil pointer or an
// unset flag means "not set in code", so that the environment and the
// defaults still apply.
type options struct {
	serviceName  *string
	resource     *resource.Resource
	period       *time.Duration
	profileTypes []ProfileType
	// rates holds the runtime rates set in code, 0 where none was.
	rates    [numProfileTypes]int
	exporter *ExporterKind
	fileDir  *string
	fileJSON *bool
	// fileRetention is set by WithFileRetention: files, then bytes.
	fileRetention *[2]int64
	// processContext is set by WithProcessContext.
	processContext *bool

	// intervals holds the read intervals set in code, 0 where none was.
	intervals [numProfileTypes]time.Duration

	endpoint    *endpointOption
	protocol    *Protocol
	headers     map[string]string
	headersSet  bool
	insecure    bool
	timeout     *time.Duration
	compression *Compression
	tlsConfig   *tls.Config
	retry       *RetryConfig
	conn        connectionOptions

	delivery deliverySettings
	collect  collectSettings
	logger   *slog.Logger

	errs []error
}

// endpointOption is what WithEndpoint or WithEndpointURL asked for; url is
// nil for WithEndpoint.
type endpointOption struct {
	raw string
	url *url.URL
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

// WithResource adds attributes that describe the profiled process. They are
// merged over the attributes of OTEL_RESOURCE_ATTRIBUTES and over the
// detected ones (host, process, telemetry.sdk); the application's values
// win. A nil resource adds nothing.
func WithResource(r *resource.Resource) Option {
	return optionFunc(func(o *options) { o.resource = r })
}

// MinPeriod is the shortest period WithPeriod and PPROFOTEL_PERIOD accept
// (and SPLUNK_PROFILER_CALL_STACK_INTERVAL, as in Splunk's profilers).
//
// Every window reads the heap, goroutine, mutex and block profiles,
// converts them and sends a request: a few milliseconds of work, more on a
// large heap or with many goroutines (the goroutine profile holds the
// application back for about 6 µs per goroutine), so that windows a
// millisecond apart took half a core. The data do not change faster
// anyway: the heap profile is that of the last completed garbage
// collection, usually seconds old, and the CPU profiler samples a busy
// thread 100 times a second, so that a window under a second would hold
// fewer than 100 samples of it, and under the default CPU duty cycle (a
// sixth of the window) fewer than 17. At a second the off-CPU profile's
// least duty cycle, 1 %, still leaves it its shortest stretch, 10 ms, and
// a goroutine-leak interval shorter than the period reads that profile
// once a window, no more.
const MinPeriod = collect.MinPeriod

// MinCPUProfileDuration is the shortest CPU profile recording that
// WithCPUProfileDuration and PPROFOTEL_CPU_DURATION accept: ten sampling
// intervals of the runtime's CPU profiler (10 ms each), which is also how
// often runtime/pprof reads the samples out. A shorter recording would
// hold fewer than ten samples of a busy thread, or none, while its
// profile claimed to cover the time.
const MinCPUProfileDuration = collect.MinCPUDuration

// MinRetryInterval is the shortest RetryConfig.InitialInterval and
// MaxInterval that WithRetry accepts (0 still means the default). A retry
// that soon after a failure seldom finds the receiver recovered, and only
// multiplies its load: with both at a nanosecond, a receiver that answers
// 503 at once got a new request for every round trip, for all of
// MaxElapsedTime. At 100ms one window's retries come at most about 20
// times a second (each wait is drawn from the upper half of the interval).
const MinRetryInterval = 100 * time.Millisecond

// Floors the options and the variables apply: MinPeriod,
// MinCPUProfileDuration and MinRetryInterval, which the package's tests
// lower to run windows and retries of milliseconds.
var (
	minPeriod        = MinPeriod
	minCPUDuration   = MinCPUProfileDuration
	minRetryInterval = MinRetryInterval
)

// WithPeriod sets the length of one collection window; one request is
// exported per window. It must be at least MinPeriod (1s), which says why.
// The default is 60s, overridden by PPROFOTEL_PERIOD.
func WithPeriod(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d < minPeriod {
			o.fail("WithPeriod", d, fmt.Sprintf("period must be at least %s", minPeriod))
			return
		}
		o.period = &d
	})
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

// WithMutexProfileFraction sets the rate passed to
// runtime.SetMutexProfileFraction while MutexProfile is collected: on
// average one in rate contention events is recorded. It must be positive,
// since 0 would turn off the very profile that was asked for. The default
// is 10, overridden by PPROFOTEL_MUTEX_FRACTION.
func WithMutexProfileFraction(rate int) Option {
	return optionFunc(func(o *options) {
		o.setRate(MutexProfile, rate, "fraction must be positive")
	})
}

// WithBlockProfileRate sets the rate, in nanoseconds, passed to
// runtime.SetBlockProfileRate while BlockProfile is collected: blocking
// events are sampled on average once per rate nanoseconds spent blocked. It
// must be positive, since 0 would turn off the very profile that was asked
// for. The default is 10000 (10µs), overridden by PPROFOTEL_BLOCK_RATE.
func WithBlockProfileRate(rate int) Option {
	return optionFunc(func(o *options) {
		o.setRate(BlockProfile, rate, "rate must be positive")
	})
}

// WithGoroutineLeakInterval sets the least time between two reads of
// GoroutineLeakProfile, each of which runs a full garbage collection: it is
// read in the first window, then in every nth window, n being d divided by
// the period and rounded up, and in the last window, at Stop. An interval
// no longer than the period reads it every window. It must be positive. The
// default is 5 minutes (every fifth window at the default period),
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

// WithOffCPUDutyCycle sets the share of every cycle, in percent from 1 to
// 100, during which OffCPUProfile runs the execution tracer: the cycle is
// the window, or 10s when the window is longer, and the traced part comes
// first. Waits are measured in the traced part and scaled to the window.
// The default is 10, overridden by PPROFOTEL_OFFCPU_DUTY. Package
// github.com/pprofotel/profiler/offcpu, which links the profile in, has an
// example.
func WithOffCPUDutyCycle(percent int) Option {
	return optionFunc(func(o *options) {
		o.setRate(OffCPUProfile, percent, "duty cycle must be a percentage from 1 to 100")
	})
}

// WithExporter selects where profiles go. The default is ExporterOTLP,
// overridden by PPROFOTEL_EXPORTER.
func WithExporter(kind ExporterKind) Option {
	return optionFunc(func(o *options) {
		if !kind.valid() {
			o.fail("WithExporter", strconv.Quote(string(kind)), envconfig.OneOf("exporter", exporterNames()))
			return
		}
		o.exporter = &kind
	})
}

// WithFileDir sets the directory the file exporter writes into; it is
// created if missing. The default is "pprofotel-profiles" under
// os.TempDir(), overridden by PPROFOTEL_FILE_DIR.
func WithFileDir(dir string) Option {
	return optionFunc(func(o *options) {
		if strings.TrimSpace(dir) == "" {
			o.fail("WithFileDir", strconv.Quote(dir), "directory must not be empty")
			return
		}
		o.fileDir = &dir
	})
}

// WithFileJSON makes the file exporter write OTLP/JSON instead of binary
// protobuf. The default is protobuf, overridden by
// PPROFOTEL_FILE_FORMAT=json.
func WithFileJSON(json bool) Option {
	return optionFunc(func(o *options) { o.fileJSON = &json })
}

// WithFileRetention bounds the file exporter's directory: after each
// window is written, the oldest of the exporter's files are removed until
// at most files of them remain, taking at most bytes in all; 0 sets no
// bound on either. The newest file always stays, even when it alone
// exceeds bytes. Only files named as the exporter names them
// (profiles-<time>-<pid>.pb or .json) are counted and removed, those of
// earlier runs and of other processes sharing the directory included;
// nothing else in the directory is touched. Removals are counted
// (Stats.FilesRemoved) and logged. The defaults are 1000 files, 16 h 40 min
// of windows at the default period, and 1 GiB, which caps the disk when
// windows are large; they are overridden by PPROFOTEL_FILE_MAX_FILES and
// PPROFOTEL_FILE_MAX_BYTES.
func WithFileRetention(files int, bytes int64) Option {
	return optionFunc(func(o *options) {
		if files < 0 || bytes < 0 {
			o.fail("WithFileRetention", fmt.Sprintf("%d, %d", files, bytes), "bounds must not be negative (0: no bound)")
			return
		}
		o.fileRetention = &[2]int64{int64(files), bytes}
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

// WithEndpoint sets the OTLP endpoint as "host:port", without a scheme.
// TLS is used unless WithInsecure is given (or OTEL_EXPORTER_OTLP_INSECURE
// is true). Over HTTP the request path is "/v1development/profiles". It
// replaces an earlier WithEndpointURL and takes precedence over
// OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT and OTEL_EXPORTER_OTLP_ENDPOINT.
func WithEndpoint(hostport string) Option {
	return optionFunc(func(o *options) {
		if strings.Contains(hostport, "://") {
			o.fail("WithEndpoint", strconv.Quote(hostport), "endpoint must be host:port without a scheme; use WithEndpointURL for a URL")
			return
		}
		if err := envconfig.CheckHostPort(hostport); err != nil {
			o.fail("WithEndpoint", strconv.Quote(hostport), err.Error())
			return
		}
		o.endpoint = &endpointOption{raw: hostport}
	})
}

// WithEndpointURL sets the OTLP endpoint as a URL whose scheme, http or
// https, selects plaintext or TLS. Over HTTP the URL is the full address of
// the profiles endpoint and is used as given, path included. Over gRPC only
// the host and port are used; a missing port is the scheme's (80 or 443).
// It replaces an earlier WithEndpoint and takes precedence over
// OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT and OTEL_EXPORTER_OTLP_ENDPOINT.
func WithEndpointURL(rawURL string) Option {
	return optionFunc(func(o *options) {
		u, err := envconfig.ParseURL(rawURL)
		if err != nil {
			o.fail("WithEndpointURL", strconv.Quote(rawURL), err.Error())
			return
		}
		o.endpoint = &endpointOption{raw: strings.TrimSpace(rawURL), url: u}
	})
}

// WithProtocol selects the OTLP transport. The default is
// ProtocolHTTPProtobuf, overridden by OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL
// and OTEL_EXPORTER_OTLP_PROTOCOL.
func WithProtocol(p Protocol) Option {
	return optionFunc(func(o *options) {
		if !p.valid() {
			o.fail("WithProtocol", strconv.Quote(string(p)), envconfig.OneOf("protocol", protocolNames))
			return
		}
		o.protocol = &p
	})
}

// WithHeaders sets the headers (gRPC metadata over gRPC) sent with every
// OTLP request. They replace, rather than add to, the headers of
// OTEL_EXPORTER_OTLP_PROFILES_HEADERS and OTEL_EXPORTER_OTLP_HEADERS. The
// map is copied. A header that HTTP, or gRPC when the protocol is gRPC,
// cannot send makes Start fail, naming the header but not showing any
// value, as values often are credentials.
func WithHeaders(headers map[string]string) Option {
	headers = maps.Clone(headers)
	return optionFunc(func(o *options) {
		for _, k := range slices.Sorted(maps.Keys(headers)) {
			if err := export.CheckHeader(false, k, headers[k]); err != nil {
				o.failHeaders(headers, err)
				return
			}
		}
		o.headers = headers
		o.headersSet = true
	})
}

// failHeaders records that the headers of WithHeaders cannot be sent, and
// why, showing the headers' names and none of their values.
func (o *options) failHeaders(headers map[string]string, err error) {
	var b strings.Builder
	b.WriteString("map[")
	for i, k := range slices.Sorted(maps.Keys(headers)) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Quote(k) + ":…")
	}
	b.WriteByte(']')
	o.fail("WithHeaders", b.String(), err.Error())
}

// WithInsecure disables TLS for an endpoint given as host:port, by
// WithEndpoint or by a gRPC endpoint variable without a scheme. An endpoint
// given as a URL is secured according to its scheme instead, so WithInsecure
// together with an https URL in WithEndpointURL is reported as an error.
func WithInsecure() Option {
	return optionFunc(func(o *options) { o.insecure = true })
}

// WithTimeout bounds each OTLP export attempt. The default is 10s,
// overridden by OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT and
// OTEL_EXPORTER_OTLP_TIMEOUT.
func WithTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d <= 0 {
			o.fail("WithTimeout", d, "timeout must be positive")
			return
		}
		o.timeout = &d
	})
}

// WithCompression sets the compression of OTLP requests. The default is
// NoCompression, overridden by OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION and
// OTEL_EXPORTER_OTLP_COMPRESSION.
func WithCompression(c Compression) Option {
	return optionFunc(func(o *options) {
		if !c.valid() {
			o.fail("WithCompression", strconv.Quote(string(c)), envconfig.OneOf("compression", compressionNames))
			return
		}
		o.compression = &c
	})
}

// WithTLSClientConfig sets the TLS configuration of the OTLP exporter: the
// roots that verify the collector (RootCAs) and, for mutual TLS, the
// client's certificate (Certificates or GetClientCertificate). It replaces
// OTEL_EXPORTER_OTLP_CERTIFICATE, OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE,
// OTEL_EXPORTER_OTLP_CLIENT_KEY and their PROFILES forms, all three at
// once. It has no effect on a plaintext endpoint (an http URL, WithInsecure
// or OTEL_EXPORTER_OTLP_INSECURE=true). The configuration is copied.
func WithTLSClientConfig(c *tls.Config) Option {
	c = c.Clone()
	return optionFunc(func(o *options) {
		if c == nil {
			o.fail("WithTLSClientConfig", "nil", "TLS configuration must not be nil")
			return
		}
		o.tlsConfig = c
	})
}

// RetryConfig says how a failed export is retried. Only failures that the
// OTLP specification calls retryable are: over gRPC the codes CANCELLED,
// DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE, UNAVAILABLE and DATA_LOSS, and
// RESOURCE_EXHAUSTED when the collector attaches a RetryInfo; over HTTP the
// statuses 429, 502, 503 and 504; and a request that got no response at
// all. When the collector names a delay (RetryInfo or Retry-After) the
// profiler waits exactly that long; otherwise it backs off exponentially,
// each wait drawn at random from the upper half of the current interval.
type RetryConfig struct {
	// Enabled turns retrying on. When false every export is attempted
	// once.
	Enabled bool
	// InitialInterval is the longest wait before the first retry, at
	// least MinRetryInterval. Zero means 5s.
	InitialInterval time.Duration
	// MaxInterval caps the interval, which grows by half after each
	// retry, at least MinRetryInterval. Zero means 30s. It does not shorten a delay named by the
	// collector.
	MaxInterval time.Duration
	// MaxElapsedTime bounds the time spent on one request, retries
	// included: a retry that would start later is not made, and the
	// window is reported as not delivered. Zero means 1m.
	MaxElapsedTime time.Duration
}

// WithRetry sets how failed exports are retried. The default is enabled,
// with InitialInterval 5s, MaxInterval 30s and MaxElapsedTime 1m, as in the
// OpenTelemetry Go OTLP exporters. Whatever the configuration, no retry
// starts after the export's deadline.
func WithRetry(rc RetryConfig) Option {
	return optionFunc(func(o *options) {
		switch {
		case rc.InitialInterval < 0, rc.MaxInterval < 0, rc.MaxElapsedTime < 0:
			o.fail("WithRetry", fmt.Sprintf("%+v", rc), "intervals and elapsed time must not be negative")
			return
		case rc.MaxInterval > 0 && rc.MaxInterval < rc.InitialInterval:
			o.fail("WithRetry", fmt.Sprintf("%+v", rc), "MaxInterval must not be less than InitialInterval")
			return
		case rc.InitialInterval > 0 && rc.InitialInterval < minRetryInterval, rc.MaxInterval > 0 && rc.MaxInterval < minRetryInterval:
			o.fail("WithRetry", fmt.Sprintf("%+v", rc), fmt.Sprintf("InitialInterval and MaxInterval must be 0 (the default) or at least %s", minRetryInterval))
			return
		}
		o.retry = &rc
	})
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
