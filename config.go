package profiler

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/pprofotel/profiler/internal/collect"
	"github.com/pprofotel/profiler/internal/export"
	"github.com/pprofotel/profiler/internal/splunk"
)

// The environment variables the profiler reads. This file is the only place
// that reads them, always through the getenv function given to newConfig.
// A variable set to an empty or all-blank value counts as unset, as the
// OpenTelemetry specification asks.
const (
	envSDKDisabled        = "OTEL_SDK_DISABLED"
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
)

// Defaults.
const (
	defaultPeriod = 60 * time.Second

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
	logger   *slog.Logger
}

// newConfig resolves opts, the environment seen through getenv, and the
// defaults. It reports every invalid option and variable at once, each
// error naming the option or variable and its value. A variable is read
// only when it decides something: one shadowed by an option or by its
// per-signal form is not validated.
func newConfig(opts []Option, getenv func(string) string) (*config, error) {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	env := &envReader{getenv: getenv}

	c := &config{logger: o.logger}
	if c.logger == nil {
		c.logger = slog.New(minLevelHandler{min: slog.LevelWarn, next: slog.Default().Handler()})
	}

	if env.disabled() {
		c.disabled = true
		return c, nil
	}

	c.period = defaultPeriod
	periodSet := o.period != nil
	if o.period != nil {
		c.period = *o.period
	} else if name, v, ok := env.lookup(envPeriod); ok {
		periodSet = true
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			env.fail(name, v, err)
		case d <= 0:
			env.fail(name, v, errors.New("period must be positive"))
		default:
			c.period = d
		}
	}

	types := defaultProfileTypes()
	typesSet := o.profileTypes != nil
	if o.profileTypes != nil {
		types = o.profileTypes
	} else if name, v, ok := env.lookup(envProfiles); ok {
		typesSet = true
		if t, err := parseProfileList(v); err != nil {
			env.fail(name, v, err)
		} else {
			types = t
		}
	}
	c.profileTypes = canonicalProfileTypes(types)

	for t := range ProfileType(numProfileTypes) {
		r := t.descriptor().Rate
		if r == nil {
			continue
		}
		c.rates[t] = r.Default
		if o.rates[t] != 0 {
			c.rates[t] = o.rates[t]
		} else if n, ok := env.positiveInt(r.Env, r.Want+" (0 would switch "+t.String()+" profiling off)"); ok {
			c.rates[t] = n
		}
	}

	// SPLUNK_PROFILER_* are read here too, through the same getenv; their
	// errors count only when the Splunk encoding is on, so that a stray
	// Splunk variable cannot stop a profiler that does not use it.
	splunkCfg, splunkErr := splunk.ConfigFromEnv(getenv)
	c.exporter = ExporterOTLP
	if o.exporter != nil {
		c.exporter = *o.exporter
	} else if name, v, ok := env.lookup(envExporter); ok {
		if k := ExporterKind(strings.ToLower(v)); k.valid() {
			c.exporter = k
		} else {
			env.fail(name, v, errors.New(`exporter must be "otlp", "file", "none" or "splunk"`))
		}
	} else if splunkCfg.Enabled {
		c.exporter = ExporterSplunk
	}
	if c.exporter == ExporterSplunk {
		if splunkErr != nil {
			env.errs = append(env.errs, fmt.Errorf("profiler: %w", splunkErr))
		}
		c.splunk = splunkCfg
		c.profileTypes, c.period = splunkDefaults(&c.splunk, c.profileTypes, typesSet, c.period, periodSet)
	}

	c.file.Dir = filepath.Join(os.TempDir(), fileDirName)
	if o.fileDir != nil {
		c.file.Dir = *o.fileDir
	} else if _, v, ok := env.lookup(envFileDir); ok {
		c.file.Dir = v
	}
	if o.fileJSON != nil {
		c.file.JSON = *o.fileJSON
	} else if name, v, ok := env.lookup(envFileFormat); ok {
		switch strings.ToLower(v) {
		case "proto":
		case "json":
			c.file.JSON = true
		default:
			env.fail(name, v, errors.New(`format must be "proto" or "json"`))
		}
	}

	c.otlp = resolveOTLP(&o, env, c.exporter == ExporterSplunk)
	if c.exporter == ExporterSplunk && o.endpoint == nil {
		// SPLUNK_PROFILER_LOGS_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT,
		// else localhost:4317; an endpoint option wins over all three.
		c.otlp = c.splunk.OTLP(c.otlp)
	}
	c.retry = resolveRetry(o.retry)

	var in resourceInputs
	if o.serviceName != nil {
		in.serviceName = *o.serviceName
	}
	in.user = o.resource
	if _, v, ok := env.lookup(envServiceName); ok {
		in.envServiceName = v
	}
	if name, v, ok := env.lookup(envResourceAttributes); ok {
		if kvs, err := parseKeyValues(v); err != nil {
			env.fail(name, v, err)
		} else {
			for _, kv := range kvs {
				in.envAttrs = append(in.envAttrs, attribute.String(kv.key, kv.value))
			}
		}
	}

	c.delivery = o.delivery
	if errs := slices.Concat(o.errs, o.delivery.errs, env.errs); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	c.resource = buildResource(context.Background(), in, c.logger)
	return c, nil
}

