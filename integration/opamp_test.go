package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server"
	"github.com/open-telemetry/opamp-go/server/types"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"

	"github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/internal/testutil/polltest"
	"github.com/pprofotel/profiler/internal/testutil/testcert"
	_ "github.com/pprofotel/profiler/offcpu"
	"github.com/pprofotel/profiler/opamp"
)

// opampServer is opamp-go's own server with what a management backend
// keeps of its agent: the last description, effective configuration and
// health, every remote configuration status reported, and the remote
// configuration to offer, sent in reply to any message whose status is of
// another hash (the protocol's way; over WebSocket it rides on the
// heartbeat).
type opampServer struct {
	t    *testing.T
	addr string
	srv  server.OpAMPServer
	// tls, when set, serves wss and https.
	tls *tls.Config

	mu          sync.Mutex
	conns       map[types.Connection]bool
	connected   int
	description *protobufs.AgentDescription
	effective   *protobufs.EffectiveConfig
	health      *protobufs.ComponentHealth
	statuses    []*protobufs.RemoteConfigStatus
	lastHash    []byte
	offer       *protobufs.AgentRemoteConfig
}

// startOpAMPServer starts the server on addr ("127.0.0.1:0" for any port),
// over TLS when tlsConfig is not nil.
func startOpAMPServer(t *testing.T, addr string, tlsConfig ...*tls.Config) *opampServer {
	t.Helper()
	s := &opampServer{t: t, conns: map[types.Connection]bool{}}
	if len(tlsConfig) > 0 {
		s.tls = tlsConfig[0]
	}
	s.start(addr)
	t.Cleanup(s.stop)
	return s
}

func (s *opampServer) start(addr string) {
	s.t.Helper()
	s.srv = server.New(nil)
	err := s.srv.Start(server.StartSettings{
		ListenEndpoint: addr,
		ListenPath:     "/v1/opamp",
		TLSConfig:      s.tls,
		Settings: server.Settings{Callbacks: types.Callbacks{
			OnConnecting: func(*http.Request) types.ConnectionResponse {
				return types.ConnectionResponse{Accept: true, ConnectionCallbacks: types.ConnectionCallbacks{
					OnConnected: func(_ context.Context, conn types.Connection) {
						s.mu.Lock()
						defer s.mu.Unlock()
						s.conns[conn] = true
						s.connected++
					},
					OnMessage:         s.onMessage,
					OnConnectionClose: func(conn types.Connection) { s.mu.Lock(); delete(s.conns, conn); s.mu.Unlock() },
				}}
			},
		}},
	})
	if err != nil {
		s.t.Fatal(err)
	}
	s.addr = s.srv.Addr().String()
}

// stop stops the server and drops its WebSocket connections, which
// http.Server.Shutdown leaves open once hijacked.
func (s *opampServer) stop() {
	if s.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Stop(ctx)
	s.srv = nil
	s.mu.Lock()
	defer s.mu.Unlock()
	for conn := range s.conns {
		_ = conn.Disconnect()
	}
}

func (s *opampServer) onMessage(_ context.Context, _ types.Connection, msg *protobufs.AgentToServer) *protobufs.ServerToAgent {
	s.mu.Lock()
	defer s.mu.Unlock()
	if msg.AgentDescription != nil {
		s.description = msg.AgentDescription
	}
	if msg.EffectiveConfig != nil {
		s.effective = msg.EffectiveConfig
	}
	if msg.Health != nil {
		s.health = msg.Health
	}
	if st := msg.RemoteConfigStatus; st != nil {
		s.lastHash = st.LastRemoteConfigHash
		if n := len(s.statuses); n == 0 || !sameStatus(s.statuses[n-1], st) {
			s.statuses = append(s.statuses, st)
		}
	}
	resp := &protobufs.ServerToAgent{InstanceUid: msg.InstanceUid}
	if s.offer != nil && string(s.lastHash) != string(s.offer.ConfigHash) {
		resp.RemoteConfig = s.offer
	}
	return resp
}

func sameStatus(a, b *protobufs.RemoteConfigStatus) bool {
	return string(a.LastRemoteConfigHash) == string(b.LastRemoteConfigHash) && a.Status == b.Status && a.ErrorMessage == b.ErrorMessage
}

