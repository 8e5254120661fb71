// Package otlpconfig resolves the configuration of the OTLP profiles
// exporters, otlpprofilehttp and otlpprofilegrpc: each setting from the
// application's option, else from the OTEL_EXPORTER_OTLP_PROFILES_* form of
// its environment variable, else from the generic OTEL_EXPORTER_OTLP_*
// form, else its default. It is the one place that reads those variables
// and validates those options; the exporter packages' options are thin
// wrappers over the setters of Settings.
//
// A bad option is an error of New that names the option and its value
// (header values excepted: they are often credentials). A bad variable is a
// warning, returned by Resolve for the exporter to log once, and is
// ignored, as the OpenTelemetry specification asks.
package otlpconfig

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/grpc"

	"github.com/pprofotel/profiler/internal/envconfig"
	"github.com/pprofotel/profiler/internal/export"
	"github.com/pprofotel/profiler/internal/version"
)

// The variables, in their two forms: the per-signal one,
// OTEL_EXPORTER_OTLP_PROFILES_<X>, wins over the generic one.
const (
	envPrefix        = "OTEL_EXPORTER_OTLP_"
	envProfilePrefix = "OTEL_EXPORTER_OTLP_PROFILES_"
)

// Defaults.
const (
	// DefaultTimeout bounds one export attempt.
	DefaultTimeout = 10 * time.Second
	// ProfilesPath is appended to OTEL_EXPORTER_OTLP_ENDPOINT over HTTP,
	// as "v1/traces" is for traces, and is the path of an endpoint given
	// as host:port.
	ProfilesPath = "/v1development/profiles"

	defaultHTTPEndpoint = "http://localhost:4318" + ProfilesPath
	defaultGRPCEndpoint = "localhost:4317"
)

// UserAgent is sent with every request.
const UserAgent = "pprofotel-go/" + version.Version

// Compression names, as the COMPRESSION variables spell them.
const (
	CompressionGzip = "gzip"
	CompressionNone = "none"
)

var compressionNames = []string{CompressionGzip, CompressionNone}

// Transport is the transport of the exporter being configured.
type Transport int

const (
	HTTP Transport = iota
	GRPC
)

// Settings collects what the options of one exporter asked for. Its
// setters validate each value and record an error naming the option and
// the value; Resolve returns the errors together.
type Settings struct {
	transport Transport
	// pkg starts every error, e.g. "otlpprofilehttp".
	pkg string

	endpoint    *endpointOption
	urlPath     *string
	insecure    bool
	headers     map[string]string
	headersSet  bool
	timeout     *time.Duration
	compression *string
	tls         *tls.Config
	retry       *export.RetryConfig
	maxRequest  int
	grpcConn    *grpc.ClientConn
	dialOptions []grpc.DialOption
	httpClient  *http.Client
	proxy       func(*http.Request) (*url.URL, error)
	json        *export.JSONCodec
	// endpointVars, when set, replace the ENDPOINT variables as the
	// source of a gRPC endpoint (SetEndpointVariables).
	endpointVars []string

	errs []error
}

// endpointOption is WithEndpoint's host:port (url nil) or WithEndpointURL's
// URL (raw as given).
type endpointOption struct {
	raw string
	url *url.URL
}

// New returns empty Settings for an exporter of package pkg over transport.
func New(pkg string, transport Transport) *Settings {
	return &Settings{pkg: pkg, transport: transport}
}

// Fail records that option was given value, which is refused for reason.
func (s *Settings) Fail(option string, value any, reason string) {
	s.errs = append(s.errs, fmt.Errorf("%s: %s(%v): %s", s.pkg, option, value, reason))
}

// SetEndpoint is WithEndpoint: "host:port", without a scheme.
func (s *Settings) SetEndpoint(hostport string) {
	if strings.Contains(hostport, "://") {
		s.Fail("WithEndpoint", strconv.Quote(hostport), "endpoint must be host:port without a scheme; use WithEndpointURL for a URL")
		return
	}
	if err := envconfig.CheckHostPort(hostport); err != nil {
		s.Fail("WithEndpoint", strconv.Quote(hostport), err.Error())
		return
	}
	s.endpoint = &endpointOption{raw: hostport}
}

