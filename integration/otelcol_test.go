package integration

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// collectorEnv names the environment variable holding the path of the
// Collector binary built by build-collector.sh.
const collectorEnv = "PPROFOTEL_OTELCOL"

// collector is an OpenTelemetry Collector running in a child process on
// loopback. Its OTLP receiver feeds two pipelines: profiles and logs, each
// written as OTLP/JSON lines by a file exporter and summarised by the debug
// exporter in the Collector's own output.
type collector struct {
	// GRPCAddr and HTTPAddr are the host:port of the OTLP receiver.
	GRPCAddr, HTTPAddr string
	// ProfilesFile and LogsFile are where the file exporters write, each
	// message holding what one request carried: one JSON object per line,
	// or for profiles in format proto, length-prefixed protobuf.
	ProfilesFile, LogsFile string

	cmd    *exec.Cmd
	output *syncBuffer
	exited chan struct{}
}

// collectorBinary returns the path of the Collector binary. Under -short
// a missing PPROFOTEL_OTELCOL skips the test; otherwise it fails it, so
// that CI cannot go green without having talked to a Collector.
func collectorBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv(collectorEnv)
	if bin == "" {
		const how = "build it with integration/build-collector.sh and export " + collectorEnv + "=$(integration/build-collector.sh)"
		if testing.Short() {
			t.Skip("!!! SKIPPED: no OpenTelemetry Collector to test against: " + collectorEnv + " is unset; " + how)
		}
		t.Fatal(collectorEnv + " is unset; " + how + " (or pass -short to skip the Collector tests)")
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatalf("%s=%s: %v", collectorEnv, bin, err)
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s=%s is not an executable file", collectorEnv, bin)
	}
	return bin
}

// collectorConfig is the Collector's configuration; the placeholders are
// the gRPC and HTTP ports, the profiles file and its format, and the logs
// file. The Collector's
// own metrics are turned off, so that it opens no port besides the two
// given and several Collectors can run side by side.
const collectorConfig = `receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
      http:
        endpoint: 127.0.0.1:%d

exporters:
  debug:
    verbosity: basic
  file/profiles:
    path: %s
    format: %s
    flush_interval: 100ms
  file/logs:
    path: %s
    format: json
    flush_interval: 100ms

service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [file/profiles, debug]
    logs:
      receivers: [otlp]
      exporters: [file/logs, debug]
`

// startCollector starts a Collector with its configuration and output files
// in a fresh temporary directory, profiles written as OTLP/JSON lines, and
// returns once both receiver ports accept connections. The Collector is
// stopped when the test ends, and its output is logged if the test failed.
func startCollector(t *testing.T) *collector {
	t.Helper()
	return startCollectorWriting(t, "json")
}

// startCollectorWriting is startCollector with the profiles file exporter's
// format: json (OTLP/JSON lines, in profiles.jsonl) or proto (protobuf
// messages, each preceded by its length, in profiles.pb).
func startCollectorWriting(t *testing.T, profilesFormat string) *collector {
	t.Helper()
	bin := collectorBinary(t)
	dir := t.TempDir()
	grpcPort, httpPort := freePort(t), freePort(t)
	c := &collector{
		GRPCAddr:     net.JoinHostPort("127.0.0.1", strconv.Itoa(grpcPort)),
		HTTPAddr:     net.JoinHostPort("127.0.0.1", strconv.Itoa(httpPort)),
		ProfilesFile: filepath.Join(dir, map[string]string{"json": "profiles.jsonl", "proto": "profiles.pb"}[profilesFormat]),
		LogsFile:     filepath.Join(dir, "logs.jsonl"),
		output:       new(syncBuffer),
		exited:       make(chan struct{}),
	}
	config := filepath.Join(dir, "otelcol.yaml")
	// strconv.Quote yields a YAML double-quoted scalar for any path.
	body := fmt.Sprintf(collectorConfig, grpcPort, httpPort, strconv.Quote(c.ProfilesFile), profilesFormat, strconv.Quote(c.LogsFile))
	if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}

	c.cmd = exec.Command(bin, "--config=file:"+config, "--feature-gates=service.profilesSupport")
	startChild(t, "the Collector", c.cmd, c.output, c.exited)
	t.Cleanup(func() { c.stop(t) })

	if err := c.waitReady(30 * time.Second); err != nil {
		t.Fatalf("Collector not ready: %v\nconfig:\n%s\noutput:\n%s", err, body, c.output)
	}
	return c
}

// waitReady polls both receiver ports until they accept a connection.
func (c *collector) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for _, addr := range []string{c.GRPCAddr, c.HTTPAddr} {
		for {
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				conn.Close()
				break
			}
			select {
			case <-c.exited:
				return fmt.Errorf("the Collector exited: %v", c.cmd.ProcessState)
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s still refuses connections after %v: %v", addr, limit, err)
			}
		}
	}
	return nil
}

// stop asks the Collector to shut down, which flushes the file exporters,
// and kills it if it does not.
func (c *collector) stop(t *testing.T) {
	switch running, killed := stopChild(c.cmd, c.exited, 10*time.Second); {
	case !running:
		t.Errorf("the Collector exited before the test ended: %v", c.cmd.ProcessState)
	case killed:
		t.Errorf("the Collector ignored SIGINT for 10s and was killed")
	}
	if t.Failed() {
		t.Logf("Collector output:\n%s", c.output)
	}
}

// startChild starts cmd, its output going to output, and closes exited
// when it has exited.
func startChild(t *testing.T, what string, cmd *exec.Cmd, output io.Writer, exited chan<- struct{}) {
	t.Helper()
	cmd.Stdout, cmd.Stderr = output, output
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s %s: %v", what, cmd.Path, err)
	}
	go func() {
		cmd.Wait()
		close(exited)
	}()
}

// stopChild interrupts a child process, whose exited channel closes when it
// has exited, and kills it if it is still running after grace. It tells
// whether the process was running when asked and whether it was killed.
func stopChild(cmd *exec.Cmd, exited <-chan struct{}, grace time.Duration) (running, killed bool) {
	select {
	case <-exited:
		return false, false
	default:
	}
	cmd.Process.Signal(os.Interrupt)
	select {
	case <-exited:
		return true, false
	case <-time.After(grace):
		cmd.Process.Kill()
		<-exited
		return true, true
	}
}

// freePort returns a loopback TCP port that was free a moment ago. Another
// process may take it before the Collector binds it; the Collector then
// fails to start and says so.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// syncBuffer collects the output of a child process while tests read it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
