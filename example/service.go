package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// The service's routes, each doing one kind of work, and the share of the
// load each gets.
var routes = []struct {
	pattern, path string
	weight        int
}{
	{"/hash", "/hash", 3},         // burns CPU
	{"/report", "/report", 2},     // allocates
	{"/count", "/count?k=a", 2},   // contends on a lock held briefly
	{"/queue", "/queue", 2},       // waits on a worker pool
	{"/lookup", "/lookup", 2},     // leaks a goroutine now and then
	{"/checkout", "/checkout", 2}, // slow now and then
}

// refreshEvery is how old the checkout's stock may get before a checkout
// refreshes it, and refreshTime how long a refresh takes.
const (
	refreshEvery = 700 * time.Millisecond
	refreshTime  = 200 * time.Millisecond
)

// service is the application being profiled.
type service struct {
	mu      sync.Mutex
	counter map[string]int
	jobs    chan job
	lookups atomic.Int64

	// stock is the checkout's view of the warehouse, refreshed, under its
	// lock, when it is older than refreshEvery.
	stock struct {
		sync.Mutex
		refreshed time.Time
		items     int
	}
}

type job struct {
	n    int
	done chan int
}

func newService() *service {
	s := &service{counter: make(map[string]int), jobs: make(chan job)}
	s.stock.refreshed = time.Now()
	for range 2 {
		go s.worker()
	}
	return s
}

// handler returns the service's mux, each request served in a server span
// of tracer.
func (s *service) handler(tracer trace.Tracer) http.Handler {
	mux := http.NewServeMux()
	handlers := map[string]http.HandlerFunc{
		"/hash": s.hash, "/report": s.report, "/count": s.count,
		"/queue": s.queue, "/lookup": s.lookup, "/checkout": s.checkout,
	}
	for _, r := range routes {
		mux.HandleFunc(r.pattern, handlers[r.pattern])
	}
	return serverSpans(tracer, mux)
}

// serverSpans serves each request in a server span of tracer, as
// otelhttp's handler does: the span starts before routing, named after
// the method, and gets the route the mux matched (r.Pattern) as its
// http.route once next has served the request. Through a tracer wrapped
// by package labels, the span is a request: its samples carry its
// route, and the profiler counts it.
func serverSpans(tracer trace.Tracer, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := tracer.Start(r.Context(), r.Method,
			trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(semconv.HTTPRequestMethodKey.String(r.Method)))
		defer span.End()
		r = r.WithContext(ctx)
		next.ServeHTTP(w, r) // the mux sets r.Pattern
		if r.Pattern != "" {
			span.SetAttributes(attribute.String(string(semconv.HTTPRouteKey), r.Pattern))
		}
	})
}

// hash burns CPU.
func (s *service) hash(w http.ResponseWriter, r *http.Request) {
	sum := sha256.Sum256([]byte(r.URL.Path))
	for range 2000 {
		sum = sha256.Sum256(sum[:])
	}
	fmt.Fprintf(w, "%x\n", sum[:8])
}

// report allocates: it builds a document and encodes it.
func (s *service) report(w http.ResponseWriter, r *http.Request) {
	rows := make([]map[string]any, 0, 200)
	for i := range 200 {
		rows = append(rows, map[string]any{"id": i, "name": strings.Repeat("x", i%32), "tags": []string{"a", "b"}})
	}
	json.NewEncoder(w).Encode(rows)
}

// count contends on one lock.
func (s *service) count(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.counter[r.URL.Query().Get("k")]++
	time.Sleep(200 * time.Microsecond) // work done while holding the lock
	s.mu.Unlock()
	io.WriteString(w, "ok\n")
}

// queue blocks on channels: it hands work to a small pool and waits.
func (s *service) queue(w http.ResponseWriter, r *http.Request) {
	j := job{n: 1000, done: make(chan int)}
	s.jobs <- j
	fmt.Fprintln(w, <-j.done)
}

// lookup races a backend call against a deadline. The call answers on an
// unbuffered channel, so when the deadline wins (one call in fifty is
// slow) no one ever receives the answer and the call's goroutine leaks:
// the bug the goroutine-leak profile finds.
func (s *service) lookup(w http.ResponseWriter, r *http.Request) {
	n := s.lookups.Add(1)
	answer := make(chan string)
	go func() { answer <- backend(n) }()
	select {
	case a := <-answer:
		io.WriteString(w, a)
	case <-time.After(5 * time.Millisecond):
		http.Error(w, "backend timeout", http.StatusGatewayTimeout)
	}
}

// backend answers call n, slowly for one call in fifty.
func backend(n int64) string {
	if n%50 == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	return "ok\n"
}

// checkout reserves an item from the stock. When the stock is older than
// refreshEvery, the checkout that finds it so refreshes it from the
// warehouse, which takes refreshTime, holding the stock's lock: that
// checkout is slow, and so is every other that waits for the lock
// meanwhile.
func (s *service) checkout(w http.ResponseWriter, r *http.Request) {
	s.stock.Lock()
	if time.Since(s.stock.refreshed) > refreshEvery {
		s.stock.items = warehouse(r.Context())
		s.stock.refreshed = time.Now()
	}
	s.stock.items--
	left := s.stock.items
	s.stock.Unlock()
	fmt.Fprintln(w, left)
}

// warehouse answers how many items are in stock after refreshTime, or
// sooner when ctx ends.
func warehouse(ctx context.Context) int {
	t := time.NewTimer(refreshTime)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return 1_000_000
}

func (s *service) worker() {
	for j := range s.jobs {
		time.Sleep(time.Millisecond)
		j.done <- j.n * 2
	}
}

// maxRequests bounds the requests load sends, whatever the duration.
const maxRequests = 1_000_000

// load sends requests to base from a few clients, each route by its weight,
// until ctx ends or maxRequests have been sent. It returns how many were
// answered.
func load(ctx context.Context, base string) int64 {
	var paths []string
	for _, r := range routes {
		for range r.weight {
			paths = append(paths, r.path)
		}
	}
	var (
		wg            sync.WaitGroup
		sent, answers atomic.Int64
	)
	client := &http.Client{Timeout: 5 * time.Second}
	for c := range 8 {
		wg.Go(func() {
			for i := c; ctx.Err() == nil && sent.Add(1) <= maxRequests; i++ {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+paths[i%len(paths)], nil)
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				answers.Add(1)
			}
		})
	}
	wg.Wait()
	return answers.Load()
}
