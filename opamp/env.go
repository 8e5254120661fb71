package opamp

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/pprofotel/profiler/internal/envconfig"
	"github.com/pprofotel/profiler/internal/export"
)

// The environment variables the package reads, here and nowhere else;
// doc.go says why these names.
const (
	envEndpoint  = "PPROFOTEL_OPAMP_ENDPOINT"
	envHeaders   = "PPROFOTEL_OPAMP_HEADERS"
	envHeartbeat = "PPROFOTEL_OPAMP_HEARTBEAT_INTERVAL"
)

const (
	defaultEndpoint  = "ws://localhost:4320/v1/opamp"
	defaultHeartbeat = 30 * time.Second
)

// config is the resolved configuration: options over environment variables
// over defaults.
type config struct {
	endpoint *url.URL
	headers  map[string]string
	// tls is the option's TLS configuration, nil for the system's roots;
	// used only on a wss or https endpoint.
	tls       *tls.Config
	options   options
	heartbeat time.Duration
	logger    *slog.Logger
	// warnings are about the environment, ignored as the OpenTelemetry
	// specification asks; Start logs each once.
	warnings []error
}

// newConfig resolves opts and the environment seen through getenv. An
// invalid option is an error naming it; an invalid variable is a warning
// and is ignored.
func newConfig(opts []Option, getenv func(string) string) (*config, error) {
	o := options{bounds: defaultBounds, clock: realClock{}}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	if b := o.bounds; b.minWindow > b.maxWindow {
		o.fail("WithMaxWindow", b.maxWindow, fmt.Sprintf("must be at least the shortest window, %s (WithMinWindow)", b.minWindow))
	}
	if len(o.errs) > 0 {
		return nil, errors.Join(o.errs...)
	}
	env := envconfig.New(getenv, "opamp: ")
	c := &config{endpoint: o.endpoint, headers: o.headers, heartbeat: o.heartbeat, logger: o.logger, options: o}
	if c.endpoint == nil {
		if v, ok := env.Lookup(envEndpoint); ok {
			if u, err := parseEndpoint(v); err != nil {
				env.Invalid(envEndpoint, v, err)
			} else {
				c.endpoint = u
			}
		}
	}
	if c.endpoint == nil {
		c.endpoint, _ = url.Parse(defaultEndpoint)
	}
	if c.headers == nil {
		if kvs, ok := env.KeyValues(envconfig.List{Secret: true, Check: func(kv envconfig.KeyValue) error {
			return export.CheckHeader(false, kv.Key, kv.Value)
		}}, envHeaders); ok {
			c.headers = make(map[string]string, len(kvs))
			for _, kv := range kvs {
				c.headers[kv.Key] = kv.Value
			}
		}
	}
	c.tls = o.tls
	if c.heartbeat == 0 {
		c.heartbeat = defaultHeartbeat
		if d, ok := env.Duration(envHeartbeat, "interval", time.Second); ok {
			c.heartbeat = d
		}
	}
	if c.logger == nil {
		c.logger = slog.New(warnOnly{slog.Default().Handler()})
	}
	c.warnings = env.Warnings()
	return c, nil
}

// String is the endpoint and the transport, for logs: never the headers.
func (c *config) String() string {
	return fmt.Sprintf("%s (%s)", c.endpoint.Redacted(), c.transport())
}

// secure reports whether the endpoint's scheme asks for TLS.
func (c *config) secure() bool { return c.endpoint.Scheme == "wss" || c.endpoint.Scheme == "https" }

// transport names the transport the endpoint's scheme chooses.
func (c *config) transport() string {
	if c.endpoint.Scheme == "ws" || c.endpoint.Scheme == "wss" {
		return "WebSocket"
	}
	return "plain HTTP"
}