// SetEndpointURL is WithEndpointURL: an http or https URL.
func (s *Settings) SetEndpointURL(rawURL string) {
	u, err := envconfig.ParseURL(rawURL)
	if err != nil {
		s.Fail("WithEndpointURL", strconv.Quote(rawURL), err.Error())
		return
	}
	s.endpoint = &endpointOption{raw: strings.TrimSpace(rawURL), url: u}
}

// SetURLPath is WithURLPath: the path of the HTTP endpoint.
func (s *Settings) SetURLPath(path string) {
	if !strings.HasPrefix(path, "/") {
		s.Fail("WithURLPath", strconv.Quote(path), `path must start with "/"`)
		return
	}
	if _, err := url.Parse(path); err != nil {
		s.Fail("WithURLPath", strconv.Quote(path), err.Error())
		return
	}
	s.urlPath = &path
}

// SetInsecure is WithInsecure.
func (s *Settings) SetInsecure() { s.insecure = true }

// SetHeaders is WithHeaders. An error names the header, never a value.
func (s *Settings) SetHeaders(headers map[string]string) {
	headers = maps.Clone(headers)
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		if err := export.CheckHeader(s.transport == GRPC, k, headers[k]); err != nil {
			s.Fail("WithHeaders", "header "+strconv.Quote(k), err.Error())
			return
		}
	}
	s.headers, s.headersSet = headers, true
}

// SetTimeout is WithTimeout.
func (s *Settings) SetTimeout(d time.Duration) {
	if d <= 0 {
		s.Fail("WithTimeout", d, "timeout must be positive")
		return
	}
	s.timeout = &d
}

// SetCompression records option's compression, CompressionGzip or
// CompressionNone.
func (s *Settings) SetCompression(option, c string) {
	if !slices.Contains(compressionNames, c) {
		s.Fail(option, strconv.Quote(c), envconfig.OneOf("compression", compressionNames))
		return
	}
	s.compression = &c
}

// SetTLSClientConfig is WithTLSClientConfig; the configuration is copied.
func (s *Settings) SetTLSClientConfig(c *tls.Config) {
	if c == nil {
		s.Fail("WithTLSClientConfig", "nil", "TLS configuration must not be nil")
		return
	}
	s.tls = c.Clone()
}

// MinRetryInterval is the shortest RetryConfig.InitialInterval and
// MaxInterval that WithRetry accepts (0 still means the default). A retry
// that soon after a failure seldom finds the receiver recovered, and only
// multiplies its load: with both at a nanosecond, a receiver that answers
// 503 at once got a new request for every round trip, for all of
// MaxElapsedTime. At 100ms one window's retries come at most about 20
// times a second (each wait is drawn from the upper half of the interval).
const MinRetryInterval = 100 * time.Millisecond

// SetRetry is WithRetry. Zero durations take the defaults at Resolve.
func (s *Settings) SetRetry(rc export.RetryConfig) {
	switch {
	case rc.InitialInterval < 0, rc.MaxInterval < 0, rc.MaxElapsedTime < 0:
		s.Fail("WithRetry", fmt.Sprintf("%+v", rc), "intervals and elapsed time must not be negative")
		return
	case rc.MaxInterval > 0 && rc.MaxInterval < rc.InitialInterval:
		s.Fail("WithRetry", fmt.Sprintf("%+v", rc), "MaxInterval must not be less than InitialInterval")
		return
	case rc.InitialInterval > 0 && rc.InitialInterval < MinRetryInterval, rc.MaxInterval > 0 && rc.MaxInterval < MinRetryInterval:
		s.Fail("WithRetry", fmt.Sprintf("%+v", rc), fmt.Sprintf("InitialInterval and MaxInterval must be 0 (the default) or at least %s", MinRetryInterval))
		return
	}
	s.retry = &rc
}

