// Command overhead measures what a continuous profiler costs a Go HTTP
// service: throughput, latency, GC cycles and CPU time per request with no
// profiler, with pprofotel at its defaults and with all five profile types,
// with pyroscope-go and with dd-trace-go's profiler, each in a fresh child
// process (profilers are process-wide), the configurations interleaved
// round after round and every figure also given as a ratio to "no
// profiler" in the same round.
//
// Usage:
//
//	go run . [-rounds 4] [-duration 20s] [-period 10s] [-workers 16] ...
//
// The parent process runs the load generator and a stub that accepts and
// discards every upload; the child runs the service and the profiler, so
// that the child's CPU time is the service's plus the profiler's, export
// included.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

func main() {
	var (
		child    = flag.String("child", "", "internal: run as the child process under test with this configuration")
		stubAddr = flag.String("stub", "", "internal: the stub receiver's host:port, for the child")

		rounds      = flag.Int("rounds", 4, "number of rounds; each runs every configuration once")
		duration    = flag.Duration("duration", 20*time.Second, "measured load per run")
		warmup      = flag.Duration("warmup", 3*time.Second, "unmeasured load before each run")
		period      = flag.Duration("period", 10*time.Second, "profiling period (window / upload rate) of every profiler")
		workers     = flag.Int("workers", 16, "closed-loop load workers")
		maxRequests = flag.Int64("max-requests", 5_000_000, "upper bound on requests per run")
		service     = flag.String("service", "http", "the service under test: http (loopback load) or cpu (two goroutines hashing and allocating, no I/O)")
		liveMB      = flag.Int("live-mb", 0, "size of the service's retained cache, in MB (0: 48 for http, 64 for cpu)")
		hashRounds  = flag.Int("hash-rounds", 120, "512-byte payloads each request (or cpu operation) hashes")
		lockEvery   = flag.Int64("lock-every", 0, "send every Nth request to /lock, one in 20 of which waits 200 ms on a contended mutex (issue 29's slow requests); 0: none")
		baseline    = flag.String("baseline", "", "a build of this harness against another version of the SDK (baseline.sh): configurations named base:NAME run NAME in it")
		configs     = flag.String("configs", "none,floor,pprofotel-continuous,pprofotel-duty,pprofotel,datadog-default,pyroscope", "comma-separated configurations to run, in order")
	)
	flag.Parse()
	if *service != "http" && *service != "cpu" {
		fmt.Fprintf(os.Stderr, "overhead: -service %q: want http or cpu\n", *service)
		os.Exit(2)
	}
	if *liveMB == 0 {
		*liveMB = map[string]int{"http": 48, "cpu": 64}[*service]
	}

	if *child != "" {
		err := runChild(childOptions{setup: *child, service: *service, stubAddr: *stubAddr, period: *period, liveMB: *liveMB, hashRounds: *hashRounds})
		if err != nil {
			fmt.Fprintln(os.Stderr, "overhead child:", err)
			os.Exit(1)
		}
		return
	}

	names := strings.Split(*configs, ",")
	for _, n := range names {
		if strings.HasPrefix(n, basePrefix) && *baseline == "" {
			fmt.Fprintf(os.Stderr, "overhead: -configs: %q needs -baseline\n", n)
			os.Exit(2)
		}
		if _, ok := setupByName(strings.TrimPrefix(n, basePrefix)); !ok {
			fmt.Fprintf(os.Stderr, "overhead: -configs: unknown configuration %q\n", n)
			os.Exit(2)
		}
	}
	p := parent{
		rounds: *rounds, duration: *duration, warmup: *warmup, period: *period,
		workers: *workers, maxRequests: *maxRequests, liveMB: *liveMB, hashRounds: *hashRounds, names: names,
		service: *service, lockEvery: *lockEvery, baseline: *baseline,
	}
	if err := p.run(); err != nil {
		fmt.Fprintln(os.Stderr, "overhead:", err)
		os.Exit(1)
	}
}

type parent struct {
	rounds, workers, liveMB, hashRounds int
	duration, warmup, period            time.Duration
	maxRequests                         int64
	names                               []string
	service                             string
	lockEvery                           int64
	baseline                            string
	stub                                *stub
	keys                                int
	results                             map[string][]runResult
}

// runResult is one configuration's figures in one round.
type runResult struct {
	Round      int
	Throughput float64 // requests per second
	P50, P99   time.Duration
	Errors     int
	GCs        uint32
	PauseNs    uint64
	CPUPerReq  time.Duration // the child's CPU time over requests served
	Uploads    int64
	UploadKB   float64
	LiveMB     float64 // the most heap the GC found live during the run
}

func (p *parent) run() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	p.stub, err = startStub()
	if err != nil {
		return err
	}
	p.keys = p.liveMB << 20 / recordBytes
	p.results = make(map[string][]runResult)
	start := time.Now()
	for round := 1; round <= p.rounds; round++ {
		// Each round starts one configuration later than the last, so
		// that over as many rounds as there are configurations each runs
		// once in every position: a machine that is slower just after a
		// round starts (or before it ends) would otherwise favour whoever
		// runs there every time.
		for i := range p.names {
			name := p.names[(i+round-1)%len(p.names)]
			r, err := p.runOne(exe, name, round)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round, name, err)
			}
			p.results[name] = append(p.results[name], r)
			fmt.Fprintf(os.Stderr, "round %d %-14s %8.0f req/s  p50 %6.2fms  p99 %6.2fms  GC %3d  CPU/req %6.1fµs  uploads %d (%.0f KB)  peak live %.0f MB\n",
				round, name, r.Throughput, ms(r.P50), ms(r.P99), r.GCs, us(r.CPUPerReq), r.Uploads, r.UploadKB, r.LiveMB)
		}
	}
	report(os.Stdout, p, time.Since(start))
	return nil
}

