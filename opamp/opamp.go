package opamp

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/internal/control"
)

// Client connects a running profiler to an OpAMP server as an agent. Create
// it with Start; Shutdown ends it.
type Client struct {
	cfg    *config
	target control.Target
	stats  func() profiler.Stats
	opamp  client.OpAMPClient
	clock  clock
	start  time.Time

	// offered holds the latest remote configuration the server sent and
	// the run loop has not taken yet; offers signals it.
	offerMu sync.Mutex
	offered *protobufs.AgentRemoteConfig
	offers  chan struct{}

	// effective is what GetEffectiveConfig returns, kept by the run loop.
	effective atomic.Pointer[protobufs.EffectiveConfig]
	// refused is the location of the last redirect refused.
	refused atomic.Pointer[string]

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
	stopErr  error
}

// Start connects profiler p to the OpAMP server that the options or the
// environment name (see the package documentation), and returns at once:
// the client connects, and reconnects, in the background, backing off
// exponentially up to a minute between attempts, and never blocks the
// profiler. ctx is opamp-go's context for the client's callbacks.
//
// An invalid option makes Start fail with an error that names it; an
// invalid environment variable is logged once and ignored. When p is a
// profiler disabled by the environment (PPROFOTEL_ENABLED=false), Start
// returns a Client that does nothing, and no error.
func Start(ctx context.Context, p *profiler.Profiler, opts ...Option) (*Client, error) {
	return start(ctx, p, os.Getenv, opts)
}

func start(ctx context.Context, p *profiler.Profiler, getenv func(string) string, opts []Option) (*Client, error) {
	if p == nil {
		return nil, errors.New("opamp: Start: the profiler must not be nil")
	}
	cfg, err := newConfig(opts, getenv)
	if err != nil {
		return nil, err
	}
	for _, w := range cfg.warnings {
		cfg.logger.Warn("pprofotel: invalid environment variable", "warning", w.Error())
	}
	target, ok := control.Lookup(p)
	if !ok {
		return &Client{}, nil
	}
	c := newClient(cfg, target, p.Stats)
	if c.cfg.transport() == "WebSocket" {
		c.opamp = client.NewWebSocket(clientLogger{cfg.logger})
	} else {
		c.opamp = client.NewHTTP(clientLogger{cfg.logger})
	}
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	go c.run()
	return c, nil
}

