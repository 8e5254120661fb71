package opamp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/protobufs"
	"go.opentelemetry.io/otel/attribute"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/internal/control"
	"github.com/pprofotel/profiler/internal/testutil/polltest"
)

// fakeTarget is a profiler whose window boundaries the test decides.
type fakeTarget struct {
	mu        sync.Mutex
	effective control.Settings
	pending   *control.Settings
	applied   chan struct{}
	applies   int
	done      chan struct{}
}

func newFakeTarget() *fakeTarget {
	return &fakeTarget{effective: testLocal, done: make(chan struct{})}
}

func (f *fakeTarget) Local() control.Settings { return testLocal }

func (f *fakeTarget) Effective() control.Settings {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.effective
}

// Apply refuses a window under a second, as the profiler's options do,
// and spells the profile types as the profiler does: in lower case, each
// once, in order.
func (f *fakeTarget) Apply(s control.Settings) (control.Settings, <-chan struct{}, error) {
	if s.Window < time.Second {
		return control.Settings{}, nil, errors.New("profiler: WithWindow(" + s.Window.String() + "): window must be at least 1s")
	}
	var names []string
	for _, n := range s.ProfileTypes {
		for f := range strings.SplitSeq(n, ",") {
			names = append(names, strings.ToLower(strings.TrimSpace(f)))
		}
	}
	order := []string{"cpu", "heap", "goroutine", "mutex", "block", "offcpu", "goroutineleak"}
	s.ProfileTypes = nil
	for _, n := range order {
		if slices.Contains(names, n) {
			s.ProfileTypes = append(s.ProfileTypes, n)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.applied != nil {
		close(f.applied)
	}
	f.pending, f.applied = &s, make(chan struct{})
	f.applies++
	return s, f.applied, nil
}

// boundary ends a window: the change waiting takes effect.
func (f *fakeTarget) boundary() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending != nil {
		f.effective = *f.pending
		f.pending = nil
		close(f.applied)
		f.applied = nil
	}
}

func (f *fakeTarget) Resource() []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("service.name", "checkout"), attribute.String("telemetry.sdk.name", "pprofotel")}
}

func (f *fakeTarget) Done() <-chan struct{} { return f.done }

// fakeOpAMP records what the client reports.
type fakeOpAMP struct {
	client.OpAMPClient // the methods not used panic
	statuses           chan *protobufs.RemoteConfigStatus
	effective          chan struct{}
	mu                 sync.Mutex
	health             *protobufs.ComponentHealth
}

func (f *fakeOpAMP) SetRemoteConfigStatus(s *protobufs.RemoteConfigStatus) error {
	f.statuses <- s
	return nil
}

func (f *fakeOpAMP) UpdateEffectiveConfig(context.Context) error {
	f.effective <- struct{}{}
	return nil
}

func (f *fakeOpAMP) SetHealth(h *protobufs.ComponentHealth) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.health = h
	return nil
}

func (f *fakeOpAMP) Stop(context.Context) error { return nil }

// fakeClock runs the expiries when the test says.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []func()
	for _, t := range c.timers {
		if !t.stopped && !t.at.After(c.now) {
			t.stopped = true
			due = append(due, t.f)
		}
	}
	c.mu.Unlock()
	for _, f := range due {
		f()
	}
}

