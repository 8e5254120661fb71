package opamp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"
	"google.golang.org/protobuf/proto"

	"github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/internal/control"
)

// The steps of a script FuzzAgentAgainstServer plays, one byte each,
// followed by what the step reads.
const (
	stepConfig     = iota // a remote configuration: hash byte, name byte, body
	stepMessage           // a ServerToAgent message in protobuf: body
	stepResend            // the last configuration again
	stepAdvance           // time passes: one byte, in minutes
	stepBoundary          // the profiler ends a window
	stepRedirect          // a redirect: body, the location
	stepDisconnect        // the connection fails and comes back
	stepStop              // the profiler stops
	numSteps
)

// recordingTarget is a fakeTarget that keeps every settings applied.
type recordingTarget struct {
	*fakeTarget
	mu      sync.Mutex
	applied []control.Settings
}

func (r *recordingTarget) Apply(s control.Settings) (control.Settings, <-chan struct{}, error) {
	r.mu.Lock()
	r.applied = append(r.applied, s)
	r.mu.Unlock()
	return r.fakeTarget.Apply(s)
}

// quietOpAMP records nothing and never blocks.
type quietOpAMP struct{ fakeOpAMP }

func (*quietOpAMP) SetRemoteConfigStatus(*protobufs.RemoteConfigStatus) error { return nil }
func (*quietOpAMP) UpdateEffectiveConfig(context.Context) error               { return nil }
func (*quietOpAMP) SetHealth(*protobufs.ComponentHealth) error                { return nil }

// FuzzAgentAgainstServer plays an OpAMP server against the client, through
// the callbacks opamp-go calls (messages, redirects, lost connections)
// while the profiler ends windows and time passes, in a synctest bubble.
// Whatever the script, the client never panics or hangs (every step and
// Shutdown return), applies nothing beyond the local bounds but the local
// settings, and follows no redirect away from its endpoint's scheme and
// host.
func FuzzAgentAgainstServer(f *testing.F) {
	config := func(hash byte, body string) []byte {
		return append([]byte{stepConfig, hash, 0, byte(len(body))}, body...)
	}
	f.Add(append(config(1, `{"cpu_duty_cycle":20,"expires_in":"3s"}`), stepBoundary, stepAdvance, 1, stepBoundary))
	f.Add(append(config(2, `{"window":"1000h","expires_in":"2s"}`), stepBoundary, stepStop))
	f.Add(append(config(3, `{"profiles":["CPU","block"]}`), stepBoundary, stepResend, stepDisconnect, stepResend))
	f.Add(append([]byte{stepRedirect, 20}, "ws://127.0.0.1:1/x?y"...))
	f.Add(append([]byte{stepRedirect, 25}, "wss://user:pw@server:443/"...))
	f.Add(append(config(4, `{"enabled":false}`), stepMessage, 0, stepBoundary, stepAdvance, 200))
	msg, err := proto.Marshal(&protobufs.ServerToAgent{RemoteConfig: remoteConfig("m", `{"offcpu_duty_cycle":99}`)})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(append([]byte{stepMessage, byte(len(msg))}, msg...))
	f.Fuzz(func(t *testing.T, script []byte) {
		synctest.Test(t, func(t *testing.T) { playServer(t, script) })
	})
}

func playServer(t *testing.T, script []byte) {
	endpoint, _ := url.Parse("wss://server:443/v1/opamp")
	cfg, err := newConfig([]Option{WithLogger(slog.New(slog.DiscardHandler))}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.endpoint = endpoint
	target := &recordingTarget{fakeTarget: newFakeTarget()}
	c := newClient(cfg, target, func() profiler.Stats { return profiler.Stats{} })
	c.opamp = &quietOpAMP{}
	cb := c.callbacks()
	go c.run()
	ctx := context.Background()
	next := func(n int) []byte {
		n = min(n, len(script))
		b := script[:n]
		script = script[n:]
		return b
	}
	body := func() []byte {
		n := next(1)
		if len(n) == 0 {
			return nil
		}
		return next(int(n[0]))
	}
	var last *protobufs.AgentRemoteConfig
	stopped := false
	for len(script) > 0 && !stopped {
		switch next(1)[0] % numSteps {
		case stepConfig:
			h, name := next(1), next(1)
			names := []string{ConfigName, "", "other"}
			file := names[0]
			if len(name) > 0 {
				file = names[int(name[0])%len(names)]
			}
			last = &protobufs.AgentRemoteConfig{ConfigHash: h, Config: configMap(map[string]string{file: string(body())})}
			cb.OnMessage(ctx, &types.MessageData{RemoteConfig: last})
		case stepMessage:
			var m protobufs.ServerToAgent
			if proto.Unmarshal(body(), &m) == nil {
				cb.OnMessage(ctx, &types.MessageData{RemoteConfig: m.RemoteConfig})
			}
		case stepResend:
			if last != nil {
				cb.OnMessage(ctx, &types.MessageData{RemoteConfig: last})
			}
		case stepAdvance:
			if b := next(1); len(b) > 0 {
				time.Sleep(time.Duration(b[0]) * time.Minute)
			}
		case stepBoundary:
			target.boundary()
		case stepRedirect:
			checkRedirect(t, c, endpoint, string(body()))
		case stepDisconnect:
			cb.OnConnectFailed(ctx, errors.New("connection closed"))
			cb.OnConnect(ctx)
		case stepStop:
			close(target.done)
			stopped = true
		}
		synctest.Wait()
	}
	if err := c.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	target.mu.Lock()
	defer target.mu.Unlock()
	for _, s := range target.applied {
		if !sameSettings(s, testLocal) {
			checkWithinBounds(t, s, defaultBounds)
		}
	}
}

// checkRedirect checks that a redirect to location is followed only to the
// endpoint's scheme and host.
func checkRedirect(t *testing.T, c *Client, endpoint *url.URL, location string) {
	to, err := url.Parse(location)
	if err != nil {
		return
	}
	req := &http.Request{URL: to}
	if c.checkRedirect(req, nil, nil) != nil {
		return
	}
	if (to.Scheme != "wss" && to.Scheme != "https") || to.User != nil ||
		to.Hostname() != endpoint.Hostname() || (to.Port() != "" && to.Port() != endpoint.Port()) {
		t.Fatalf("redirect from %s to %q followed", endpoint, location)
	}
}

// checkWithinBounds fails t when s, applied for a remote configuration, is
// beyond the bounds b.
func checkWithinBounds(t *testing.T, s control.Settings, b bounds) {
	t.Helper()
	if s.CPUDuty < 1 || s.CPUDuty > b.maxCPUDuty || s.OffCPUDuty < 1 || s.OffCPUDuty > b.maxOffCPUDuty ||
		s.Window < b.minWindow || s.Window > b.maxWindow ||
		s.MutexFraction < b.minMutexFraction || s.MutexFraction > maxMutexFraction ||
		s.BlockRate < b.minBlockRate || s.BlockRate > maxBlockRate ||
		s.MaxGoroutines < 1 || s.MaxGoroutines > b.maxGoroutines ||
		s.LeakInterval < b.minLeakInterval || s.LeakInterval > maxLeakInterval {
		t.Fatalf("applied settings beyond the bounds: %+v", s)
	}
}
