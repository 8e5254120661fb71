package profiler

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/envconfig"
	"github.com/pprofotel/profiler/internal/export"
	"github.com/pprofotel/profiler/internal/splunk"
)

// The environment variables the profiler reads. This file is the only place
// that reads them, always through an envconfig.Reader over the getenv
// function given to newConfig; the runtime rates' variables are named in
// their profile descriptors.
const (
	envSDKDisabled        = "OTEL_SDK_DISABLED"
	envConfigFile         = "OTEL_CONFIG_FILE"
	envServiceName        = "OTEL_SERVICE_NAME"
	envResourceAttributes = "OTEL_RESOURCE_ATTRIBUTES"

	// The OTLP variables come in a generic form, OTEL_EXPORTER_OTLP_<X>,
	// and a per-signal form, OTEL_EXPORTER_OTLP_PROFILES_<X>, which wins.
	envOTLPPrefix        = "OTEL_EXPORTER_OTLP_"
	envOTLPProfilePrefix = "OTEL_EXPORTER_OTLP_PROFILES_"

	envEnabled    = "PPROFOTEL_ENABLED"
	envPeriod     = "PPROFOTEL_PERIOD"
	envProfiles   = "PPROFOTEL_PROFILES"
	envExporter   = "PPROFOTEL_EXPORTER"
	envFileDir    = "PPROFOTEL_FILE_DIR"
	envFileFormat = "PPROFOTEL_FILE_FORMAT"

	// The file exporter's retention; see WithFileRetention.
	envFileMaxFiles = "PPROFOTEL_FILE_MAX_FILES"
	envFileMaxBytes = "PPROFOTEL_FILE_MAX_BYTES"

	envProcessCtx = "PPROFOTEL_PROCESS_CONTEXT"

	envMaxGoroutines = "PPROFOTEL_MAX_GOROUTINES"
	envCPUDuration   = "PPROFOTEL_CPU_DURATION"
)

// Defaults.
const (
	defaultPeriod = 60 * time.Second

	// defaultCPUShare is the part of each window the CPU profile records
	// unless WithCPUProfileDuration says otherwise: 1/defaultCPUShare of
	// the period, 10 s of the default 60 s. Almost all that CPU profiling
	// costs is the runtime's sampling while the profile records (issue 18;
	// benchmark/README.md, "Application overhead and the CPU duty
	// cycle"), so the cost falls with the share.
	defaultCPUShare = 6

	defaultOTLPTimeout = 10 * time.Second

	// profilesPath is appended to OTEL_EXPORTER_OTLP_ENDPOINT for HTTP, as
	// "v1/traces" is for traces.
	profilesPath = "v1development/profiles"

	defaultHTTPEndpoint = "http://localhost:4318/" + profilesPath
	defaultGRPCEndpoint = "localhost:4317"

	// fileDirName is created under os.TempDir() by default: the file
	// exporter is a development aid, and the temporary directory is
	// writable even where the working directory is not (containers).
	fileDirName = "pprofotel-profiles"
)

// config is the resolved configuration: options over environment variables
// over defaults, every value validated.
type config struct {
	// disabled is set by PPROFOTEL_ENABLED=false or OTEL_SDK_DISABLED=true.
	// A disabled config carries only the logger: nothing else is read or
	// validated, because a profiler switched off must never stop the
	// application from starting.
	disabled bool
	period   time.Duration
	// profileTypes is non-empty, without duplicates, in ascending order.
	profileTypes []ProfileType
	// rates holds, for each profile type whose descriptor has a Rate, the
	// runtime rate set while it is collected (0 for the others).
	rates    [numProfileTypes]int
	exporter ExporterKind
	file     export.FileConfig
	otlp     export.OTLPConfig
	// retry is the policy for failed OTLP exports; see WithRetry.
	retry export.RetryConfig
	// splunk is the Splunk encoding's configuration, set when exporter is
	// ExporterSplunk.
	splunk splunk.Config
	// delivery holds the queue and request limits and the MeterProvider.
	delivery deliverySettings
	resource *resource.Resource
	// resourceRepairs is what buildResource made valid UTF-8 in the
	// resource; Start counts and logs it.
	resourceRepairs resourceRepairs
	logger          *slog.Logger
	// processContext publishes the resource for readers outside the
	// process (OTEP 4719); see WithProcessContext.
	processContext bool

	// intervals holds, for each profile type whose descriptor has an
	// Interval, the least time between two reads (0 for the others).
	intervals [numProfileTypes]time.Duration
	// warnings are about the environment: invalid values, ignored as the
	// OpenTelemetry specification asks. Start logs each once.
	warnings []error
	// maxGoroutines is the goroutine count above which the goroutine
	// profile is skipped, 0 for no limit; see WithMaxGoroutines.
	maxGoroutines int
	// cpuDuration is the part of each window the CPU profile records, at
	// most period (continuous); see WithCPUProfileDuration.
	cpuDuration time.Duration
}

