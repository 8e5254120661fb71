package integration

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/encoding/gzip" // the profiler may compress gRPC requests
	"google.golang.org/protobuf/proto"
)

// pyroscopeEnv names the Grafana Pyroscope v2.2.1 server binary the
// Pyroscope tests run against; integration/pyroscope.sh prints its path.
const pyroscopeEnv = "PPROFOTEL_PYROSCOPE"

// pyroscope is a Pyroscope server running in a child process, every
// listener on loopback, storage in a temporary directory.
type pyroscope struct {
	// URL is the base URL of its HTTP port, which takes OTLP over HTTP and
	// gRPC (h2c) and answers queries.
	URL string

	cmd    *exec.Cmd
	output *syncBuffer
	exited chan struct{}
}

// startPyroscope starts the server named by PPROFOTEL_PYROSCOPE, with the
// flags of the single-process setup (one process, -architecture.storage=v2,
// whose queries see what was ingested at once), and returns when /ready
// answers 200. It fails the test without the binary: CI must not go green
// without having talked to Pyroscope.
func startPyroscope(t *testing.T) *pyroscope {
	t.Helper()
	bin := os.Getenv(pyroscopeEnv)
	if bin == "" {
		t.Fatal(pyroscopeEnv + " is unset; export " + pyroscopeEnv + "=$(integration/pyroscope.sh), which unpacks Pyroscope v2.2.1 (or builds none: see the script for how to build it)")
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s=%s is not an executable file (%v)", pyroscopeEnv, bin, err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	ports := freePorts(t, 4)
	httpPort, grpcPort, raftPort, memberPort := ports[0], ports[1], ports[2], ports[3]
	grpcAddr := "127.0.0.1:" + strconv.Itoa(grpcPort)
	raftAddr := "127.0.0.1:" + strconv.Itoa(raftPort)
	args := []string{
		"-target=all", "-architecture.storage=v2",
		"-server.http-listen-address=127.0.0.1", "-server.http-listen-port=" + strconv.Itoa(httpPort),
		"-server.grpc-listen-address=127.0.0.1", "-server.grpc-listen-port=" + strconv.Itoa(grpcPort),
		"-metastore.address=" + grpcAddr, "-query-backend.address=" + grpcAddr,
		"-metastore.raft.bind-address=" + raftAddr, "-metastore.raft.advertise-address=" + raftAddr, "-metastore.raft.server-id=" + raftAddr,
		"-metastore.raft.dir=" + filepath.Join(dir, "v2/metastore/raft"), "-metastore.data-dir=" + filepath.Join(dir, "v2/metastore/data"),
		"-memberlist.bind-addr=127.0.0.1", "-memberlist.bind-port=" + strconv.Itoa(memberPort),
		"-memberlist.advertise-addr=127.0.0.1", "-memberlist.advertise-port=" + strconv.Itoa(memberPort),
		"-distributor.ring.instance-addr=127.0.0.1", "-segment-writer.lifecycler.addr=127.0.0.1",
		"-query-frontend.instance-addr=127.0.0.1", "-query-scheduler.ring.instance-addr=127.0.0.1",
		"-overrides-exporter.ring.instance-addr=127.0.0.1",
		"-storage.backend=filesystem", "-storage.filesystem.dir=" + filepath.Join(dir, "v2/shared"),
		"-compaction-worker.temp-dir=" + filepath.Join(dir, "tmp"),
		"-self-profiling.disable-push=true", "-usage-stats.enabled=false",
		"-embedded-grafana.data-path=" + filepath.Join(dir, "grafana"),
		// Ready in about 2 s instead of about 47 s.
		"-metastore.min-ready-duration=0s", "-segment-writer.min-ready-duration=0s",
	}
	p := &pyroscope{
		URL:    "http://127.0.0.1:" + strconv.Itoa(httpPort),
		output: new(syncBuffer),
		exited: make(chan struct{}),
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	startChild(t, "Pyroscope", p.cmd, p.output, p.exited)
	t.Cleanup(func() { p.stop(t) })

	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get(p.URL + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-p.exited:
			t.Fatalf("Pyroscope exited before it was ready: %v\n%s", p.cmd.ProcessState, p.output)
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("Pyroscope not ready after 90s\n%s", p.output)
		}
	}
}

// stop interrupts the server and kills it if it has not exited in 30 s.
func (p *pyroscope) stop(t *testing.T) {
	if running, _ := stopChild(p.cmd, p.exited, 30*time.Second); !running {
		t.Errorf("Pyroscope exited before the test ended: %v", p.cmd.ProcessState)
	}
	if t.Failed() {
		out := p.output.String()
		// A crash's cause comes first, before the goroutines it dumps.
		if i := crashAt(out); i >= 0 && len(out)-i > 8<<10 {
			t.Logf("Pyroscope crashed (8 KiB from the crash):\n%s", out[i:i+8<<10])
		}
		t.Logf("Pyroscope output (last 8 KiB):\n%s", tail(out, 8<<10))
	}
}

// crashAt returns where a Go program's output reports its crash (a
// panic or a fatal error), -1 if it does not.
func crashAt(out string) int {
	for _, mark := range []string{"\npanic: ", "\nfatal error: "} {
		if i := strings.Index(out, mark); i >= 0 {
			return i + 1
		}
	}
	return -1
}

// freePorts returns n distinct loopback TCP ports that were free a moment
// ago: all are held open until all are chosen.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// query posts req as JSON to a method of Pyroscope's QuerierService
// (Connect protocol) and decodes the answer into resp.
func (p *pyroscope) query(t *testing.T, method string, req, resp any) {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	r, err := http.NewRequest(http.MethodPost, p.URL+"/querier.v1.QuerierService/"+method, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	// Dotted label names (service.name) are listed only when asked for.
	r.Header.Set("Accept", "application/json; allow-utf8-labelnames=true")
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s: %s", method, body, res.Status, out)
	}
	if err := json.Unmarshal(out, resp); err != nil {
		t.Fatalf("%s: decoding %s: %v", method, out, err)
	}
}

// exchange is one request the proxy forwarded and what Pyroscope answered:
// rejection is empty when it accepted the request.
type exchange struct {
	req       *collectorpb.ExportProfilesServiceRequest
	rejection string
}

// recordingProxy stands between the profiler and Pyroscope or a Collector,
// on both OTLP transports, and records each request and the answer: what was
// sent is what the proxy saw, whatever the exporter did to it.
type recordingProxy struct {
	collectorpb.UnimplementedProfilesServiceServer
	HTTPAddr, GRPCAddr string

	target string
	client collectorpb.ProfilesServiceClient

	mu        sync.Mutex
	exchanges []exchange
}

// startRecordingProxy starts a proxy that forwards OTLP over gRPC to
// grpcAddr (host:port) and OTLP over HTTP to httpURL (a base URL).
func startRecordingProxy(t *testing.T, grpcAddr, httpURL string) *recordingProxy {
	t.Helper()
	p := &recordingProxy{target: httpURL}
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	p.client = collectorpb.NewProfilesServiceClient(conn)

	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(64 << 20))
	collectorpb.RegisterProfilesServiceServer(gs, p)
	go gs.Serve(gl)
	t.Cleanup(gs.Stop)
	p.GRPCAddr = gl.Addr().String()

	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(p.serveHTTP)}
	go hs.Serve(hl)
	t.Cleanup(func() { hs.Close() })
	p.HTTPAddr = hl.Addr().String()
	return p
}