// SetMaxRequestBytes is WithMaxRequestBytes.
func (s *Settings) SetMaxRequestBytes(n int) {
	switch {
	case n < export.MinMaxRequestBytes:
		s.Fail("WithMaxRequestBytes", n, fmt.Sprintf("must be at least %d (64 KiB)", export.MinMaxRequestBytes))
		return
	case n > export.MaxMaxRequestBytes:
		s.Fail("WithMaxRequestBytes", n, fmt.Sprintf("must be at most %d (64 MiB): OTLP clients must not send larger requests", export.MaxMaxRequestBytes))
		return
	}
	s.maxRequest = n
}

// SetGRPCConn is WithGRPCConn.
func (s *Settings) SetGRPCConn(conn *grpc.ClientConn) {
	if conn == nil {
		s.Fail("WithGRPCConn", "nil", "connection must not be nil")
		return
	}
	s.grpcConn = conn
}

// AddDialOptions is WithDialOption.
func (s *Settings) AddDialOptions(opts []grpc.DialOption) {
	s.dialOptions = append(s.dialOptions, opts...)
}

// SetHTTPClient is WithHTTPClient.
func (s *Settings) SetHTTPClient(c *http.Client) {
	if c == nil {
		s.Fail("WithHTTPClient", "nil", "client must not be nil")
		return
	}
	s.httpClient = c
}

// SetProxy is WithProxy.
func (s *Settings) SetProxy(proxy func(*http.Request) (*url.URL, error)) {
	if proxy == nil {
		s.Fail("WithProxy", "nil", "proxy function must not be nil")
		return
	}
	s.proxy = proxy
}

// SetEndpointVariables makes a gRPC exporter read its endpoint, when no
// option gives one, from the first of names set to a valid value, in place
// of the ENDPOINT variables; each is read as OTEL_EXPORTER_OTLP_ENDPOINT
// is, a URL or host:port, an invalid one warned about and skipped. The
// default stays localhost:4317, plaintext. The Splunk exporter uses it
// for SPLUNK_PROFILER_LOGS_ENDPOINT, then OTEL_EXPORTER_OTLP_ENDPOINT.
func (s *Settings) SetEndpointVariables(names ...string) {
	s.endpointVars = slices.Clone(names)
}

// SetJSON is WithJSON.
func (s *Settings) SetJSON(codec *export.JSONCodec) { s.json = codec }

// Config is an exporter's resolved configuration.
type Config struct {
	OTLP            export.OTLPConfig
	Retry           export.RetryConfig
	MaxRequestBytes int
}

// Resolve resolves the settings over the environment seen through getenv
// and the defaults. It returns every option error at once, and the
// warnings about variables, which the caller logs once each.
func (s *Settings) Resolve(getenv func(string) string) (Config, []error, error) {
	env := envconfig.New(getenv, s.pkg+": ")
	grpc := s.transport == GRPC
	cfg := export.OTLPConfig{
		Protocol:    export.ProtocolHTTPProtobuf,
		Timeout:     DefaultTimeout,
		Compression: CompressionNone,
		UserAgent:   UserAgent,
		JSON:        s.json,
	}
	if grpc {
		cfg.Protocol = export.ProtocolGRPC
	} else if s.json != nil {
		cfg.Protocol = export.ProtocolHTTPJSON
	}
	if s.grpcConn == nil {
		// The application's connection has its own endpoint.
		cfg.Endpoint, cfg.Insecure = s.resolveEndpoint(env)
	}

	if s.headersSet {
		cfg.Headers = s.headers
	} else {
		cfg.Headers = headersFromEnv(env, grpc)
	}
	if len(cfg.Headers) == 0 {
		cfg.Headers = nil
	}
	if s.timeout != nil {
		cfg.Timeout = *s.timeout
	} else if d, ok := env.Millis("timeout", 0, otlpVar("TIMEOUT")...); ok {
		cfg.Timeout = d
	}
	if s.compression != nil {
		cfg.Compression = *s.compression
	} else if c, ok := env.Enum("compression", compressionNames, otlpVar("COMPRESSION")...); ok {
		cfg.Compression = c
	}
	switch {
	case s.tls != nil:
		cfg.TLS = s.tls
	case s.grpcConn == nil && s.httpClient == nil:
		// The certificate files are read only when the exporter makes
		// its own connections.
		cfg.TLS = tlsFromEnv(env)
	}
	cfg.GRPCConn = s.grpcConn
	cfg.DialOptions = s.dialOptions
	cfg.HTTPClient = s.httpClient
	cfg.Proxy = s.proxy

	out := Config{OTLP: cfg, Retry: ResolveRetry(s.retry), MaxRequestBytes: s.maxRequest}
	if len(s.errs) > 0 {
		return Config{}, nil, errors.Join(s.errs...)
	}
	return out, env.Warnings(), nil
}