// newConfig resolves opts, the environment seen through getenv, and the
// defaults. An invalid option is a programming error: newConfig reports
// every one at once, each naming the option and its value. An invalid
// variable is not an error: it is ignored (a boolean reads as false), as
// the OpenTelemetry specification asks, and recorded in the config's
// warnings, so that the environment can never stop a service from
// starting. A variable is read only when it decides something: one
// shadowed by an option or by its per-signal form is not validated.
func newConfig(opts []Option, getenv func(string) string) (*config, error) {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	env := envconfig.New(getenv, "profiler: ")

	c := &config{logger: o.logger}
	if c.logger == nil {
		c.logger = slog.New(minLevelHandler{min: slog.LevelWarn, next: slog.Default().Handler()})
	}
	if disabled(env) {
		c.disabled = true
		c.warnings = env.Warnings()
		return c, nil
	}
	c.logger = slog.New(reportingHandler{next: c.logger.Handler(), logErrors: o.logger != nil})
	if v, ok := env.Lookup(envConfigFile); ok {
		env.Warn(fmt.Errorf("%s=%q: the profiler does not read the configuration file (its schema has no profiles section); "+
			"its options and the environment variables apply", envConfigFile, v))
	}

	periodSet, typesSet := c.resolveSampling(&o, env)
	c.resolveExporter(&o, env, getenv, typesSet, periodSet)
	c.resolveFile(&o, env)
	c.processContext = true
	if o.processContext != nil {
		c.processContext = *o.processContext
	} else {
		c.processContext = env.BoolDefaultTrue(envProcessCtx)
	}
	c.resolveCollect(&o, env)
	c.otlp = resolveOTLP(&o, env, grpcOnly(c.exporter))
	if c.exporter == ExporterSplunk && o.endpoint == nil {
		// SPLUNK_PROFILER_LOGS_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT,
		// else localhost:4317; an endpoint option wins over all three.
		c.otlp = c.splunk.OTLP(c.otlp)
	}
	c.retry = resolveRetry(o.retry)
	in := resourceFromEnv(&o, env)

	c.delivery = o.delivery
	if len(o.errs) > 0 {
		return nil, errors.Join(o.errs...)
	}
	c.warnings = env.Warnings()
	c.resource, c.resourceRepairs = buildResource(context.Background(), in, c.logger)
	return c, nil
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

// resolveSampling resolves the period, the profile types and their
// runtime rates, and reports whether the period and the types were set
// rather than defaulted.
func (c *config) resolveSampling(o *options, env *envconfig.Reader) (periodSet, typesSet bool) {
	c.period = defaultPeriod
	if o.period != nil {
		c.period, periodSet = *o.period, true
	} else if d, ok := env.Duration(envPeriod, "period", minPeriod); ok {
		c.period, periodSet = d, true
	}

	types := defaultProfileTypes()
	if o.profileTypes != nil {
		types, typesSet = o.profileTypes, true
	} else if t, ok := envconfig.Parse(env, parseProfileList, envProfiles); ok {
		if t = availableProfileTypes(env, t); len(t) > 0 {
			types, typesSet = t, true
		}
	}
	c.profileTypes = canonicalProfileTypes(types)

	for t := range ProfileType(numProfileTypes) {
		if r := t.descriptor().Rate; r != nil {
			c.rates[t] = r.Default
			if o.rates[t] != 0 {
				c.rates[t] = o.rates[t]
			} else if n, ok := env.PositiveInt(r.Env, r.Want+" (0 would switch "+t.String()+" profiling off)"); ok {
				if r.Max > 0 && n > r.Max {
					env.Invalid(r.Env, strconv.Itoa(n), errors.New(r.Want))
				} else {
					c.rates[t] = n
				}
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
	return periodSet, typesSet
}

// resolveCollect resolves how each window is collected, beyond the
// profile types and their rates.
func (c *config) resolveCollect(o *options, env *envconfig.Reader) {
	c.maxGoroutines = collect.DefaultMaxGoroutines
	if o.collect.maxGoroutines != nil {
		c.maxGoroutines = *o.collect.maxGoroutines
	} else if n, ok := env.IntAtLeast(envMaxGoroutines, 0, "must be a whole number of goroutines, 0 for no limit"); ok {
		c.maxGoroutines = n
	}

	// The period is resolved: a duration longer than it is an error, since
	// no window could hold it.
	c.cpuDuration = c.period / defaultCPUShare
	tooLong := fmt.Sprintf("CPU profile duration must not exceed the period (%s)", c.period)
	if d := o.collect.cpuDuration; d != nil {
		if *d > c.period {
			o.fail("WithCPUProfileDuration", *d, tooLong)
		} else {
			c.cpuDuration = *d
		}
	} else if d, ok := env.Duration(envCPUDuration, "CPU profile duration", minCPUDuration); ok {
		if d > c.period {
			v, _ := env.Lookup(envCPUDuration)
			env.Invalid(envCPUDuration, v, errors.New(tooLong))
		} else {
			c.cpuDuration = d
		}
	}
}

// resolveExporter picks the exporter and, for Splunk, applies its
// configuration and defaults.
func (c *config) resolveExporter(o *options, env *envconfig.Reader, getenv func(string) string, typesSet, periodSet bool) {
	// SPLUNK_PROFILER_* are read here too, through the same getenv; their
	// warnings are logged only when the Splunk encoding is on, so that a
	// stray Splunk variable does not alarm a profiler that does not use
	// it.
	splunkCfg, splunkWarnings := splunk.ConfigFromEnv(getenv)
	c.exporter = ExporterOTLP
	if o.exporter != nil {
		c.exporter = *o.exporter
	} else if k, ok := env.Enum("exporter", exporterNames(), envExporter); ok {
		c.exporter = ExporterKind(k)
	} else if splunkCfg.Enabled {
		c.exporter = ExporterSplunk
	}
	if c.exporter == ExporterSplunk {
		for _, w := range splunkWarnings {
			env.Warn(w)
		}
		c.splunk = splunkCfg
		c.profileTypes, c.period = splunkDefaults(&c.splunk, c.profileTypes, typesSet, c.period, periodSet)
	}
}

// resolveFile configures the file exporter.
func (c *config) resolveFile(o *options, env *envconfig.Reader) {
	c.file.Dir = filepath.Join(os.TempDir(), fileDirName)
	if o.fileDir != nil {
		c.file.Dir = *o.fileDir
	} else if v, ok := env.Lookup(envFileDir); ok {
		c.file.Dir = v
	}
	if o.fileJSON != nil {
		c.file.JSON = *o.fileJSON
	} else if f, ok := env.Enum("format", []string{"proto", "json"}, envFileFormat); ok {
		c.file.JSON = f == "json"
	}
	c.file.MaxFiles, c.file.MaxBytes = export.DefaultFileMaxFiles, export.DefaultFileMaxBytes
	if r := o.fileRetention; r != nil {
		c.file.MaxFiles, c.file.MaxBytes = int(r[0]), r[1]
	} else {
		if n, ok := env.IntAtLeast(envFileMaxFiles, 0, "must be a whole number of files, 0 for no limit"); ok {
			c.file.MaxFiles = n
		}
		if n, ok := env.IntAtLeast(envFileMaxBytes, 0, "must be a whole number of bytes, 0 for no limit"); ok {
			c.file.MaxBytes = int64(n)
		}
	}
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

// resolveOTLP fills the OTLP exporter configuration: each setting from its
// option, else from the PROFILES form of its variable, else the generic
// form, else its default.
//
// An exporter that speaks only gRPC (Splunk's profiling logs) sets
// grpcOnly: the protocol is then gRPC whatever the options and variables
// say.
func resolveOTLP(o *options, env *envconfig.Reader, grpcOnly bool) export.OTLPConfig {
	cfg := export.OTLPConfig{
		Protocol:    string(ProtocolHTTPProtobuf),
		Timeout:     defaultOTLPTimeout,
		Compression: string(NoCompression),
		UserAgent:   "pprofotel-go/" + Version,
	}

	if grpcOnly {
		cfg.Protocol = export.ProtocolGRPC
	} else if o.protocol != nil {
		cfg.Protocol = string(*o.protocol)
	} else if p, ok := env.Enum("protocol", protocolNames, otlpVar("PROTOCOL")...); ok {
		cfg.Protocol = p
	}
	if !grpcOnly {
		cfg.Protocol = o.conn.protocol(o, cfg.Protocol)
	}
	cfg.Endpoint, cfg.Insecure = resolveEndpoint(o, env, cfg.Protocol == export.ProtocolGRPC)

	if o.headersSet {
		cfg.Headers = o.headers
		if cfg.Protocol == export.ProtocolGRPC {
			// WithHeaders checked what HTTP can send; gRPC metadata
			// allows less, and only now is the protocol known.
			for _, k := range slices.Sorted(maps.Keys(o.headers)) {
				if err := export.CheckHeader(true, k, o.headers[k]); err != nil {
					o.failHeaders(o.headers, err)
					break
				}
			}
		}
	} else {
		cfg.Headers = headersFromEnv(env, cfg.Protocol == export.ProtocolGRPC)
	}
	if len(cfg.Headers) == 0 {
		cfg.Headers = nil
	}

	if o.timeout != nil {
		cfg.Timeout = *o.timeout
	} else if d, ok := env.Millis("timeout", 0, otlpVar("TIMEOUT")...); ok {
		cfg.Timeout = d
	}

	if o.compression != nil {
		cfg.Compression = string(*o.compression)
	} else if c, ok := env.Enum("compression", compressionNames, otlpVar("COMPRESSION")...); ok {
		cfg.Compression = c
	}

	if o.tlsConfig != nil {
		cfg.TLS = o.tlsConfig
	} else {
		cfg.TLS = tlsFromEnv(env)
	}
	cfg.GRPCConn = o.conn.grpcConn
	cfg.DialOptions = o.conn.dialOptions
	if cfg.Protocol != export.ProtocolGRPC {
		cfg.HTTPClient = o.conn.httpClient
	}
	cfg.Proxy = o.conn.proxy
	return cfg
}

// headersFromEnv reads the HEADERS variables. An entry that cannot be read,
// or that the protocol could not send (a name that is not an HTTP token,
// a gRPC metadata key outside [0-9a-z-_.]), is left out and warned about,
// without showing any value, as values are often credentials; the others
// are sent, as otel-go's exporters do.
func headersFromEnv(env *envconfig.Reader, grpc bool) map[string]string {
	kvs, ok := env.KeyValues(envconfig.List{Secret: true, Check: func(kv envconfig.KeyValue) error {
		return export.CheckHeader(grpc, kv.Key, kv.Value)
	}}, otlpVar("HEADERS")...)
	if !ok {
		return nil
	}
	headers := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		headers[kv.Key] = kv.Value
	}
	return headers
}

// resolveEndpoint returns the endpoint, and with it transport security,
// from the first of: WithEndpoint or WithEndpointURL,
// OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT, the
// default. An endpoint given as a URL is secured according to its scheme;
// one given as host:port uses WithInsecure, else the INSECURE variables,
// else TLS.
func resolveEndpoint(o *options, env *envconfig.Reader, grpc bool) (endpoint string, insecure bool) {
	// insecureFlag is consulted only for host:port endpoints.
	insecureFlag := func() bool {
		if o.insecure {
			return true
		}
		b, _ := env.Bool(otlpVar("INSECURE")...)
		return b
	}
	type resolved struct {
		endpoint string
		insecure bool
	}

	switch {
	case o.endpoint != nil && o.endpoint.url != nil:
		u := o.endpoint.url
		if o.insecure && u.Scheme == "https" {
			o.errs = append(o.errs, fmt.Errorf("profiler: WithInsecure() conflicts with WithEndpointURL(%q): the https scheme asks for TLS", o.endpoint.raw))
		}
		if grpc {
			return envconfig.GRPCHostPort(u), u.Scheme == "http"
		}
		return o.endpoint.raw, u.Scheme == "http"

	case o.endpoint != nil:
		insecure = insecureFlag()
		if grpc {
			return o.endpoint.raw, insecure
		}
		return httpScheme(insecure) + "://" + o.endpoint.raw + "/" + profilesPath, insecure
	}

	// An invalid endpoint variable is ignored: the generic form, else the
	// default, applies. The per-signal form is used as is (asIs).
	parse := func(asIs bool) func(string) (resolved, error) {
		return func(v string) (resolved, error) {
			if grpc {
				endpoint, insecure, err := envconfig.GRPCEndpoint(v, insecureFlag)
				return resolved{endpoint, insecure}, err
			}
			if !strings.Contains(v, "://") {
				// Without a scheme it can only be a gRPC host:port.
				return resolved{}, errors.New("an OTLP/HTTP endpoint must be a URL with an http or https scheme")
			}
			u, err := envconfig.ParseURL(v)
			if err != nil {
				return resolved{}, err
			}
			if asIs {
				return resolved{v, u.Scheme == "http"}, nil
			}
			return resolved{u.JoinPath(profilesPath).String(), u.Scheme == "http"}, nil
		}
	}
	r, ok := envconfig.Parse(env, parse(true), envOTLPProfilePrefix+"ENDPOINT")
	if !ok {
		r, ok = envconfig.Parse(env, parse(false), envOTLPPrefix+"ENDPOINT")
	}
	switch {
	case ok:
		return r.endpoint, r.insecure
	case grpc:
		return defaultGRPCEndpoint, true
	}
	return defaultHTTPEndpoint, true
}

// otlpVar names the two forms of an OTLP variable, the per-signal one
// first, as the order in which they are looked up.
func otlpVar(suffix string) []string {
	return []string{envOTLPProfilePrefix + suffix, envOTLPPrefix + suffix}
}

// tlsConfig builds the exporter's TLS configuration from the CERTIFICATE,
// CLIENT_CERTIFICATE and CLIENT_KEY variables, each in its per-signal form
// if set, else its generic form. It returns nil when none is set, leaving
// the system roots and no client certificate. The files are read even when
// the endpoint turns out to be plaintext: a path that is wrong is worth
// reporting before the endpoint is switched to TLS.
func tlsFromEnv(e *envconfig.Reader) *tls.Config {
	caName, caFile, caSet := e.First(otlpVar("CERTIFICATE")...)
	certName, certFile, certSet := e.First(otlpVar("CLIENT_CERTIFICATE")...)
	keyName, keyFile, keySet := e.First(otlpVar("CLIENT_KEY")...)
	if !caSet && !certSet && !keySet {
		return nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caSet {
		if data, err := os.ReadFile(caFile); err != nil {
			e.Invalid(caName, caFile, err)
		} else {
			roots := x509.NewCertPool()
			if roots.AppendCertsFromPEM(data) {
				cfg.RootCAs = roots
			} else {
				e.Invalid(caName, caFile, errors.New("the file holds no PEM certificate"))
			}
		}
	}
	switch {
	case certSet && !keySet:
		e.Invalid(certName, certFile, fmt.Errorf("a client certificate needs its private key in %sCLIENT_KEY", envOTLPPrefix))
	case keySet && !certSet:
		e.Invalid(keyName, keyFile, fmt.Errorf("a client key needs its certificate in %sCLIENT_CERTIFICATE", envOTLPPrefix))
	case certSet && keySet:
		certPEM, certErr := os.ReadFile(certFile)
		if certErr != nil {
			e.Invalid(certName, certFile, certErr)
		}
		keyPEM, keyErr := os.ReadFile(keyFile)
		if keyErr != nil {
			e.Invalid(keyName, keyFile, keyErr)
		}
		if certErr != nil || keyErr != nil {
			break
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			e.Warn(fmt.Errorf("%s=%q and %s=%q: %w; ignored", certName, certFile, keyName, keyFile, err))
			break
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}

// resolveRetry fills the zero durations of the application's retry policy
// with the defaults; without one the default policy applies. WithRetry has
// already rejected negative durations and a cap below the initial interval.
func resolveRetry(rc *RetryConfig) export.RetryConfig {
	if rc == nil {
		return export.DefaultRetryConfig
	}
	def := export.DefaultRetryConfig
	out := export.RetryConfig{
		Enabled:         rc.Enabled,
		InitialInterval: cmp.Or(rc.InitialInterval, def.InitialInterval),
		MaxInterval:     cmp.Or(rc.MaxInterval, def.MaxInterval),
		MaxElapsedTime:  cmp.Or(rc.MaxElapsedTime, def.MaxElapsedTime),
	}
	// One bound given, the other defaulted: the given one wins.
	if out.MaxInterval < out.InitialInterval {
		if rc.InitialInterval == 0 {
			out.InitialInterval = out.MaxInterval
		} else {
			out.MaxInterval = out.InitialInterval
		}
	}
	return out
}

func httpScheme(insecure bool) string {
	if insecure {
		return "http"
	}
	return "https"
}

// disabled reports whether either switch turns the profiler off.
// OTEL_SDK_DISABLED follows the specification's boolean rule: only "true"
// switches off, any other value reads as false (warned about unless it is
// "false"). PPROFOTEL_ENABLED, on by default, is switched off only by
// "false"; another value is warned about and leaves it on.
func disabled(env *envconfig.Reader) bool {
	sdkDisabled, _ := env.Bool(envSDKDisabled)
	return sdkDisabled || !env.BoolDefaultTrue(envEnabled)
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

// minLevelHandler passes on records at min or above. It makes the default
// logger quiet: warnings and errors reach the application's handler,
// progress reports do not.
type minLevelHandler struct {
	min  slog.Level
	next slog.Handler
}

func (h minLevelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.next.Enabled(ctx, l)
}

func (h minLevelHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.next.Handle(ctx, r)
}

func (h minLevelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevelHandler{h.min, h.next.WithAttrs(attrs)}
}

func (h minLevelHandler) WithGroup(name string) slog.Handler {
	return minLevelHandler{h.min, h.next.WithGroup(name)}
}

// splunkDefaults applies the Splunk mode's defaults where the profiler's
// own settings are silent. The profile types default to what the Splunk
// encoding carries: cpu, plus heap for allocations when
// SPLUNK_PROFILER_MEMORY_ENABLED is true; naming the heap profile in
// WithProfileTypes or PPROFOTEL_PROFILES turns allocations on as well. The
// period defaults to SPLUNK_PROFILER_CALL_STACK_INTERVAL, else to
// splunk.DefaultCallStackInterval, as in Splunk's other profilers.
func splunkDefaults(s *splunk.Config, types []ProfileType, typesSet bool, period time.Duration, periodSet bool) ([]ProfileType, time.Duration) {
	if !typesSet {
		types = []ProfileType{CPUProfile}
		if s.MemoryEnabled {
			types = append(types, HeapProfile)
		}
	} else if slices.Contains(types, HeapProfile) {
		s.MemoryEnabled = true
	}
	if !periodSet {
		period = s.CallStackInterval
		if period == 0 {
			period = splunk.DefaultCallStackInterval
		}
	}
	return types, period
}