// resolveOTLP fills the OTLP exporter configuration. The endpoint, and with
// it transport security, comes from the first of: WithEndpoint or
// WithEndpointURL, OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT,
// OTEL_EXPORTER_OTLP_ENDPOINT, the default. An endpoint given as a URL is
// secured according to its scheme; one given as host:port uses WithInsecure,
// else the INSECURE variables, else TLS.
//
// Splunk's profiling logs travel over gRPC only, so with splunkLogs set the
// protocol is gRPC whatever the options and variables say.
func resolveOTLP(o *options, env *envReader, splunkLogs bool) export.OTLPConfig {
	cfg := export.OTLPConfig{
		Protocol:    string(ProtocolHTTPProtobuf),
		Timeout:     defaultOTLPTimeout,
		Compression: string(NoCompression),
		UserAgent:   "pprofotel-go/" + Version,
	}

	if splunkLogs {
		cfg.Protocol = export.ProtocolGRPC
	} else if o.protocol != nil {
		cfg.Protocol = string(*o.protocol)
	} else if name, v, ok := env.lookupOTLP("PROTOCOL"); ok {
		if p := Protocol(strings.ToLower(v)); p.valid() {
			cfg.Protocol = string(p)
		} else {
			env.fail(name, v, errors.New(`protocol must be "grpc", "http/protobuf" or "http/json"`))
		}
	}
	grpc := cfg.Protocol == export.ProtocolGRPC

	// insecureFlag is consulted only for host:port endpoints.
	insecureFlag := func() bool {
		if o.insecure {
			return true
		}
		b, _ := env.boolean(envOTLPProfilePrefix+"INSECURE", envOTLPPrefix+"INSECURE")
		return b
	}

	switch {
	case o.endpoint != nil && o.endpoint.url != nil:
		u := o.endpoint.url
		if o.insecure && u.Scheme == "https" {
			o.errs = append(o.errs, fmt.Errorf("profiler: WithInsecure() conflicts with WithEndpointURL(%q): the https scheme asks for TLS", o.endpoint.raw))
		}
		cfg.Insecure = u.Scheme == "http"
		if grpc {
			cfg.Endpoint = grpcHostPort(u)
		} else {
			cfg.Endpoint = o.endpoint.raw
		}

	case o.endpoint != nil:
		cfg.Insecure = insecureFlag()
		if grpc {
			cfg.Endpoint = o.endpoint.raw
		} else {
			cfg.Endpoint = httpScheme(cfg.Insecure) + "://" + o.endpoint.raw + "/" + profilesPath
		}

	default:
		name, v, ok := env.lookupOTLP("ENDPOINT")
		if !ok {
			cfg.Insecure = true
			cfg.Endpoint = defaultHTTPEndpoint
			if grpc {
				cfg.Endpoint = defaultGRPCEndpoint
			}
			break
		}
		perSignal := strings.HasPrefix(name, envOTLPProfilePrefix)
		if !strings.Contains(v, "://") {
			// Without a scheme it can only be a gRPC host:port.
			if !grpc {
				env.fail(name, v, errors.New("an OTLP/HTTP endpoint must be a URL with an http or https scheme"))
				break
			}
			if err := checkHostPort(v); err != nil {
				env.fail(name, v, err)
				break
			}
			cfg.Insecure = insecureFlag()
			cfg.Endpoint = v
			break
		}
		u, err := parseEndpointURL(v)
		if err != nil {
			env.fail(name, v, err)
			break
		}
		cfg.Insecure = u.Scheme == "http"
		switch {
		case grpc:
			cfg.Endpoint = grpcHostPort(u)
		case perSignal:
			cfg.Endpoint = v
		default:
			cfg.Endpoint = u.JoinPath(profilesPath).String()
		}
	}

	if o.headersSet {
		cfg.Headers = o.headers
	} else if name, v, ok := env.lookupOTLP("HEADERS"); ok {
		kvs, err := parseKeyValues(v)
		if err != nil {
			env.fail(name, v, err)
		} else {
			cfg.Headers = make(map[string]string, len(kvs))
			for _, kv := range kvs {
				cfg.Headers[kv.key] = kv.value
			}
		}
	}
	if len(cfg.Headers) == 0 {
		cfg.Headers = nil
	}

	if o.timeout != nil {
		cfg.Timeout = *o.timeout
	} else if name, v, ok := env.lookupOTLP("TIMEOUT"); ok {
		ms, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil:
			env.fail(name, v, errors.New("timeout must be an integer number of milliseconds"))
		case ms <= 0:
			env.fail(name, v, errors.New("timeout must be a positive number of milliseconds"))
		case ms > int64(time.Duration(1<<63-1)/time.Millisecond):
			env.fail(name, v, errors.New("timeout is too large"))
		default:
			cfg.Timeout = time.Duration(ms) * time.Millisecond
		}
	}

	if o.compression != nil {
		cfg.Compression = string(*o.compression)
	} else if name, v, ok := env.lookupOTLP("COMPRESSION"); ok {
		if c := Compression(strings.ToLower(v)); c.valid() {
			cfg.Compression = string(c)
		} else {
			env.fail(name, v, errors.New(`compression must be "gzip" or "none"`))
		}
	}

	if o.tlsConfig != nil {
		cfg.TLS = o.tlsConfig
	} else {
		cfg.TLS = env.tlsConfig()
	}
	return cfg
}