// send offers the profiler's remote configuration body under hash.
func (s *opampServer) send(hash, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offer = &protobufs.AgentRemoteConfig{ConfigHash: []byte(hash), Config: &protobufs.AgentConfigMap{
		ConfigMap: map[string]*protobufs.AgentConfigFile{"pprofotel": {Body: []byte(body), ContentType: "application/json"}},
	}}
}

// waitStatus waits for the status of hash, and returns it.
func (s *opampServer) waitStatus(hash string, status protobufs.RemoteConfigStatuses) *protobufs.RemoteConfigStatus {
	s.t.Helper()
	var got *protobufs.RemoteConfigStatus
	waitFor(s.t, fmt.Sprintf("status %v of %q", status, hash), func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, st := range s.statuses {
			if string(st.LastRemoteConfigHash) == hash && st.Status == status {
				got = st
				return true
			}
		}
		return false
	})
	return got
}

// effectiveFile decodes a file of the effective configuration last
// reported.
func (s *opampServer) effectiveFile(name string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.effective.GetConfigMap().GetConfigMap()[name]
	if f == nil {
		return nil
	}
	var doc map[string]any
	if err := json.Unmarshal(f.Body, &doc); err != nil {
		s.t.Fatal(err)
	}
	return doc
}

// waitFor polls cond until it holds.
var waitFor = polltest.Until

// windowExporter keeps, in order, what each window held.
type windowExporter struct {
	mu      sync.Mutex
	windows []exportedWindow
}

type exportedWindow struct {
	profiles   []string
	start, end uint64
}

