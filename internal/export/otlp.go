package export

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/pprofotel/profiler/internal/envconfig"
)

// Compression values of OTLPConfig.Compression.
const (
	compressionGzip = "gzip"
	compressionNone = "none"
)

var errNilRequest = errors.New("export: nil request")

// NewOTLP returns an exporter that sends each request to an OTLP collector
// with cfg.Protocol. It does not touch the network: a gRPC connection is
// established on first use, HTTP connections per request. Every invalid
// setting is reported with its name and value.
//
// NewOTLP links the OTLP/JSON codec whatever the protocol; the exporter
// packages call NewHTTP and NewGRPC, so that only a program that asks for
// JSON links it.
func NewOTLP(cfg OTLPConfig) (Exporter, error) {
	switch cfg.Protocol {
	case ProtocolGRPC:
		return NewGRPC(cfg)
	case ProtocolHTTPJSON:
		if cfg.JSON == nil {
			cfg.JSON = OTLPJSON()
		}
		return NewHTTP(cfg)
	case ProtocolHTTPProtobuf:
		return NewHTTP(cfg)
	}
	return nil, fmt.Errorf("otlp protocol %q: want %q, %q or %q",
		cfg.Protocol, ProtocolGRPC, ProtocolHTTPProtobuf, ProtocolHTTPJSON)
}

// NewGRPC returns an exporter that calls ProfilesService/Export over gRPC;
// cfg.Protocol is ignored. It does not touch the network: the connection is
// established on first use.
func NewGRPC(cfg OTLPConfig) (Exporter, error) {
	if err := checkCommon(cfg); err != nil {
		return nil, err
	}
	cfg.Protocol = ProtocolGRPC
	return newGRPCExporter(cfg, privateTLS(cfg.TLS))
}

// NewHTTP returns an exporter that POSTs each request over OTLP/HTTP:
// binary protobuf bodies, or OTLP/JSON ones when cfg.JSON is set (then
// cfg.Protocol must not say http/protobuf, and is set to http/json).
func NewHTTP(cfg OTLPConfig) (Exporter, error) {
	if err := checkCommon(cfg); err != nil {
		return nil, err
	}
	switch {
	case cfg.Protocol == ProtocolHTTPJSON && cfg.JSON == nil:
		return nil, errors.New("otlp protocol http/json: no JSON codec")
	case cfg.JSON != nil:
		cfg.Protocol = ProtocolHTTPJSON
	default:
		cfg.Protocol = ProtocolHTTPProtobuf
	}
	return newHTTPExporter(cfg, privateTLS(cfg.TLS))
}

// privateTLS returns a TLS configuration for one exporter: the transports
// fill in fields of it (NextProtos, ServerName) and may keep state in it
// (session caches), so the caller's must stay as it was given.
func privateTLS(given *tls.Config) *tls.Config {
	if given == nil {
		return &tls.Config{MinVersion: tls.VersionTLS12}
	}
	c := given.Clone()
	if c.MinVersion == 0 {
		c.MinVersion = tls.VersionTLS12
	}
	return c
}

// checkCommon validates the settings that do not depend on the protocol.
func checkCommon(cfg OTLPConfig) error {
	switch cfg.Compression {
	case "", compressionNone, compressionGzip:
	default:
		return fmt.Errorf("otlp compression %q: want %q or %q", cfg.Compression, compressionGzip, compressionNone)
	}
	if cfg.Timeout < 0 {
		return fmt.Errorf("otlp timeout %v: must not be negative", cfg.Timeout)
	}
	for k, v := range cfg.Headers {
		if err := CheckHeader(false, k, v); err != nil {
			return err
		}
	}
	if !httpguts.ValidHeaderFieldValue(cfg.UserAgent) {
		return fmt.Errorf("otlp user agent %q: invalid header value", cfg.UserAgent)
	}
	return nil
}

// CheckHeader reports whether name: value can be sent as an HTTP header
// and, with grpc, as gRPC metadata, which refuses keys outside
// [0-9a-z-_.] once lower-cased and non-printable values on non-binary
// keys. It is the one check of headers, for options, variables and the
// exporters. Its errors name the header, never its value: header values
// carry credentials (Authorization, API keys), and errors end up in logs.
func CheckHeader(grpc bool, name, value string) error {
	if name == "" {
		return errors.New("otlp header name must not be empty")
	}
	if !httpguts.ValidHeaderFieldName(name) {
		return fmt.Errorf("otlp header %q: invalid name", name)
	}
	if !httpguts.ValidHeaderFieldValue(value) {
		return fmt.Errorf("otlp header %q: invalid value, with a control character (the value is not shown: it may be a secret)", name)
	}
	if !grpc {
		return nil
	}
	key := strings.ToLower(name)
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("otlp header %q: gRPC metadata keys allow only 0-9 a-z - _ .", name)
		}
	}
	if !strings.HasSuffix(key, "-bin") {
		for i := 0; i < len(value); i++ {
			if value[i] < 0x20 || value[i] > 0x7e {
				return fmt.Errorf("otlp header %q: gRPC metadata values must be printable ASCII (the value is not shown: it may be a secret)", name)
			}
		}
	}
	return nil
}

// CheckGRPCEndpoint accepts "host:port" with a port in 1-65535, the form
// gRPC endpoints take once resolved; envconfig.CheckHostPort decides.
func CheckGRPCEndpoint(endpoint string) error {
	if endpoint == "" {
		return errors.New(`otlp endpoint "" is empty: want host:port`)
	}
	if err := envconfig.CheckHostPort(endpoint); err != nil {
		return fmt.Errorf("otlp endpoint %q: %w", endpoint, err)
	}
	return nil
}

// checkHTTPEndpoint accepts an absolute http or https URL whose scheme
// agrees with insecure.
func checkHTTPEndpoint(endpoint string, insecure bool) (*url.URL, error) {
	if endpoint == "" {
		return nil, errors.New("otlp endpoint is empty: want a URL such as http://localhost:4318/v1development/profiles")
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("otlp endpoint %q: %w", endpoint, err)
	}
	switch u.Scheme {
	case "http":
		if !insecure {
			return nil, fmt.Errorf("otlp endpoint %q: scheme http is plaintext but insecure is false", endpoint)
		}
	case "https":
		if insecure {
			return nil, fmt.Errorf("otlp endpoint %q: scheme https uses TLS but insecure is true", endpoint)
		}
	default:
		return nil, fmt.Errorf("otlp endpoint %q: scheme %q: want http or https", endpoint, u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("otlp endpoint %q: no host", endpoint)
	}
	return u, nil
}

// attemptContext bounds one attempt by timeout, if set, within ctx.
func attemptContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout > 0 {
		return context.WithTimeout(ctx, timeout)
	}
	return context.WithCancel(ctx)
}

// reportPartialSuccess hands a partial success to fn. A response whose
// partial_success is unset, or has no rejections and no message, is a full
// success.
func reportPartialSuccess(fn func(int64, string), rejected int64, message string) {
	if fn == nil || rejected == 0 && message == "" {
		return
	}
	fn(rejected, message)
}

// sortedKeys returns the header names in a stable order, so that requests
// are identical from one export to the next.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
