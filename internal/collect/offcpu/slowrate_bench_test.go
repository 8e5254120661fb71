package offcpu

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"runtime/trace"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
	xtrace "golang.org/x/exp/trace"

	"github.com/pprofotel/profiler/internal/testutil/cputest"
	"github.com/pprofotel/profiler/labels"
)

// BenchmarkSlowRates serves HTTP on loopback under a recorder at the
// default settings: fastRate requests a second to /fast, of fastCPU
// each, and slow ones to /lock at each rate (a second), which wait
// 200 ms on a contended mutex in handleLock; every request in a root span
// of a wrapped tracer, the client in the same process. As the request
// tracker does, it reports the requests that run half the threshold
// (Watch) and their end (Ended, with the route). A warm-up window of
// slowRatesWarm (SLOWRATES_WARM, a duration) spends some of the trace
// budget's burst, as a service running for a while has; the next window,
// of slowRatesRun, is measured. It reports
// the share of the slow requests explained (at least 80 % of each one's
// duration linked to its span, off the CPU in handleLock's mutex wait),
// the slow requests, the process's CPU a second (getrusage), the trace
// read a second and the requests served a second. Its cost is measured
// by perf(1) on the running benchmark (benchmark/README.md, "Slow
// requests at production rates").
func BenchmarkSlowRates(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	tracer := labels.WrapTracerProvider(tp).Tracer("bench")
	for _, rate := range []int{1, 2, 10, 30} {
		b.Run(fmt.Sprintf("slow=%d", rate), func(b *testing.B) {
			for b.Loop() {
				svc := startRateService(b, tracer)
				warm := slowRatesWarm
				if d, err := time.ParseDuration(os.Getenv("SLOWRATES_WARM")); err == nil {
					// Long enough to spend the burst: a service that
					// has run a while.
					warm = d
				}
				svc.load(warm, rate)
				if _, err := svc.r.Collect(time.Now(), false); err != nil {
					b.Fatal(err)
				}
				svc.mu.Lock()
				svc.slow = svc.slow[:0]
				svc.mu.Unlock()
				cpu0 := cpuTime()
				read0 := svc.r.readTotal
				start := time.Now()
				served := svc.load(slowRatesRun, rate)
				elapsed := time.Since(start)
				p, err := svc.r.Collect(time.Now(), true)
				if err != nil {
					b.Fatal(err)
				}
				cpu := cpuTime() - cpu0
				svc.close()
				var n int
				var waitedAll time.Duration
				for _, s := range svc.slow {
					waitedAll += s.end.Sub(s.start)
					all, matching, _ := explained(svc.r.Slow(), s.ids, "off_cpu", "sync", "handleLock")
					d := s.end.Sub(s.start)
					if (all-d).Abs() <= time.Microsecond && matching >= d*8/10 {
						n++
					} else if os.Getenv("SLOWDEBUG") != "" {
						b.Logf("unexplained %s: duration %v, explained %v, in the wait %v", s.ids[32:], d, all, matching)
					}
				}
				b.ReportMetric(100*float64(n)/float64(len(svc.slow)), "explained-%")
				b.ReportMetric(float64(len(svc.slow)), "slow")
				// The off-CPU profile's estimate of the slow requests'
				// wait, scaled from the duty cycle, against their time.
				b.ReportMetric(float64(waited(p, "handleLock")["sync"])/float64(waitedAll), "offcpu-slow/waited")
				b.ReportMetric(float64(served)/elapsed.Seconds(), "req/s")
				b.ReportMetric(float64(cpu.Milliseconds())/elapsed.Seconds(), "cpu-ms/s")
				b.ReportMetric(float64(svc.r.readTotal-read0)/elapsed.Seconds()/1024, "trace-KiB/s")
			}
		})
	}
}

// The load of BenchmarkSlowRates besides its slow requests, and how long
// it runs before and during the measured window.
const (
	fastRate      = 200
	fastCPU       = 200 * time.Microsecond
	slowRatesWarm = 15 * time.Second
	slowRatesRun  = 20 * time.Second
)

// rateService is BenchmarkSlowRates' service: its recorder, server and
// client, and the slow requests it served.
type rateService struct {
	r      *Recorder
	stats  Stats
	srv    *http.Server
	base   string
	client *http.Client
	mu     sync.Mutex
	slow   []served
	// noWatch reports no request to the recorder: what the off-CPU
	// profile costs without the slow-request capture
	// (SLOWRATES_NOWATCH=1, for perf).
	noWatch bool
	// fastRate is the /fast requests a second, fastRate unless
	// SLOWRATES_FAST says otherwise (a larger service).
	fastRate int
}