// newClient returns a Client of target whose run loop is not started.
func newClient(cfg *config, target control.Target, stats func() profiler.Stats) *Client {
	c := &Client{
		cfg:    cfg,
		target: target,
		stats:  stats,
		clock:  cfg.options.clock,
		offers: make(chan struct{}, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	c.start = c.clock.Now()
	c.effective.Store(c.effectiveConfig(target.Effective(), nil))
	return c
}

// connect sets what the client reports first and starts it.
func (c *Client) connect(ctx context.Context) error {
	uid, err := uuid.NewV7()
	if err != nil {
		return fmt.Errorf("opamp: instance id: %w", err)
	}
	if err := c.opamp.SetAgentDescription(agentDescription(c.target.Resource(), uid)); err != nil {
		return fmt.Errorf("opamp: %w", err)
	}
	if err := c.opamp.SetHealth(c.health(nil)); err != nil {
		return fmt.Errorf("opamp: %w", err)
	}
	capabilities := protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus |
		protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsRemoteConfig |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsEffectiveConfig |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsHealth |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsHeartbeat
	if err := c.opamp.SetCapabilities(&capabilities); err != nil {
		return fmt.Errorf("opamp: %w", err)
	}
	header := http.Header{}
	for k, v := range c.cfg.headers {
		header.Set(k, v)
	}
	heartbeat := c.cfg.heartbeat
	var tlsConfig *tls.Config
	if c.cfg.secure() {
		// Only then: opamp-go turns a ws URL into wss when given one.
		tlsConfig = c.cfg.tls
	}
	settings := types.StartSettings{
		OpAMPServerURL:    c.cfg.endpoint.String(),
		Header:            header,
		TLSConfig:         tlsConfig,
		InstanceUid:       types.InstanceUid(uid),
		HeartbeatInterval: &heartbeat,
		Callbacks:         c.callbacks(),
	}
	if err := c.opamp.Start(ctx, settings); err != nil {
		return fmt.Errorf("opamp: %s: %w", c.cfg, err)
	}
	return nil
}

// callbacks are what the client does on opamp-go's events: what the
// server sends, and the connection made, lost and redirected.
func (c *Client) callbacks() types.Callbacks {
	var failing atomic.Bool
	return types.Callbacks{
		OnConnect: func(context.Context) {
			if failing.Swap(false) {
				c.cfg.logger.Info("pprofotel: connected to the OpAMP server", "server", c.cfg.String())
			}
		},
		OnConnectFailed: func(_ context.Context, err error) {
			// Once per outage, not once per attempt.
			if !failing.Swap(true) {
				c.cfg.logger.Warn("pprofotel: cannot reach the OpAMP server; retrying with backoff",
					"server", c.cfg.String(), "error", err)
			}
		},
		OnMessage: func(_ context.Context, msg *types.MessageData) {
			if msg.RemoteConfig != nil {
				c.offer(msg.RemoteConfig)
			}
		},
		GetEffectiveConfig: func(context.Context) (*protobufs.EffectiveConfig, error) {
			return c.effective.Load(), nil
		},
		CheckRedirect: c.checkRedirect,
	}
}

// maxRedirects is how many redirects in a row the client follows, as
// net/http's default.
const maxRedirects = 10

// checkRedirect lets the client follow a redirect only to the endpoint's
// own scheme and host: never from TLS to cleartext, never with the
// headers (an Authorization) to another host, and, over WebSocket, where
// opamp-go keeps a redirect's URL for every later connection, never to a
// server the application did not name. A refused redirect fails the
// attempt, which is retried at the endpoint, and is logged once per
// location.
func (c *Client) checkRedirect(req *http.Request, via []*http.Request, _ []*http.Response) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	err := sameOrigin(c.cfg.endpoint, req.URL)
	if err == nil {
		return nil
	}
	to := req.URL.Scheme + "://" + req.URL.Host
	if prev := c.refused.Swap(&to); prev == nil || *prev != to {
		c.cfg.logger.Warn("pprofotel: redirect from the OpAMP server refused; the client stays with its endpoint",
			"server", c.cfg.String(), "location", to, "reason", err.Error())
	}
	return err
}

// sameOrigin reports whether to has the scheme and the host of endpoint,
// http and ws, https and wss counting as one (opamp-go turns one into the
// other), and no user information.
func sameOrigin(endpoint, to *url.URL) error {
	secure := func(scheme string) (bool, bool) {
		switch strings.ToLower(scheme) {
		case "wss", "https":
			return true, true
		case "ws", "http":
			return false, true
		}
		return false, false
	}
	want, _ := secure(endpoint.Scheme)
	got, ok := secure(to.Scheme)
	switch {
	case !ok:
		return fmt.Errorf("scheme %q is not one of ws, wss, http, https", to.Scheme)
	case want && !got:
		return errors.New("a redirect from TLS to cleartext")
	case got != want:
		return errors.New("a redirect to another scheme")
	case to.User != nil:
		return errors.New("a redirect carrying user information")
	case !strings.EqualFold(hostPort(endpoint, want), hostPort(to, got)):
		return errors.New("a redirect to another host")
	}
	return nil
}

// hostPort is u's host and port, the scheme's default port when u has
// none.
func hostPort(u *url.URL, secure bool) string {
	if u.Port() != "" {
		return u.Host
	}
	if secure {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// offer hands a remote configuration to the run loop, replacing one it has
// not taken yet: opamp-go's callback returns at once.
func (c *Client) offer(rc *protobufs.AgentRemoteConfig) {
	c.offerMu.Lock()
	c.offered = rc
	c.offerMu.Unlock()
	select {
	case c.offers <- struct{}{}:
	default:
	}
}

func (c *Client) takeOffer() *protobufs.AgentRemoteConfig {
	c.offerMu.Lock()
	defer c.offerMu.Unlock()
	rc := c.offered
	c.offered = nil
	return rc
}

// remote is the remote configuration last received.
type remote struct {
	hash   []byte
	status protobufs.RemoteConfigStatuses
	reason string
	// expiresAt is when the settings it asked for end (zero: never),
	// expired whether they did.
	expiresAt time.Time
	expired   bool
	// stopExpiry stops the expiry timer.
	stopExpiry func() bool
}

// loopState is what the run loop keeps.
type loopState struct {
	// accepted is the last remote configuration accepted, nil while the
	// local settings hold; last is the last received, accepted or not.
	accepted, last *remote
	// waiting is closed when the settings last applied took effect;
	// waitingFor is what they were.
	waiting    <-chan struct{}
	waitingFor control.Settings
	expiries   chan *remote
	// prevStats is the Stats of the previous health report.
	prevStats *profiler.Stats
}

// run reports health, applies the remote configurations the server sends,
// and returns the local settings when one expires, until Shutdown or the
// profiler stops.
func (c *Client) run() {
	defer close(c.done)
	st := &loopState{expiries: make(chan *remote, 1)}
	health := time.NewTicker(c.cfg.heartbeat)
	defer health.Stop()
	for {
		select {
		case <-c.offers:
			if rc := c.takeOffer(); rc != nil {
				c.receive(st, rc)
			}
		case <-st.waiting:
			st.waiting = nil
			c.applied(st)
		case r := <-st.expiries:
			c.expire(st, r)
		case <-health.C:
			c.reportHealth(st)
		case <-c.target.Done():
			c.reportHealth(st)
			// Nothing left to control: disconnect, as Shutdown would.
			go c.Shutdown(context.Background())
			return
		case <-c.stop:
			if st.accepted != nil {
				// The local configuration returns with the client
				// that changed it.
				c.apply(st, c.target.Local())
			}
			return
		}
	}
}

// receive handles a remote configuration: a resend of the last one
// received or of the last one accepted (same hash) is reported again, not
// applied again, so that reconnecting does not restart an expiry; another
// is checked and applied, or refused whole with the reason.
func (c *Client) receive(st *loopState, rc *protobufs.AgentRemoteConfig) {
	for _, r := range []*remote{st.last, st.accepted} {
		if r != nil && bytes.Equal(r.hash, rc.GetConfigHash()) {
			st.last = r
			c.setStatus(r)
			return
		}
	}
	r := &remote{hash: rc.GetConfigHash()}
	st.last = r
	change, err := parseRemote(rc.GetConfig(), c.target.Local(), c.cfg.options.bounds)
	var (
		canonical control.Settings
		applied   <-chan struct{}
	)
	if err == nil {
		canonical, applied, err = c.target.Apply(change.settings)
	}
	if err != nil {
		r.status, r.reason = protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED, err.Error()
		c.cfg.logger.Warn("pprofotel: remote configuration refused; the settings stay as they were",
			"config_hash", hex.EncodeToString(r.hash), "reason", r.reason)
		c.setStatus(r)
		return
	}
	if st.accepted != nil && st.accepted.stopExpiry != nil {
		st.accepted.stopExpiry()
	}
	r.status = protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLYING
	st.accepted = r
	if change.expiresIn > 0 {
		r.expiresAt = c.clock.Now().Add(change.expiresIn)
		r.stopExpiry = c.clock.AfterFunc(change.expiresIn, func() {
			select {
			case st.expiries <- r:
			case <-c.done:
			}
		})
	}
	st.waiting, st.waitingFor = applied, canonical
	c.setStatus(r)
}

// apply makes s the settings at the next window boundary, waiting for it
// in the run loop.
func (c *Client) apply(st *loopState, s control.Settings) {
	canonical, applied, err := c.target.Apply(s)
	if err != nil {
		// The local settings passed the same validation at Start;
		// only a stopped profiler refuses them.
		c.cfg.logger.Debug("pprofotel: the local settings were not restored", "error", err)
		return
	}
	st.waiting, st.waitingFor = applied, canonical
}

// applied reports that the settings last applied took effect: the
// effective configuration, and the status of the remote configuration
// that asked for them.
func (c *Client) applied(st *loopState) {
	eff := c.target.Effective()
	if !equal(eff, st.waitingFor) {
		return // the profiler stopped first
	}
	if r := st.accepted; r != nil && r.status == protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLYING {
		r.status = protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED
		c.cfg.logger.Info("pprofotel: remote configuration applied", "config_hash", hex.EncodeToString(r.hash),
			"expires_at", r.expiresAt)
		if st.last == r {
			c.setStatus(r)
		}
	}
	c.effective.Store(c.effectiveConfig(eff, st.accepted))
	_ = c.opamp.UpdateEffectiveConfig(context.Background())
	c.reportHealth(st)
}

// expire returns the local settings when the remote configuration r
// expires, unless another replaced it since.
func (c *Client) expire(st *loopState, r *remote) {
	if st.accepted != r || r.expired {
		return
	}
	r.expired = true
	c.cfg.logger.Info("pprofotel: remote configuration expired; the local settings return",
		"config_hash", hex.EncodeToString(r.hash))
	c.apply(st, c.target.Local())
}

// setStatus reports r's status to the server.
func (c *Client) setStatus(r *remote) {
	_ = c.opamp.SetRemoteConfigStatus(&protobufs.RemoteConfigStatus{
		LastRemoteConfigHash: r.hash,
		Status:               r.status,
		ErrorMessage:         r.reason,
	})
}

// equal reports whether a and b are the same settings. Both are as the
// profiler spells them (control.Target.Apply): the server's spelling of the
// profile types is never compared.
func equal(a, b control.Settings) bool {
	ta, tb := a.ProfileTypes, b.ProfileTypes
	a.ProfileTypes, b.ProfileTypes = nil, nil
	return reflect.DeepEqual(a, b) && slices.Equal(ta, tb)
}

// effectiveConfig is the effective configuration reported: the settings as
// a document of the remote configuration's form under ConfigName and, when
// a remote configuration was accepted, its hash and expiry under
// remoteStatusName.
func (c *Client) effectiveConfig(s control.Settings, r *remote) *protobufs.EffectiveConfig {
	files := map[string]*protobufs.AgentConfigFile{ConfigName: jsonFile(documentOf(s))}
	if r != nil {
		status := struct {
			ConfigHash string `json:"config_hash"`
			ExpiresAt  string `json:"expires_at,omitempty"`
			Expired    bool   `json:"expired,omitempty"`
		}{ConfigHash: hex.EncodeToString(r.hash), Expired: r.expired}
		if !r.expiresAt.IsZero() {
			status.ExpiresAt = r.expiresAt.UTC().Format(time.RFC3339)
		}
		files[remoteStatusName] = jsonFile(status)
	}
	return &protobufs.EffectiveConfig{ConfigMap: &protobufs.AgentConfigMap{ConfigMap: files}}
}

func jsonFile(v any) *protobufs.AgentConfigFile {
	body, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain structs of strings and numbers
	}
	return &protobufs.AgentConfigFile{Body: body, ContentType: "application/json"}
}

// Shutdown returns the local settings if a remote configuration changed
// them, disconnects from the server and stops the client, waiting no
// longer than ctx allows. It may be called more than once; the client
// also stops by itself when its profiler stops.
func (c *Client) Shutdown(ctx context.Context) error {
	if c == nil || c.done == nil {
		return nil
	}
	c.stopOnce.Do(func() {
		close(c.stop)
		select {
		case <-c.done:
		case <-ctx.Done():
		}
		if err := c.opamp.Stop(ctx); err != nil {
			c.stopErr = fmt.Errorf("opamp: stop: %w", err)
		}
	})
	return c.stopErr
}

// clientLogger passes opamp-go's messages to the logger at debug level:
// it logs every failed attempt to connect as an error, where the client
// warns once per outage.
type clientLogger struct{ l *slog.Logger }

func (l clientLogger) Debugf(ctx context.Context, format string, v ...any) {
	l.l.DebugContext(ctx, "opamp-go: "+fmt.Sprintf(format, v...))
}

func (l clientLogger) Errorf(ctx context.Context, format string, v ...any) {
	l.l.DebugContext(ctx, "opamp-go: "+fmt.Sprintf(format, v...))
}

// warnOnly passes only warnings and errors to its handler: the default
// logger is quiet, as the profiler's own.
type warnOnly struct{ slog.Handler }

func (h warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

func (h warnOnly) WithAttrs(attrs []slog.Attr) slog.Handler {
	return warnOnly{h.Handler.WithAttrs(attrs)}
}

func (h warnOnly) WithGroup(name string) slog.Handler { return warnOnly{h.Handler.WithGroup(name)} }

// clock is the time the client's expiries run on; tests replace it.
type clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
