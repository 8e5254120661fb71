// Command opamp-server is a small OpAMP server to try the profiler's remote
// control offline: it accepts agents over WebSocket and plain HTTP, prints
// what each reports (its description, effective configuration, health and
// the status of its remote configuration), and offers every agent the
// remote configuration last read from its standard input, one JSON object
// per line (an empty line: the local configuration).
//
//	go run ./opamp/cmd/opamp-server -addr localhost:4320
//
// With -agent DIR it also runs, in the same process, a profiler whose
// windows go to files in DIR and its OpAMP client connected to the
// server: remote control end to end, in one command.
//
// It is a tool for trying things, with no TLS and no authentication; see
// docs/remote-control.md.
package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server"
	"github.com/open-telemetry/opamp-go/server/types"

	"github.com/pprofotel/profiler"
	"github.com/pprofotel/profiler/exporters/otlpprofilefile"
	"github.com/pprofotel/profiler/opamp"
)

func main() {
	addr := flag.String("addr", "localhost:4320", "address to listen on; the path is /v1/opamp")
	agentDir := flag.String("agent", "", "also run a profiler as an agent, its windows written to this directory")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	listening := func(string) {}
	var stopAgent func()
	if *agentDir != "" {
		listening = func(a string) {
			var err error
			if stopAgent, err = startAgent(ctx, a, *agentDir); err != nil {
				log.Fatal(err)
			}
		}
	}
	stopping := func() {
		if stopAgent != nil {
			stopAgent() // while the server still listens, to see the agent stop
		}
	}
	if err := run(ctx, *addr, os.Stdin, os.Stdout, listening, stopping); err != nil {
		log.Fatal(err)
	}
}

// startAgent starts a profiler of 10s windows, written to dir, and its
// OpAMP client connected to addr. The function returned stops both.
func startAgent(ctx context.Context, addr, dir string) (stop func(), err error) {
	exp, err := otlpprofilefile.New(ctx, otlpprofilefile.WithDir(dir))
	if err != nil {
		return nil, err
	}
	p, err := profiler.Start(profiler.WithExporter(exp), profiler.WithServiceName("opamp-server-agent"),
		profiler.WithWindow(10*time.Second))
	if err != nil {
		return nil, err
	}
	c, err := opamp.Start(ctx, p, opamp.WithEndpointURL("ws://"+addr+"/v1/opamp"), opamp.WithHeartbeatInterval(time.Second))
	if err != nil {
		p.Stop(context.Background())
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.Stop(ctx) // reported to the server as stopped, healthy
		_ = c.Shutdown(ctx)
	}, nil
}

// offers is the remote configuration offered, and the agents it is pushed
// to over WebSocket.
type offers struct {
	mu    sync.Mutex
	offer *protobufs.AgentRemoteConfig
	conns map[types.Connection]bool
	out   io.Writer
	// printed is the last line printed of each agent and kind, so that
	// only changes are printed.
	printed map[string]string
}

// print prints what an agent reports of a kind, when it changed.
func (o *offers) print(agent, kind, format string, v ...any) {
	line := fmt.Sprintf(format, v...)
	if o.printed[agent+" "+kind] == line {
		return
	}
	o.printed[agent+" "+kind] = line
	fmt.Fprintf(o.out, "%s: %s\n", agent, line)
}

// run serves until ctx is done, offering each line read from in, and
// prints what agents report to out. listening is called with the address,
// stopping once ctx is done, before the server stops.
func run(ctx context.Context, addr string, in io.Reader, out io.Writer, listening func(string), stopping func()) error {
	o := &offers{conns: map[types.Connection]bool{}, out: out, printed: map[string]string{}}
	srv := server.New(nil)
	err := srv.Start(server.StartSettings{
		ListenEndpoint: addr,
		ListenPath:     "/v1/opamp",
		Settings: server.Settings{Callbacks: types.Callbacks{
			OnConnecting: func(*http.Request) types.ConnectionResponse {
				return types.ConnectionResponse{Accept: true, ConnectionCallbacks: types.ConnectionCallbacks{
					OnConnected: func(_ context.Context, c types.Connection) { o.mu.Lock(); o.conns[c] = true; o.mu.Unlock() },
					OnMessage:   o.onMessage,
					OnConnectionClose: func(c types.Connection) {
						o.mu.Lock()
						delete(o.conns, c)
						o.mu.Unlock()
					},
				}}
			},
		}},
	})
	if err != nil {
		return err
	}
	defer srv.Stop(context.Background())
	fmt.Fprintf(out, "listening on ws://%[1]s/v1/opamp and http://%[1]s/v1/opamp\n", srv.Addr())
	listening(srv.Addr().String())
	lines := make(chan string)
	go func() {
		defer close(lines)
		scan := bufio.NewScanner(in)
		for scan.Scan() {
			lines <- strings.TrimSpace(scan.Text())
		}
	}()
	for {
		select {
		case <-ctx.Done():
			stopping()
			return nil
		case line, ok := <-lines:
			if !ok {
				<-ctx.Done()
				stopping()
				return nil
			}
			o.set(ctx, line)
		}
	}
}

// set makes body the configuration offered, and pushes it to the agents
// connected over WebSocket.
func (o *offers) set(ctx context.Context, body string) {
	hash := sha256.Sum256([]byte(body))
	rc := &protobufs.AgentRemoteConfig{ConfigHash: hash[:8], Config: &protobufs.AgentConfigMap{
		ConfigMap: map[string]*protobufs.AgentConfigFile{"pprofotel": {Body: []byte(body), ContentType: "application/json"}},
	}}
	o.mu.Lock()
	o.offer = rc
	conns := make([]types.Connection, 0, len(o.conns))
	for c := range o.conns {
		conns = append(conns, c)
	}
	o.mu.Unlock()
	fmt.Fprintf(o.out, "offering %x: %s\n", rc.ConfigHash, body)
	for _, c := range conns {
		_ = c.Send(ctx, &protobufs.ServerToAgent{RemoteConfig: rc}) // plain HTTP agents get it when they poll
	}
}

func (o *offers) onMessage(_ context.Context, _ types.Connection, msg *protobufs.AgentToServer) *protobufs.ServerToAgent {
	o.mu.Lock()
	defer o.mu.Unlock()
	agent := fmt.Sprintf("agent %x", msg.InstanceUid)
	if d := msg.AgentDescription; d != nil {
		for _, kv := range d.IdentifyingAttributes {
			o.print(agent, kv.Key, "%s=%s", kv.Key, kv.Value.GetStringValue())
		}
	}
	for name, f := range msg.EffectiveConfig.GetConfigMap().GetConfigMap() {
		o.print(agent, "effective "+name, "effective %s %s", name, f.Body)
	}
	if h := msg.Health; h != nil {
		exporter, _ := json.Marshal(h.ComponentHealthMap["exporter"].GetStatus())
		o.print(agent, "health", "health %s healthy=%v exporter %s", h.Status, h.Healthy, exporter)
	}
	st := msg.RemoteConfigStatus
	if st != nil && len(st.LastRemoteConfigHash) > 0 {
		o.print(agent, "status", "remote configuration %x %s %s", st.LastRemoteConfigHash,
			strings.TrimPrefix(st.Status.String(), "RemoteConfigStatuses_"), st.ErrorMessage)
	}
	resp := &protobufs.ServerToAgent{InstanceUid: msg.InstanceUid}
	if o.offer != nil && string(st.GetLastRemoteConfigHash()) != string(o.offer.ConfigHash) {
		resp.RemoteConfig = o.offer
	}
	return resp
}
