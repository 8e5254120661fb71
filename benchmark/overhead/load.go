package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pprofotel/profiler/integration/testservice"
)

// stub receives what the profilers upload, reads every byte of it and
// discards it: OTLP over HTTP for pprofotel, /ingest for pyroscope-go,
// /profiling/v1/input for dd-trace-go, and an empty JSON answer for
// anything else (dd-trace-go asks the agent's /info). It counts the
// uploads so that a run in which a profiler sent nothing is visible.
type stub struct {
	uploads atomic.Int64
	bytes   atomic.Int64
	srv     *http.Server
	addr    string
}

func startStub() (*stub, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &stub{addr: ln.Addr().String()}
	mux := http.NewServeMux()
	upload := func(contentType string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			n, _ := io.Copy(io.Discard, r.Body)
			s.uploads.Add(1)
			s.bytes.Add(n)
			w.Header().Set("Content-Type", contentType)
			w.WriteHeader(http.StatusOK)
		}
	}
	// An empty body is an empty ExportProfilesServiceResponse: full success.
	mux.HandleFunc("/v1development/profiles", upload("application/x-protobuf"))
	mux.HandleFunc("/ingest", upload("text/plain"))
	mux.HandleFunc("/profiling/v1/input", upload("text/plain"))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "{}")
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

func (s *stub) reset() {
	s.uploads.Store(0)
	s.bytes.Store(0)
}

// loadResult is what one bounded load run measured from the client side.
type loadResult struct {
	Requests  int
	Errors    int
	Elapsed   time.Duration
	Latencies []time.Duration // sorted
}

// generateLoad runs a closed loop of workers against addr for at most d
// and at most maxRequests requests in all. Each worker sends its next
// request as soon as the previous answer has been read, over a kept-alive
// connection, so throughput measures how much the service can do and the
// latencies include any queueing the profiler causes.
//
// With lockEvery above 0, every lockEvery-th request goes to /lock, of which
// one in testservice.LockEvery waits on a contended mutex (traced.go).
func generateLoad(ctx context.Context, addr string, workers int, d time.Duration, maxRequests int64, keys int, seed uint64, lockEvery int64) loadResult {
	tr := &http.Transport{
		MaxIdleConnsPerHost: workers,
		MaxConnsPerHost:     workers,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var seq atomic.Int64
	var errs atomic.Int64
	lat := make([][]time.Duration, workers)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			mine := make([]time.Duration, 0, 1<<14)
			buf := make([]byte, 4096)
			for ctx.Err() == nil {
				n := seq.Add(1)
				if n > maxRequests {
					break
				}
				url := fmt.Sprintf("http://%s/work?k=%d&n=%d", addr, rng.IntN(keys), n)
				if lockEvery > 0 && n%lockEvery == 0 {
					url = "http://" + addr + testservice.RouteLock
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				t0 := time.Now()
				resp, err := client.Do(req)
				if err == nil {
					_, err = io.CopyBuffer(io.Discard, resp.Body, buf)
					resp.Body.Close()
					if err == nil && resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %s", resp.Status)
					}
				}
				if err != nil {
					// A request cut by the end of the run is not an error of
					// the service.
					if !errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
						errs.Add(1)
					}
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			lat[w] = mine
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lat...)
	slices.Sort(all)
	return loadResult{Requests: len(all), Errors: int(errs.Load()), Elapsed: elapsed, Latencies: all}
}