// clientWithFakes runs a Client's loop over a fake profiler, server
// connection and clock.
func clientWithFakes(t *testing.T) (*Client, *fakeTarget, *fakeOpAMP, *fakeClock) {
	t.Helper()
	clk := &fakeClock{now: time.Date(2026, 11, 25, 20, 0, 0, 0, time.UTC)}
	cfg, err := newConfig([]Option{WithLogger(slog.New(slog.DiscardHandler)), optionFunc(func(o *options) { o.clock = clk })}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	target := newFakeTarget()
	c := newClient(cfg, target, func() profiler.Stats { return profiler.Stats{} })
	fake := &fakeOpAMP{statuses: make(chan *protobufs.RemoteConfigStatus, 10), effective: make(chan struct{}, 10)}
	c.opamp = fake
	go c.run()
	t.Cleanup(func() { _ = c.Shutdown(context.Background()) })
	return c, target, fake, clk
}

func remoteConfig(hash, body string) *protobufs.AgentRemoteConfig {
	return &protobufs.AgentRemoteConfig{ConfigHash: []byte(hash), Config: configMap(map[string]string{"pprofotel": body})}
}

func wantStatus(t *testing.T, fake *fakeOpAMP, hash string, status protobufs.RemoteConfigStatuses, reason string) {
	t.Helper()
	s := <-fake.statuses
	if string(s.LastRemoteConfigHash) != hash || s.Status != status || !strings.Contains(s.ErrorMessage, reason) ||
		reason == "" && s.ErrorMessage != "" {
		t.Fatalf("status %q %v %q, want %q %v with a reason containing %q", s.LastRemoteConfigHash, s.Status, s.ErrorMessage, hash, status, reason)
	}
}

// effectiveDocument is the settings file of the effective configuration
// last stored.
func effectiveDocument(t *testing.T, c *Client) (map[string]any, map[string]any) {
	t.Helper()
	files := c.effective.Load().ConfigMap.ConfigMap
	var doc, remote map[string]any
	if err := json.Unmarshal(files[ConfigName].Body, &doc); err != nil {
		t.Fatal(err)
	}
	if f, ok := files[remoteStatusName]; ok {
		if err := json.Unmarshal(f.Body, &remote); err != nil {
			t.Fatal(err)
		}
	}
	return doc, remote
}

// TestRemoteConfigLifecycle: an accepted configuration is APPLYING until
// the profiler's window boundary, then APPLIED with the effective
// configuration updated; a resend of the same hash changes nothing and
// does not restart the expiry; at the expiry the local settings return by
// themselves; a refused one is FAILED with the reason and leaves the
// settings as they were.
func TestRemoteConfigLifecycle(t *testing.T) {
	c, target, fake, clk := clientWithFakes(t)

	c.offer(remoteConfig("h1", `{"profiles":["cpu","heap","goroutine","offcpu"],"offcpu_duty_cycle":50,"expires_in":"10s"}`))
	wantStatus(t, fake, "h1", protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLYING, "")
	if eff := target.Effective(); eff.OffCPUDuty != testLocal.OffCPUDuty {
		t.Fatalf("took effect before the window boundary: %+v", eff)
	}
	target.boundary()
	wantStatus(t, fake, "h1", protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, "")
	<-fake.effective
	doc, remote := effectiveDocument(t, c)
	if doc["offcpu_duty_cycle"] != 50.0 || !slices.Contains(doc["profiles"].([]any), any("offcpu")) {
		t.Errorf("effective configuration %v", doc)
	}
	if remote["config_hash"] != "6831" || remote["expires_at"] != "2026-11-25T20:00:10Z" || remote["expired"] != nil {
		t.Errorf("remote status %v", remote)
	}

	// The server resends it after a reconnection, 5s later: the same
	// status, no new change, the expiry still 10s after the first.
	clk.advance(5 * time.Second)
	c.offer(remoteConfig("h1", `{"profiles":["cpu","heap","goroutine","offcpu"],"offcpu_duty_cycle":50,"expires_in":"10s"}`))
	wantStatus(t, fake, "h1", protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, "")
	clk.advance(5 * time.Second)
	polltest.Until(t, "the local settings applied at the expiry", func() bool {
		target.mu.Lock()
		defer target.mu.Unlock()
		return target.pending != nil
	})
	target.boundary()
	<-fake.effective
	if eff := target.Effective(); !sameSettings(eff, testLocal) {
		t.Fatalf("after the expiry the settings are %+v, want the local %+v", eff, testLocal)
	}
	doc, remote = effectiveDocument(t, c)
	if doc["offcpu_duty_cycle"] != 10.0 || remote["expired"] != true {
		t.Errorf("after the expiry: effective %v, remote %v", doc, remote)
	}
	if target.applies != 2 {
		t.Errorf("%d changes applied, want 2: the configuration and the return of the local one", target.applies)
	}

	// Refused by the bounds, by the profiler's validation, and for an
	// unknown key: FAILED with the reason, nothing applied.
	for _, tt := range []struct{ hash, body, reason string }{
		{"h2", `{"offcpu_duty_cycle":80}`, "offcpu_duty_cycle 80 is above 50, the local bound (opamp.WithMaxOffCPUDutyCycle)"},
		{"h3", `{"window":"1ns"}`, "window 1ns is below 10s"},
		{"h4", `{"offcpu":true}`, `unknown field "offcpu"`},
	} {
		c.offer(remoteConfig(tt.hash, tt.body))
		wantStatus(t, fake, tt.hash, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED, tt.reason)
	}
	if target.applies != 2 || !sameSettings(target.Effective(), testLocal) {
		t.Errorf("refused configurations changed the settings: %d applies, %+v", target.applies, target.Effective())
	}
	// The expired configuration, sent again after a refused one, is
	// still expired: reported, not applied.
	c.offer(remoteConfig("h1", `{"profiles":["cpu","heap","goroutine","offcpu"],"offcpu_duty_cycle":50,"expires_in":"10s"}`))
	wantStatus(t, fake, "h1", protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, "")
	if target.applies != 2 {
		t.Errorf("the expired configuration was applied again")
	}

	// Shutdown returns the local settings a remote configuration set.
	c.offer(remoteConfig("h5", `{"enabled":false}`))
	wantStatus(t, fake, "h5", protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLYING, "")
	target.boundary()
	wantStatus(t, fake, "h5", protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, "")
	if target.Effective().Enabled {
		t.Fatal("not paused")
	}
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	target.boundary()
	if !target.Effective().Enabled {
		t.Error("the local settings did not return at Shutdown")
	}
}

// TestProfilerRefusal: what the profiler's own validation refuses reaches
// the server as the reason, through a real profiler.
func TestProfilerRefusal(t *testing.T) {
	p, err := profiler.Start(profiler.WithExporter(nopExporter{}), profiler.WithWindow(time.Second),
		profiler.WithProfileTypes(profiler.HeapProfile), profiler.WithProcessContext(false))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background())
	target, ok := control.Lookup(p)
	if !ok {
		t.Fatal("no control target")
	}
	for _, tt := range []struct{ body, reason string }{
		{`{"profiles":["wall"]}`, `unknown profile type "wall"`},
		{`{"profiles":[]}`, "profiler: WithProfileTypes: no profile type named"},
	} {
		change, err := parseRemote(configMap(map[string]string{"pprofotel": tt.body}), target.Local(), defaultBounds)
		if err == nil {
			_, _, err = target.Apply(change.settings)
		}
		if err == nil || !strings.Contains(err.Error(), tt.reason) {
			t.Errorf("%s: error %v, want one containing %q", tt.body, err, tt.reason)
		}
	}
	if eff := target.Effective(); !sameSettings(eff, target.Local()) {
		t.Errorf("refusals changed the settings: %+v", eff)
	}
}