// Warn logs each warning once through logger (slog.Default() if nil), at
// Warn level: a bad variable is not an error, the exporter works without
// it.
func Warn(logger *slog.Logger, warnings []error) {
	if logger == nil {
		logger = slog.Default()
	}
	for _, w := range warnings {
		logger.Warn(w.Error())
	}
}

// resolveEndpoint returns the endpoint, and with it transport security,
// from the first of: WithEndpoint or WithEndpointURL,
// OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT, the
// default. An endpoint given as a URL is secured according to its scheme;
// one given as host:port uses WithInsecure, else the INSECURE variables,
// else TLS. Over HTTP, WithURLPath replaces the path of whichever wins.
func (s *Settings) resolveEndpoint(env *envconfig.Reader) (endpoint string, insecure bool) {
	endpoint, insecure = s.endpointFrom(env)
	if s.transport == HTTP && s.urlPath != nil {
		// endpoint was validated as a URL: it parses.
		u, _ := url.Parse(endpoint)
		u.Path, u.RawPath = *s.urlPath, ""
		endpoint = u.String()
	}
	return endpoint, insecure
}

func (s *Settings) endpointFrom(env *envconfig.Reader) (endpoint string, insecure bool) {
	// insecureFlag is consulted only for host:port endpoints.
	insecureFlag := func() bool {
		if s.insecure {
			return true
		}
		b, _ := env.Bool(otlpVar("INSECURE")...)
		return b
	}
	if s.endpoint != nil {
		return s.optionEndpoint(insecureFlag)
	}
	if r, ok := s.envEndpoint(env, insecureFlag); ok {
		return r.endpoint, r.insecure
	}
	if s.transport == GRPC {
		return defaultGRPCEndpoint, true
	}
	return defaultHTTPEndpoint, true
}

// optionEndpoint returns the endpoint WithEndpoint or WithEndpointURL
// gave, and whether it is to be reached without TLS.
func (s *Settings) optionEndpoint(insecureFlag func() bool) (endpoint string, insecure bool) {
	grpc := s.transport == GRPC
	if u := s.endpoint.url; u != nil {
		if s.insecure && u.Scheme == "https" {
			s.errs = append(s.errs, fmt.Errorf("%s: WithInsecure() conflicts with WithEndpointURL(%q): the https scheme asks for TLS", s.pkg, s.endpoint.raw))
		}
		if grpc {
			return envconfig.GRPCHostPort(u), u.Scheme == "http"
		}
		return s.endpoint.raw, u.Scheme == "http"
	}
	insecure = insecureFlag()
	if grpc {
		return s.endpoint.raw, insecure
	}
	return httpScheme(insecure) + "://" + s.endpoint.raw + ProfilesPath, insecure
}

// resolvedEndpoint is an endpoint the environment gave.
type resolvedEndpoint struct {
	endpoint string
	insecure bool
}