func (p *recordingProxy) record(req *collectorpb.ExportProfilesServiceRequest, rejection string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.exchanges = append(p.exchanges, exchange{req, rejection})
}

// recorded returns the exchanges so far.
func (p *recordingProxy) recorded() []exchange {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]exchange(nil), p.exchanges...)
}

// Export forwards a gRPC request and returns Pyroscope's answer, status
// included.
func (p *recordingProxy) Export(ctx context.Context, req *collectorpb.ExportProfilesServiceRequest) (*collectorpb.ExportProfilesServiceResponse, error) {
	resp, err := p.client.Export(ctx, req)
	rejection := ""
	if err != nil {
		rejection = err.Error()
	}
	p.record(req, rejection)
	return resp, err
}

// serveHTTP forwards an OTLP/HTTP request as it came and returns
// Pyroscope's answer as it came.
func (p *recordingProxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	raw := body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err == nil {
			raw, err = io.ReadAll(zr)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	req := new(collectorpb.ExportProfilesServiceRequest)
	if err := proto.Unmarshal(raw, req); err != nil {
		http.Error(w, fmt.Sprintf("the proxy reads OTLP/protobuf only: %v", err), http.StatusBadRequest)
		return
	}
	fwd, err := http.NewRequestWithContext(r.Context(), http.MethodPost, p.target+r.URL.Path, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	for _, h := range []string{"Content-Type", "Content-Encoding"} {
		if v := r.Header.Get(h); v != "" {
			fwd.Header.Set(h, v)
		}
	}
	resp, err := http.DefaultClient.Do(fwd)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	rejection := ""
	if resp.StatusCode != http.StatusOK {
		rejection = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, out)
	}
	p.record(req, rejection)
	for _, h := range []string{"Content-Type", "Retry-After"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(out)
}
