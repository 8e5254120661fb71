// Command opamp-server is a small OpAMP server to try the profiler's remote
// control offline: it accepts agents over WebSocket and plain HTTP, prints
// what each reports (its description, effective configuration, health and
// the status of its remote configuration), and offers every agent the
// remote configuration last read from its standard input, one JSON object
// per line (an empty line: the local configuration).
//
//	go run ./opamp/cmd/opamp-server -addr localhost:4320
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

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server"
	"github.com/open-telemetry/opamp-go/server/types"
)

func main() {
	addr := flag.String("addr", "localhost:4320", "address to listen on; the path is /v1/opamp")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *addr, os.Stdin, os.Stdout, func(string) {}); err != nil {
		log.Fatal(err)
	}
}

// offers is the remote configuration offered, and the agents it is pushed
// to over WebSocket.
type offers struct {
	mu    sync.Mutex
	offer *protobufs.AgentRemoteConfig
	conns map[types.Connection]bool
	out   io.Writer
}

// run serves until ctx is done, offering each line read from in, and
// prints what agents report to out. listening is called with the address.
func run(ctx context.Context, addr string, in io.Reader, out io.Writer, listening func(string)) error {
	o := &offers{conns: map[types.Connection]bool{}, out: out}
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
			return nil
		case line, ok := <-lines:
			if !ok {
				<-ctx.Done()
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
			fmt.Fprintf(o.out, "%s: %s=%s\n", agent, kv.Key, kv.Value.GetStringValue())
		}
	}
	for name, f := range msg.EffectiveConfig.GetConfigMap().GetConfigMap() {
		fmt.Fprintf(o.out, "%s: effective %s %s\n", agent, name, f.Body)
	}
	if h := msg.Health; h != nil {
		exporter, _ := json.Marshal(h.ComponentHealthMap["exporter"].GetStatus())
		fmt.Fprintf(o.out, "%s: health %s healthy=%v exporter %s\n", agent, h.Status, h.Healthy, exporter)
	}
	st := msg.RemoteConfigStatus
	if st != nil {
		fmt.Fprintf(o.out, "%s: remote configuration %x %s %s\n", agent, st.LastRemoteConfigHash,
			strings.TrimPrefix(st.Status.String(), "RemoteConfigStatuses_"), st.ErrorMessage)
	}
	resp := &protobufs.ServerToAgent{InstanceUid: msg.InstanceUid}
	if o.offer != nil && string(st.GetLastRemoteConfigHash()) != string(o.offer.ConfigHash) {
		resp.RemoteConfig = o.offer
	}
	return resp
}