// envEndpoint returns the endpoint the environment gives, if a variable
// gives a valid one: the per-signal form, used as is, else the generic
// form. An invalid one is ignored.
func (s *Settings) envEndpoint(env *envconfig.Reader, insecureFlag func() bool) (resolvedEndpoint, bool) {
	grpc := s.transport == GRPC
	parse := func(asIs bool) func(string) (resolvedEndpoint, error) {
		return func(v string) (resolvedEndpoint, error) {
			if grpc {
				endpoint, insecure, err := envconfig.GRPCEndpoint(v, insecureFlag)
				return resolvedEndpoint{endpoint, insecure}, err
			}
			if !strings.Contains(v, "://") {
				// Without a scheme it can only be a gRPC host:port.
				return resolvedEndpoint{}, errors.New("an OTLP/HTTP endpoint must be a URL with an http or https scheme")
			}
			u, err := envconfig.ParseURL(v)
			if err != nil {
				return resolvedEndpoint{}, err
			}
			if asIs {
				return resolvedEndpoint{v, u.Scheme == "http"}, nil
			}
			return resolvedEndpoint{u.JoinPath(ProfilesPath).String(), u.Scheme == "http"}, nil
		}
	}
	if grpc && s.endpointVars != nil {
		return envconfig.Parse(env, parse(true), s.endpointVars...)
	}
	if r, ok := envconfig.Parse(env, parse(true), envProfilePrefix+"ENDPOINT"); ok {
		return r, true
	}
	return envconfig.Parse(env, parse(false), envPrefix+"ENDPOINT")
}

func httpScheme(insecure bool) string {
	if insecure {
		return "http"
	}
	return "https"
}

// otlpVar names the two forms of an OTLP variable, the per-signal one
// first, as the order in which they are looked up.
func otlpVar(suffix string) []string {
	return []string{envProfilePrefix + suffix, envPrefix + suffix}
}

// headersFromEnv reads the HEADERS variables. An entry that cannot be read,
// or that the transport could not send (a name that is not an HTTP token,
// a gRPC metadata key outside [0-9a-z-_.]), is left out and warned about;
// the others are sent, as otel-go's exporters do. The warning names the
// variable and the entries' positions and keys, never the value: headers
// carry credentials.
func headersFromEnv(env *envconfig.Reader, grpc bool) map[string]string {
	name, v, ok := env.First(otlpVar("HEADERS")...)
	if !ok {
		return nil
	}
	headers := make(map[string]string)
	var bad []string
	entry := 0
	for raw := range strings.SplitSeq(v, ",") {
		if strings.TrimSpace(raw) == "" {
			continue
		}
		entry++
		kvs, errs := envconfig.ParseKeyValues(raw, false)
		if len(errs) > 0 || len(kvs) != 1 {
			bad = append(bad, fmt.Sprintf("entry %d is not key=value with a percent-encoded value", entry))
			continue
		}
		kv := kvs[0]
		if err := export.CheckHeader(grpc, kv.Key, kv.Value); err != nil {
			bad = append(bad, fmt.Sprintf("entry %d: %v", entry, err))
			continue
		}
		headers[kv.Key] = kv.Value
	}
	if len(bad) > 0 {
		what := "left out"
		if len(headers) > 0 {
			what = "left out, the other entries stand"
		}
		env.Warn(fmt.Errorf("%s (value not shown: headers may hold credentials): %s; %s", name, strings.Join(bad, "; "), what))
	}
	return headers
}

// tlsFromEnv builds the exporter's TLS configuration from the CERTIFICATE,
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
		e.Invalid(certName, certFile, fmt.Errorf("a client certificate needs its private key in %sCLIENT_KEY", envPrefix))
	case keySet && !certSet:
		e.Invalid(keyName, keyFile, fmt.Errorf("a client key needs its certificate in %sCLIENT_CERTIFICATE", envPrefix))
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