func startRateService(b *testing.B, tracer oteltrace.Tracer) *rateService {
	s := &rateService{client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}, noWatch: os.Getenv("SLOWRATES_NOWATCH") != "", fastRate: fastRate}
	if n, err := strconv.Atoi(os.Getenv("SLOWRATES_FAST")); err == nil && n > 0 {
		s.fastRate = n
	}
	s.r = Start(time.Now(), Config{Stats: &s.stats})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s.base = "http://" + ln.Addr().String()
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s.handle(tracer, w, req)
	})}
	go s.srv.Serve(ln)
	return s
}

// handle serves one request in a root span, reporting it as the request
// tracker would.
func (s *rateService) handle(tracer oteltrace.Tracer, w http.ResponseWriter, req *http.Request) {
	start := time.Now()
	_, span := tracer.Start(req.Context(), "GET")
	sc := span.SpanContext()
	ids := sc.TraceID().String() + sc.SpanID().String()
	var watched atomic.Bool
	timer := time.AfterFunc(DefaultSlowThreshold/2, func() {
		if s.noWatch {
			return
		}
		watchWith(s.r, ids, req.URL.Path, start)
		watched.Store(true)
	})
	cputest.Spin(fastCPU)
	if req.URL.Path == "/lock" {
		handleLock(200 * time.Millisecond)
	}
	span.End()
	end := time.Now()
	if !timer.Stop() && !s.noWatch {
		for !watched.Load() {
			time.Sleep(time.Millisecond)
		}
		endedWith(s.r, ids, start, end, req.URL.Path)
	}
	if req.URL.Path == "/lock" {
		s.mu.Lock()
		s.slow = append(s.slow, served{ids: ids, start: start, end: end})
		s.mu.Unlock()
	}
	io.WriteString(w, "ok\n")
}

// load sends s.fastRate requests a second to /fast and slowRate to /lock,
// for d, each in a goroutine of its own, and returns the requests served
// once all were.
func (s *rateService) load(d time.Duration, slowRate int) int {
	var wg sync.WaitGroup
	var n atomic.Int64
	get := func(path string) {
		defer wg.Done()
		resp, err := s.client.Get(s.base + path)
		if err != nil {
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		n.Add(1)
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	// What is due is counted from the time elapsed, so that ticks a
	// loaded machine drops do not lower the rates.
	var fast, slow int
	for start := time.Now(); time.Since(start) < d; {
		<-tick.C
		el := min(time.Since(start), d).Seconds()
		for ; fast < int(el*float64(s.fastRate)); fast++ {
			wg.Add(1)
			go get("/fast")
		}
		for ; slow < int(el*float64(slowRate)); slow++ {
			wg.Add(1)
			go get("/lock")
		}
	}
	wg.Wait()
	return int(n.Load())
}

func (s *rateService) close() {
	s.srv.Close()
	s.client.CloseIdleConnections()
}

// BenchmarkParseSlow reads, again and again, a trace of
// BenchmarkSlowRates' service (two seconds at 30 slow requests a second,
// recorded once in a flight recorder): with x/exp/trace alone, and as the
// recorder reads a trace run for watched requests (no waits kept, a
// request watched). The difference is the recorder's own work per trace
// byte.
func BenchmarkParseSlow(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	svc := startRateService(b, labels.WrapTracerProvider(tp).Tracer("bench"))
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: time.Minute, MaxBytes: 1 << 30})
	start := time.Now()
	if err := fr.Start(); err != nil {
		b.Fatal(err)
	}
	svc.load(2*time.Second, 30)
	var buf bytes.Buffer
	_, err := fr.WriteTo(&buf)
	fr.Stop()
	svc.close()
	svc.r.Collect(time.Now(), true)
	if err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.Run("x-exp-trace", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			r, err := xtrace.NewReader(bytes.NewReader(data))
			if err != nil {
				b.Fatal(err)
			}
			for {
				if _, err := r.ReadEvent(); err == io.EOF {
					break
				} else if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("reading", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		w := newWindow(math.MaxInt, SampleType)
		cfg := Config{Stats: new(Stats), MaxWatched: DefaultMaxWatched, MaxSlow: DefaultMaxSlow, SlowThreshold: DefaultSlowThreshold}
		for b.Loop() {
			w.reset()
			rd := w.newReading(start)
			rd.slow = newSlowState(&cfg)
			rd.slow.apply(watchEvent{ids: fmt.Sprintf("%048x", 1), start: start})
			rd.noWaits = true
			if err := rd.read(bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
			rd.finish()
		}
	})
}