// tlsConfig builds the exporter's TLS configuration from the CERTIFICATE,
// CLIENT_CERTIFICATE and CLIENT_KEY variables, each in its per-signal form
// if set, else its generic form. It returns nil when none is set, leaving
// the system roots and no client certificate. The files are read even when
// the endpoint turns out to be plaintext: a path that is wrong is worth
// reporting before the endpoint is switched to TLS.
func (e *envReader) tlsConfig() *tls.Config {
	caName, caFile, caSet := e.lookupOTLP("CERTIFICATE")
	certName, certFile, certSet := e.lookupOTLP("CLIENT_CERTIFICATE")
	keyName, keyFile, keySet := e.lookupOTLP("CLIENT_KEY")
	if !caSet && !certSet && !keySet {
		return nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caSet {
		if data, err := os.ReadFile(caFile); err != nil {
			e.fail(caName, caFile, err)
		} else {
			roots := x509.NewCertPool()
			if roots.AppendCertsFromPEM(data) {
				cfg.RootCAs = roots
			} else {
				e.fail(caName, caFile, errors.New("the file holds no PEM certificate"))
			}
		}
	}
	switch {
	case certSet && !keySet:
		e.fail(certName, certFile, fmt.Errorf("a client certificate needs its private key in %sCLIENT_KEY", envOTLPPrefix))
	case keySet && !certSet:
		e.fail(keyName, keyFile, fmt.Errorf("a client key needs its certificate in %sCLIENT_CERTIFICATE", envOTLPPrefix))
	case certSet && keySet:
		certPEM, certErr := os.ReadFile(certFile)
		if certErr != nil {
			e.fail(certName, certFile, certErr)
		}
		keyPEM, keyErr := os.ReadFile(keyFile)
		if keyErr != nil {
			e.fail(keyName, keyFile, keyErr)
		}
		if certErr != nil || keyErr != nil {
			break
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("profiler: %s=%q and %s=%q: %w", certName, certFile, keyName, keyFile, err))
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

// grpcHostPort returns the host:port that gRPC dials for u, taking the
// scheme's port when u has none.
func grpcHostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "443"
	if u.Scheme == "http" {
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

func httpScheme(insecure bool) string {
	if insecure {
		return "http"
	}
	return "https"
}

// envReader reads variables through getenv and collects their errors.
type envReader struct {
	getenv func(string) string
	errs   []error
}

// lookup returns name's trimmed value, and whether it is set to a
// non-blank value.
func (e *envReader) lookup(name string) (string, string, bool) {
	v := strings.TrimSpace(e.getenv(name))
	return name, v, v != ""
}

// lookupOTLP returns the per-signal form of an OTLP variable if set, else
// the generic form, with the name of the one that was used.
func (e *envReader) lookupOTLP(suffix string) (string, string, bool) {
	if name, v, ok := e.lookup(envOTLPProfilePrefix + suffix); ok {
		return name, v, true
	}
	return e.lookup(envOTLPPrefix + suffix)
}

func (e *envReader) fail(name, value string, err error) {
	e.errs = append(e.errs, fmt.Errorf("profiler: %s=%q: %w", name, value, err))
}

// boolean reads the first of names that is set as "true" or "false", in any
// case. It reports false, false when none is set or the value is invalid.
func (e *envReader) boolean(names ...string) (value, ok bool) {
	for _, n := range names {
		name, v, set := e.lookup(n)
		if !set {
			continue
		}
		switch {
		case strings.EqualFold(v, "true"):
			return true, true
		case strings.EqualFold(v, "false"):
			return false, true
		}
		e.fail(name, v, errors.New(`value must be "true" or "false"`))
		return false, false
	}
	return false, false
}

// positiveInt reads name as an integer greater than zero.
func (e *envReader) positiveInt(name, reason string) (int, bool) {
	name, v, ok := e.lookup(name)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		e.fail(name, v, errors.New(reason))
		return 0, false
	}
	return n, true
}

// disabled reports whether either switch turns the profiler off. A valid
// "off" wins over an invalid value of the other switch; an invalid value
// with no valid "off" is an error, since guessing could profile a process
// whose owner meant to switch profiling off, or the reverse.
func (e *envReader) disabled() bool {
	sdkDisabled, _ := e.boolean(envSDKDisabled)
	enabled, enabledSet := e.boolean(envEnabled)
	return sdkDisabled || (enabledSet && !enabled)
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

type keyValue struct{ key, value string }

// parseKeyValues parses the list format shared by OTEL_RESOURCE_ATTRIBUTES
// and OTEL_EXPORTER_OTLP_HEADERS: "key=value" entries separated by commas,
// as in W3C Baggage without properties. Values are percent-decoded; blanks
// around keys and values are dropped; empty entries are skipped. Keys are
// kept in order; a repeated key is kept twice and the last one wins where
// the entries are collected into a set.
func parseKeyValues(s string) ([]keyValue, error) {
	var kvs []keyValue
	for entry := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		k, v, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, fmt.Errorf("entry %q is not key=value", strings.TrimSpace(entry))
		}
		k = strings.TrimSpace(k)
		if k == "" {
			return nil, fmt.Errorf("entry %q has an empty key", strings.TrimSpace(entry))
		}
		decoded, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("value of %q is not percent-encoded correctly: %w", k, err)
		}
		kvs = append(kvs, keyValue{k, decoded})
	}
	return kvs, nil
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