// ResolveRetry fills the zero durations of the application's retry policy
// with the defaults; without one the default policy applies. SetRetry has
// already refused negative durations and a cap below the initial interval.
func ResolveRetry(rc *export.RetryConfig) export.RetryConfig {
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

// NewExporter resolves s over the environment seen through getenv, logs the
// warnings about variables through logger (nil: slog.Default()), builds
// the transport with newTransport and wraps it in the retry policy and the
// splitting of large requests. A partial success is reported as an error
// (export.ReportError) to the application's error handler or logger: it
// is not an error of Export, since the rejected profiles must not be sent
// again, but the receiver's rejections must not vanish either.
func NewExporter(s *Settings, getenv func(string) string, logger *slog.Logger,
	newTransport func(export.OTLPConfig) (export.Exporter, error)) (*export.SplittingExporter, error) {
	cfg, warnings, err := s.Resolve(getenv)
	if err != nil {
		return nil, err
	}
	Warn(logger, warnings)
	pkg := s.pkg
	cfg.OTLP.OnPartialSuccess = func(rejected int64, message string) {
		export.ReportError(logger, fmt.Errorf("%s: the receiver accepted the request in part: %d profiles rejected: %s", pkg, rejected, message))
	}
	t, err := newTransport(cfg.OTLP)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pkg, err)
	}
	t = export.WarnNoProfilesPipeline(t, noPipeline(pkg, cfg.OTLP, logger))
	e := export.NewSplitting(t, cfg.Retry, cfg.MaxRequestBytes, export.OnRetry(firstFailure(pkg, cfg.OTLP.Endpoint, logger)))
	e.Where = pkg + ": " + cfg.OTLP.Protocol + " to " + cmp.Or(cfg.OTLP.Endpoint, "the application's connection")
	if cfg.OTLP.GRPCConn != nil {
		e.Where = pkg + ": grpc over the application's connection to " + cfg.OTLP.GRPCConn.Target()
	}
	return e, nil
}

// firstFailure returns a retry callback that warns, once in the exporter's
// life, that an export failed and is being retried, naming the endpoint
// and why: a user who points the profiler at a receiver that is not there
// reads it when the first attempt fails, not after a minute of retries.
// Later failures are the profiler's to report, which it rate-limits.
func firstFailure(pkg, endpoint string, logger *slog.Logger) func(int, time.Duration, error) {
	if logger == nil {
		logger = slog.Default()
	}
	var warned atomic.Bool
	return func(_ int, delay time.Duration, err error) {
		if warned.CompareAndSwap(false, true) {
			logger.Warn(pkg+": an export failed; retrying (further failures are reported by the profiler, not here)",
				"endpoint", endpoint, "retry_in", delay.Round(time.Millisecond), "error", err)
		}
	}
}

// noPipeline returns the warning of a receiver that takes no profiles
// (export.NoProfilesPipeline): where the exporter sent, and what to
// enable. The OpenTelemetry Collector has served profiles since v0.112.0
// only behind the feature gate service.profilesSupport, alpha and off by
// default in every release since, v0.165.0 (the one the integration tests
// run) included; a Collector with a profiles pipeline and without the
// gate refuses to start, so the gate is asked for with the pipeline.
func noPipeline(pkg string, cfg export.OTLPConfig, logger *slog.Logger) func(error) {
	if logger == nil {
		logger = slog.Default()
	}
	where := cfg.Endpoint
	check := "check too that the URL's path is the receiver's profiles path (" + ProfilesPath + ")"
	if cfg.Protocol == export.ProtocolGRPC {
		where = "grpc://" + cfg.Endpoint
		if cfg.GRPCConn != nil {
			where = "the application's gRPC connection to " + cfg.GRPCConn.Target()
		}
		check = "the service it lacks is " + collectorpb.ProfilesService_ServiceDesc.ServiceName
	}
	return func(err error) {
		logger.Warn(pkg+": the receiver at "+where+" takes no profiles; "+
			"an OpenTelemetry Collector needs a profiles pipeline with the otlp receiver "+
			"(service.pipelines.profiles) and, from v0.112.0 on, its feature gate "+
			"(--feature-gates=service.profilesSupport); "+check,
			"endpoint", where, "error", err)
	}
}