func (e *windowExporter) Export(_ context.Context, req *collectorpb.ExportProfilesServiceRequest) error {
	var w exportedWindow
	for _, rp := range req.ResourceProfiles {
		for _, sp := range rp.ScopeProfiles {
			for _, kv := range sp.Scope.GetAttributes() {
				if kv.Key == "pprofotel.profile.name" {
					w.profiles = append(w.profiles, kv.Value.GetStringValue())
				}
			}
			if slices.Contains(w.profiles, "heap") && w.end == 0 && len(sp.Profiles) > 0 {
				// The heap profile covers the whole window.
				w.start = sp.Profiles[0].TimeUnixNano
				w.end = w.start + sp.Profiles[0].DurationNano
			}
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.windows = append(e.windows, w)
	return nil
}

func (e *windowExporter) Shutdown(context.Context) error { return nil }

func (e *windowExporter) snapshot() []exportedWindow {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.windows)
}

// TestOpAMPRemoteControl runs the profiler, 1s windows, under opamp-go's
// own server over WebSocket: the agent registers with the profiler's
// resource; a remote configuration turning the off-CPU profile on at 50 %
// for 10s is applied at the next window boundary, reported APPLIED, and
// expires by itself; a window of 1ns (refused by the profiler's option
// validation), an unknown key and an off-CPU duty cycle above the local
// maximum are refused with their reasons and change nothing; the server
// going away and coming back costs no window. Every window is delivered,
// each starting where the previous ended.
func TestOpAMPRemoteControl(t *testing.T) {
	srv := startOpAMPServer(t, "127.0.0.1:0")
	exp := &windowExporter{}
	p, err := profiler.Start(profiler.WithExporter(exp), profiler.WithServiceName("opamp-it"),
		profiler.WithWindow(time.Second), profiler.WithProcessContext(false),
		profiler.WithProfileTypes(profiler.CPUProfile, profiler.HeapProfile, profiler.GoroutineProfile))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := opamp.Start(ctx, p, opamp.WithEndpointURL("ws://"+srv.addr+"/v1/opamp"),
		opamp.WithHeartbeatInterval(time.Second), opamp.WithLogger(slog.New(slog.DiscardHandler)),
		// The window's floor is left to the profiler's validation, so
		// that its refusal reaches the server.
		opamp.WithMinWindow(time.Nanosecond), opamp.WithMaxOffCPUDutyCycle(50))
	if err != nil {
		t.Fatal(err)
	}

	// Registered with its description and settings.
	waitFor(t, "the agent's description and effective configuration", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.description != nil && srv.effective != nil && srv.health != nil
	})
	attrs := map[string]string{}
	for _, kv := range srv.description.IdentifyingAttributes {
		attrs["id:"+kv.Key] = kv.Value.GetStringValue()
	}
	for _, kv := range srv.description.NonIdentifyingAttributes {
		attrs[kv.Key] = kv.Value.GetStringValue()
	}
	if attrs["id:service.name"] != "opamp-it" || attrs["id:service.instance.id"] == "" ||
		attrs["telemetry.sdk.name"] != "pprofotel" || attrs["telemetry.sdk.language"] != "go" || attrs["telemetry.sdk.version"] == "" {
		t.Errorf("agent description %v", attrs)
	}
	if doc := srv.effectiveFile("pprofotel"); doc["window"] != "1s" || doc["offcpu_duty_cycle"] != 10.0 ||
		fmt.Sprint(doc["profiles"]) != "[cpu heap goroutine]" {
		t.Errorf("effective configuration %v", doc)
	}

	// Off-CPU at 50 % for 10s.
	srv.send("incident", `{"profiles":["cpu","heap","goroutine","offcpu"],"offcpu_duty_cycle":50,"expires_in":"10s"}`)
	srv.waitStatus("incident", protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLYING)
	srv.waitStatus("incident", protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED)
	applied := len(exp.snapshot())
	waitFor(t, "the effective configuration with off-CPU", func() bool {
		doc := srv.effectiveFile("pprofotel")
		return doc["offcpu_duty_cycle"] == 50.0 && slices.Contains(doc["profiles"].([]any), any("offcpu"))
	})
	waitFor(t, "a window with the off-CPU profile", func() bool {
		ws := exp.snapshot()
		return len(ws) > applied && slices.Contains(ws[len(ws)-1].profiles, "offcpu")
	})
	// The server goes away for a few windows, and comes back.
	addr := srv.addr
	srv.stop()
	time.Sleep(3 * time.Second)
	srv.start(addr)
	waitFor(t, "the agent reconnected", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.connected >= 2
	})

	// It expires by itself.
	waitFor(t, "the expiry reported", func() bool {
		r := srv.effectiveFile("pprofotel.remote")
		return r["expired"] == true && r["config_hash"] == fmt.Sprintf("%x", "incident")
	})
	if doc := srv.effectiveFile("pprofotel"); doc["offcpu_duty_cycle"] != 10.0 || slices.Contains(doc["profiles"].([]any), any("offcpu")) {
		t.Errorf("effective configuration after the expiry %v", doc)
	}
	expired := len(exp.snapshot())

	// Refused, each with its reason; nothing changes.
	for _, tt := range []struct{ hash, body, reason string }{
		{"tiny-window", `{"window":"1ns"}`, "profiler: WithWindow(1ns): window must be at least 1s"},
		{"unknown-key", `{"offcpu":true}`, `unknown field "offcpu"`},
		{"over-max", `{"profiles":["cpu","heap","goroutine","offcpu"],"offcpu_duty_cycle":80}`,
			"offcpu_duty_cycle 80 is above 50, the local bound (opamp.WithMaxOffCPUDutyCycle)"},
	} {
		srv.send(tt.hash, tt.body)
		st := srv.waitStatus(tt.hash, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED)
		if !strings.Contains(st.ErrorMessage, tt.reason) {
			t.Errorf("%s refused for %q, want %q", tt.hash, st.ErrorMessage, tt.reason)
		}
	}
	waitFor(t, "two more windows", func() bool { return len(exp.snapshot()) >= expired+2 })

	if err := c.Shutdown(ctx); err != nil {
		t.Error(err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	s := p.Stats()
	ws := exp.snapshot()
	if s.WindowsFailed != 0 || s.WindowsDropped != 0 || s.WindowsExported != s.WindowsCollected || int(s.WindowsExported) != len(ws) {
		t.Errorf("stats %+v, %d windows received", s, len(ws))
	}
	// Every window delivered, back to back; the off-CPU profile in a run
	// of consecutive windows from the one after the change was applied
	// until the expiry, and in none after the refusals.
	first, last := -1, -1
	for i, w := range ws {
		if i > 0 && w.start != ws[i-1].end {
			t.Errorf("window %d starts at %d, window %d ended at %d", i, w.start, i-1, ws[i-1].end)
		}
		if slices.Contains(w.profiles, "offcpu") {
			if first < 0 {
				first = i
			} else if last != i-1 {
				t.Errorf("window %d has the off-CPU profile after window %d had none", i, last+1)
			}
			last = i
		}
	}
	if first < 1 || first > applied+1 || last >= expired {
		t.Errorf("off-CPU windows %d to %d; applied after window %d, expired by window %d", first, last, applied, expired)
	}
	// 10s of 1s windows: the change and the return each at a boundary.
	if n := last - first + 1; n < 9 || n > 12 {
		t.Errorf("%d windows with the off-CPU profile, want about 10", n)
	}
}

// TestOpAMPPlainHTTP: the same client over plain HTTP, polling: it
// registers, and a remote configuration is applied and a bad one refused.
func TestOpAMPPlainHTTP(t *testing.T) {
	srv := startOpAMPServer(t, "127.0.0.1:0")
	exp := &windowExporter{}
	p, err := profiler.Start(profiler.WithExporter(exp), profiler.WithServiceName("opamp-http"),
		profiler.WithWindow(time.Second), profiler.WithProcessContext(false),
		profiler.WithProfileTypes(profiler.HeapProfile, profiler.GoroutineProfile))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := opamp.Start(ctx, p, opamp.WithEndpointURL("http://"+srv.addr+"/v1/opamp"),
		opamp.WithHeartbeatInterval(time.Second), opamp.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	srv.send("mutex", `{"profiles":["heap","goroutine","mutex"],"mutex_profile_fraction":5}`)
	srv.waitStatus("mutex", protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED)
	waitFor(t, "a window with the mutex profile", func() bool {
		ws := exp.snapshot()
		return len(ws) > 0 && slices.Contains(ws[len(ws)-1].profiles, "mutex")
	})
	srv.send("long-window", `{"window":"1000h"}`)
	st := srv.waitStatus("long-window", protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED)
	if want := "window 1000h0m0s is above 5m0s, the local bound (opamp.WithMaxWindow)"; !strings.Contains(st.ErrorMessage, want) {
		t.Errorf("refused for %q, want %q", st.ErrorMessage, want)
	}
	srv.send("cpu-hog", `{"cpu_duty_cycle":100}`)
	st = srv.waitStatus("cpu-hog", protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED)
	if want := "cpu_duty_cycle 100 is above 50"; !strings.Contains(st.ErrorMessage, want) {
		t.Errorf("refused for %q, want %q", st.ErrorMessage, want)
	}
	if err := c.Shutdown(ctx); err != nil {
		t.Error(err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if name := srv.description.GetIdentifyingAttributes()[0]; name.Key != "service.name" || name.Value.GetStringValue() != "opamp-http" {
		t.Errorf("description %v", srv.description)
	}
}

// TestOpAMPMutualTLS: over wss, the server verified with the roots of
// WithTLSClientConfig and requiring the client's certificate.
func TestOpAMPMutualTLS(t *testing.T) {
	pki := testcert.New(t)
	srv := startOpAMPServer(t, "127.0.0.1:0", pki.ServerConfig(true))
	t.Setenv("PPROFOTEL_OPAMP_ENDPOINT", "wss://"+srv.addr+"/v1/opamp")
	t.Setenv("PPROFOTEL_OPAMP_HEARTBEAT_INTERVAL", "1s")
	p, err := profiler.Start(profiler.WithExporter(&windowExporter{}), profiler.WithServiceName("opamp-tls"),
		profiler.WithWindow(time.Second), profiler.WithProcessContext(false))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := opamp.Start(ctx, p, opamp.WithLogger(slog.New(slog.DiscardHandler)),
		opamp.WithTLSClientConfig(&tls.Config{RootCAs: pki.Roots, Certificates: []tls.Certificate{pki.Client}}))
	if err != nil {
		t.Fatal(err)
	}
	srv.send("pause", `{"enabled":false}`)
	srv.waitStatus("pause", protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED)
	waitFor(t, "the health paused", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.health.GetStatus() == "paused"
	})
	if err := c.Shutdown(ctx); err != nil {
		t.Error(err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestOpAMPHostileServer: what a broken or hostile server sends changes
// nothing it must not. A wss endpoint redirecting to a ws server is not
// followed (the ws server never sees the agent, nor its Authorization
// header), and the client keeps trying its own endpoint. A configuration
// that touches one setting changes that one only, and the local settings
// come back whole at its expiry; a 1,000 h window (allowed here by the
// application's WithMaxWindow) is cut short by its expiry within one local
// window, and the windows go on.
func TestOpAMPHostileServer(t *testing.T) {
	cleartext := startOpAMPServer(t, "127.0.0.1:0")
	cleartext.send("hostile", `{"enabled":false}`)
	var attempts atomic.Int64
	redirecting := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempts.Add(1)
		http.Redirect(w, r, "ws://"+cleartext.addr+"/v1/opamp", http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()
	roots := x509.NewCertPool()
	roots.AddCert(redirecting.Certificate())

	exp := &windowExporter{}
	p, err := profiler.Start(profiler.WithExporter(exp), profiler.WithServiceName("opamp-hostile"),
		profiler.WithWindow(time.Second), profiler.WithProcessContext(false),
		profiler.WithProfileTypes(profiler.HeapProfile, profiler.GoroutineProfile))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	quiet := opamp.WithLogger(slog.New(slog.DiscardHandler))
	c, err := opamp.Start(ctx, p, opamp.WithEndpointURL("wss"+strings.TrimPrefix(redirecting.URL, "https")+"/v1/opamp"),
		opamp.WithHeaders(map[string]string{"Authorization": "Bearer secret"}),
		opamp.WithTLSClientConfig(&tls.Config{RootCAs: roots}), opamp.WithHeartbeatInterval(time.Second), quiet)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a second attempt at the endpoint", func() bool { return attempts.Load() >= 2 })
	cleartext.mu.Lock()
	connected := cleartext.connected
	cleartext.mu.Unlock()
	if connected != 0 {
		t.Errorf("the cleartext server saw %d connections", connected)
	}
	if err := c.Shutdown(ctx); err != nil {
		t.Error(err)
	}

	srv := startOpAMPServer(t, "127.0.0.1:0")
	c, err = opamp.Start(ctx, p, opamp.WithEndpointURL("ws://"+srv.addr+"/v1/opamp"),
		opamp.WithHeartbeatInterval(time.Second), quiet, opamp.WithMinWindow(time.Second), opamp.WithMaxWindow(2000*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the effective configuration", func() bool { return srv.effectiveFile("pprofotel") != nil })
	local := srv.effectiveFile("pprofotel")

	srv.send("one-setting", `{"cpu_duty_cycle":20,"expires_in":"3s"}`)
	srv.waitStatus("one-setting", protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED)
	waitFor(t, "the effective configuration with the change", func() bool {
		return srv.effectiveFile("pprofotel")["cpu_duty_cycle"] == 20.0
	})
	changed := srv.effectiveFile("pprofotel")
	for k, v := range local {
		if k != "cpu_duty_cycle" && fmt.Sprint(changed[k]) != fmt.Sprint(v) {
			t.Errorf("a change of cpu_duty_cycle changed %s from %v to %v", k, v, changed[k])
		}
	}
	waitFor(t, "the local settings back at the expiry", func() bool {
		return fmt.Sprint(srv.effectiveFile("pprofotel")) == fmt.Sprint(local)
	})

	srv.send("long-window", `{"window":"1000h","expires_in":"2s"}`)
	srv.waitStatus("long-window", protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED)
	waitFor(t, "the 1000h window expired and the local settings back", func() bool {
		r := srv.effectiveFile("pprofotel.remote")
		return r["expired"] == true && r["config_hash"] == fmt.Sprintf("%x", "long-window") &&
			fmt.Sprint(srv.effectiveFile("pprofotel")) == fmt.Sprint(local)
	})
	back := len(exp.snapshot())
	waitFor(t, "two windows of the local length after the expiry", func() bool { return len(exp.snapshot()) >= back+2 })
	if err := c.Shutdown(ctx); err != nil {
		t.Error(err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}
