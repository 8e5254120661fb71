package opamp

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/pprofotel/profiler/internal/export"
)

// Option configures a Client.
type Option interface {
	apply(*options)
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// options records what the application set; nil or zero means "not set".
type options struct {
	endpoint  *url.URL
	headers   map[string]string
	tls       *tls.Config
	heartbeat time.Duration
	logger    *slog.Logger
	bounds    bounds
	// clock is the package's tests' in place of the real time.
	clock clock

	errs []error
}

func (o *options) fail(option string, arg any, reason string) {
	o.errs = append(o.errs, fmt.Errorf("opamp: %s(%v): %s", option, arg, reason))
}

// WithEndpointURL sets the OpAMP server's URL, path included. Its scheme
// chooses the transport: ws or wss for WebSocket, http or https for plain
// HTTP (which polls at the heartbeat interval); wss and https use TLS. It
// takes precedence over PPROFOTEL_OPAMP_ENDPOINT. The default is
// ws://localhost:4320/v1/opamp, where opamp-go's example server listens.
func WithEndpointURL(rawURL string) Option {
	return optionFunc(func(o *options) {
		u, err := parseEndpoint(rawURL)
		if err != nil {
			o.fail("WithEndpointURL", strconv.Quote(rawURL), err.Error())
			return
		}
		o.endpoint = u
	})
}

// parseEndpoint checks an endpoint URL: an absolute URL of one of the four
// schemes, with a host.
func parseEndpoint(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if !slices.Contains([]string{"ws", "wss", "http", "https"}, u.Scheme) || u.Host == "" {
		return nil, fmt.Errorf("want a URL such as ws://host:4320/v1/opamp, of scheme ws, wss, http or https")
	}
	return u, nil
}

// WithHeaders sets HTTP headers sent with every request (the WebSocket
// handshake or each plain-HTTP request), such as an Authorization header.
// It replaces PPROFOTEL_OPAMP_HEADERS. An error names the header, never
// its value.
func WithHeaders(headers map[string]string) Option {
	headers = maps.Clone(headers)
	return optionFunc(func(o *options) {
		for _, k := range slices.Sorted(maps.Keys(headers)) {
			if err := export.CheckHeader(false, k, headers[k]); err != nil {
				o.fail("WithHeaders", "header "+strconv.Quote(k), err.Error())
				return
			}
		}
		o.headers = headers
	})
}

// WithTLSClientConfig sets the TLS configuration of a wss or https
// endpoint: the roots that verify the server and, for mutual TLS, the
// client's certificate. It has no effect on a ws or http endpoint. Without
// it the system's roots verify the server. The configuration is copied.
func WithTLSClientConfig(c *tls.Config) Option {
	return optionFunc(func(o *options) {
		if c == nil {
			o.fail("WithTLSClientConfig", "nil", "TLS configuration must not be nil")
			return
		}
		o.tls = c.Clone()
	})
}

// WithHeartbeatInterval sets how often the client reports to the server
// when nothing changed: over WebSocket a heartbeat, over plain HTTP the
// polling interval, which is also how long a remote configuration may wait
// to be fetched. It must be at least a second. The default is 30s,
// overridden by PPROFOTEL_OPAMP_HEARTBEAT_INTERVAL.
func WithHeartbeatInterval(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d < time.Second {
			o.fail("WithHeartbeatInterval", d, "interval must be at least 1s")
			return
		}
		o.heartbeat = d
	})
}

// WithLogger sets the logger of the client's diagnostics: connections made
// and lost, remote configurations applied, refused or expired. By default
// only warnings reach slog.Default(): the first failure to connect after a
// success, and refused configurations.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) {
		if l == nil {
			o.fail("WithLogger", "nil", "logger must not be nil")
			return
		}
		o.logger = l
	})
}

// The bounds of a remote configuration: values beyond them are refused
// whole, whatever the server, so that a careless or compromised server
// cannot take over a service's CPU. They bound only what the server sets;
// the local configuration may exceed them.

// WithMaxCPUDutyCycle sets the highest CPU duty cycle, in percent, that a
// remote configuration may set. The default is 50.
func WithMaxCPUDutyCycle(percent int) Option {
	return percentBound("WithMaxCPUDutyCycle", percent, func(b *bounds) *int { return &b.maxCPUDuty })
}

// WithMaxOffCPUDutyCycle sets the highest off-CPU duty cycle, in percent,
// that a remote configuration may set. The default is 50.
func WithMaxOffCPUDutyCycle(percent int) Option {
	return percentBound("WithMaxOffCPUDutyCycle", percent, func(b *bounds) *int { return &b.maxOffCPUDuty })
}

func percentBound(option string, percent int, field func(*bounds) *int) Option {
	return optionFunc(func(o *options) {
		if percent < 1 || percent > 100 {
			o.fail(option, percent, "must be a percentage from 1 to 100")
			return
		}
		*field(&o.bounds) = percent
	})
}

// WithMinWindow sets the shortest window a remote configuration may set.
// The default is 10s.
func WithMinWindow(d time.Duration) Option {
	return positive("WithMinWindow", d, func(b *bounds) *time.Duration { return &b.minWindow })
}

// WithMaxWindow sets the longest window a remote configuration may set.
// The default is 5m. Whatever the window, a change (an expiry, a
// correction, the client's Shutdown) takes effect within one window of the
// local length.
func WithMaxWindow(d time.Duration) Option {
	return positive("WithMaxWindow", d, func(b *bounds) *time.Duration { return &b.maxWindow })
}

// WithMinGoroutineLeakInterval sets the shortest goroutine-leak interval a
// remote configuration may set: every read of that profile runs a full
// garbage collection. The default is 1m.
func WithMinGoroutineLeakInterval(d time.Duration) Option {
	return positive("WithMinGoroutineLeakInterval", d, func(b *bounds) *time.Duration { return &b.minLeakInterval })
}

// WithMaxExpiry sets the longest expires_in a remote configuration may
// ask for. The default is 24h.
func WithMaxExpiry(d time.Duration) Option {
	return positive("WithMaxExpiry", d, func(b *bounds) *time.Duration { return &b.maxExpiry })
}

// WithMinMutexProfileFraction sets the lowest mutex profile fraction (the
// most contention events recorded) a remote configuration may set. The
// default is 5.
func WithMinMutexProfileFraction(n int) Option {
	return positive("WithMinMutexProfileFraction", n, func(b *bounds) *int { return &b.minMutexFraction })
}

// WithMinBlockProfileRate sets the lowest block profile rate, in
// nanoseconds (the most blocking events recorded), a remote configuration
// may set. The default is 1000 (1µs).
func WithMinBlockProfileRate(ns int) Option {
	return positive("WithMinBlockProfileRate", ns, func(b *bounds) *int { return &b.minBlockRate })
}

// WithMaxGoroutineGuard sets the highest goroutine guard (max_goroutines)
// a remote configuration may set; it may not set 0, no limit. The default
// is 10,000, the profiler's own default.
func WithMaxGoroutineGuard(n int) Option {
	return positive("WithMaxGoroutineGuard", n, func(b *bounds) *int { return &b.maxGoroutines })
}

func positive[T int | time.Duration](option string, v T, field func(*bounds) *T) Option {
	return optionFunc(func(o *options) {
		if v <= 0 {
			o.fail(option, v, "must be positive")
			return
		}
		*field(&o.bounds) = v
	})
}