type nopExporter struct{}

func (nopExporter) Export(context.Context, *collectorpb.ExportProfilesServiceRequest) error {
	return nil
}
func (nopExporter) Shutdown(context.Context) error { return nil }

// TestDisabledProfiler: a profiler switched off by the environment gives
// a Client that does nothing, and no error; a nil one is an error.
func TestDisabledProfiler(t *testing.T) {
	t.Setenv("PPROFOTEL_ENABLED", "false")
	p, err := profiler.Start()
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(context.Background(), p, WithEndpointURL("ws://127.0.0.1:1/v1/opamp"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
	if _, err := Start(context.Background(), nil); err == nil {
		t.Error("Start with a nil profiler succeeded")
	}
}

// TestHealthAtStop: a profiler stopped by its application is reported
// stopped and healthy; one whose last windows failed, stopped and
// unhealthy, with the reason.
func TestHealthAtStop(t *testing.T) {
	for _, tt := range []struct {
		name        string
		failedAtEnd int64
		healthy     bool
	}{
		{"normal stop", 0, true},
		{"last windows failed", 2, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := newConfig([]Option{WithLogger(slog.New(slog.DiscardHandler))}, func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			target := newFakeTarget()
			var stopped atomic.Bool
			stats := func() profiler.Stats {
				if stopped.Load() {
					return profiler.Stats{WindowsCollected: 5, WindowsExported: 5 - tt.failedAtEnd, WindowsFailed: tt.failedAtEnd}
				}
				return profiler.Stats{WindowsCollected: 3, WindowsExported: 3}
			}
			c := newClient(cfg, target, stats)
			fake := &fakeOpAMP{statuses: make(chan *protobufs.RemoteConfigStatus, 10), effective: make(chan struct{}, 10)}
			c.opamp = fake
			go c.run()
			stopped.Store(true)
			close(target.done)
			<-c.done
			fake.mu.Lock()
			h := fake.health
			fake.mu.Unlock()
			if h.Status != "stopped" || h.Healthy != tt.healthy {
				t.Errorf("health at stop %q healthy=%v, want stopped healthy=%v", h.Status, h.Healthy, tt.healthy)
			}
		})
	}
}