// basePrefix marks a configuration run in the -baseline build.
const basePrefix = "base:"

func (p *parent) runOne(exe, name string, round int) (runResult, error) {
	child := name
	if strings.HasPrefix(name, basePrefix) {
		exe, child = p.baseline, strings.TrimPrefix(name, basePrefix)
	}
	cmd := exec.Command(exe, "-child", child, "-service", p.service, "-stub", p.stub.addr,
		"-period", p.period.String(), "-live-mb", fmt.Sprint(p.liveMB), "-hash-rounds", fmt.Sprint(p.hashRounds))
	cmd.Env = childEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return runResult{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return runResult{}, err
	}
	if err := cmd.Start(); err != nil {
		return runResult{}, err
	}
	waited := make(chan error, 1)
	defer func() {
		stdin.Close()
		select {
		case <-waited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-waited
		}
	}()
	addrCh := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		addrCh <- strings.TrimSpace(strings.TrimPrefix(line, "listening "))
		io.Copy(io.Discard, stdout)
		waited <- cmd.Wait()
	}()
	var addr string
	select {
	case addr = <-addrCh:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		return runResult{}, errors.New("child did not start within 60s")
	}
	if addr == "" {
		return runResult{}, fmt.Errorf("child exited before serving: %s", stderr.String())
	}

	if p.service == "cpu" {
		return p.measureCPUService(addr, round)
	}
	ctx := context.Background()
	seed := uint64(round)
	generateLoad(ctx, addr, p.workers, p.warmup, p.maxRequests, p.keys, seed, p.lockEvery)
	before, err := fetchSnapshot(addr)
	if err != nil {
		return runResult{}, err
	}
	p.stub.reset()
	load := generateLoad(ctx, addr, p.workers, p.duration, p.maxRequests, p.keys, seed+1000, p.lockEvery)
	after, err := fetchSnapshot(addr)
	if err != nil {
		return runResult{}, err
	}
	if load.Requests == 0 {
		return runResult{}, fmt.Errorf("no request succeeded; child stderr: %s", stderr.String())
	}
	r := runResult{
		Round:      round,
		Throughput: float64(load.Requests) / load.Elapsed.Seconds(),
		P50:        percentile(load.Latencies, 0.50),
		P99:        percentile(load.Latencies, 0.99),
		Errors:     load.Errors,
		GCs:        after.NumGC - before.NumGC,
		PauseNs:    after.PauseTotalNs - before.PauseTotalNs,
		CPUPerReq:  time.Duration((after.CPUNanos - before.CPUNanos) / int64(load.Requests)),
		Uploads:    p.stub.uploads.Load(),
		UploadKB:   float64(p.stub.bytes.Load()) / 1024,
		LiveMB:     float64(after.LivePeak) / (1 << 20),
	}
	if r.Errors > 0 {
		fmt.Fprintf(os.Stderr, "round %d %s: %d failed requests\n", round, name, r.Errors)
	}
	return r, nil
}

// measureCPUService measures the CPU-bound service, which needs no load:
// its operations per second and the child's CPU time per operation.
func (p *parent) measureCPUService(addr string, round int) (runResult, error) {
	time.Sleep(p.warmup)
	before, err := fetchSnapshot(addr)
	if err != nil {
		return runResult{}, err
	}
	p.stub.reset()
	start := time.Now()
	time.Sleep(p.duration)
	after, err := fetchSnapshot(addr)
	elapsed := time.Since(start)
	if err != nil {
		return runResult{}, err
	}
	ops := after.Work - before.Work
	if ops <= 0 {
		return runResult{}, errors.New("the CPU-bound service did no work")
	}
	return runResult{
		Round:      round,
		Throughput: float64(ops) / elapsed.Seconds(),
		GCs:        after.NumGC - before.NumGC,
		PauseNs:    after.PauseTotalNs - before.PauseTotalNs,
		CPUPerReq:  time.Duration((after.CPUNanos - before.CPUNanos) / ops),
		Uploads:    p.stub.uploads.Load(),
		UploadKB:   float64(p.stub.bytes.Load()) / 1024,
		LiveMB:     float64(after.LivePeak) / (1 << 20),
	}, nil
}

func fetchSnapshot(addr string) (snapshot, error) {
	resp, err := http.Get("http://" + addr + "/_bench/snapshot")
	if err != nil {
		return snapshot{}, err
	}
	defer resp.Body.Close()
	var s snapshot
	err = json.NewDecoder(resp.Body).Decode(&s)
	return s, err
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// goVersion is quoted in the report so that a reader knows which runtime
// the peers' linkname tricks were built against.
var goVersion = runtime.Version()
