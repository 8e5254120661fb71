// Package testservice is the three-route HTTP service of issue 29, built to
// prove what the profiler says about routes and slow requests: /fast does
// nothing, /cpu spends a known amount of CPU, and /lock makes one request in
// LockEvery wait LockHold on a contended sync.Mutex. It is instrumented as
// a user instruments a service: an OpenTelemetry SDK TracerProvider wrapped
// with labels.WrapTracerProvider, and server spans from a middleware that,
// like otelhttp, names the span by the method at Start and sets http.route
// once the mux has matched the route. Load drives it at fixed rates and
// counts what it sent per route.
//
// The integration tests run it under the profiler and compare what the
// profiler exported with what the service measured of itself (Request);
// the overhead benchmark reuses Middleware to give its service spans.
package testservice

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The routes, as the mux matches them and so as http.route carries them.
const (
	RouteFast = "/fast"
	RouteCPU  = "/cpu"
	RouteLock = "/lock"
)

// Routes are the service's routes.
var Routes = []string{RouteFast, RouteCPU, RouteLock}

// LockEvery and LockHold make /lock slow now and then: every LockEvery-th
// request waits on a mutex that a background goroutine holds for LockHold.
const (
	LockEvery = 20
	LockHold  = 200 * time.Millisecond
)

// cpuRounds is how many steps of a linear congruential generator /cpu
// takes per request: about 8 ms of arithmetic on the machine the tests
// were written on. The tests do not rely on the figure: they measure each
// request's CPU time (Request.CPU).
const cpuRounds = 7_000_000

// Service is the three-route service. Its zero value is not usable; call
// New.
type Service struct {
	mu sync.Mutex // what a slow /lock request waits on
	// hold asks the holder goroutine to take mu for LockHold; it closes
	// the channel it is sent once it holds mu.
	hold chan chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
	// lockRequests counts /lock requests, to pick every LockEvery-th.
	lockRequests atomic.Int64
}

// New starts the service's background goroutine, which holds the mutex
// when a /lock request asks for contention; Close stops it. The goroutine
// is started here, with the caller's labels, not from a request, so that
// its own wait is nobody's request.
func New() *Service {
	s := &Service{hold: make(chan chan struct{}), done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.holdMutex()
	}()
	return s
}

// Close stops the background goroutine.
func (s *Service) Close() {
	close(s.done)
	s.wg.Wait()
}

// Handler returns the mux serving the three routes.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(RouteFast, s.fast)
	mux.HandleFunc(RouteCPU, s.cpu)
	mux.HandleFunc(RouteLock, s.lock)
	return mux
}

// fast answers at once.
func (s *Service) fast(w http.ResponseWriter, r *http.Request) {
	w.Write([]byte("ok\n"))
}

// cpu spins for cpuRounds steps.
func (s *Service) cpu(w http.ResponseWriter, r *http.Request) {
	x := Spin(cpuRounds)
	// The result is written so that the loop is not optimised away.
	w.Write([]byte{byte(x), '\n'})
}

// Spin takes n steps of a linear congruential generator: CPU work on
// locals only, which the race detector leaves alone, in a frame of its
// own.
//
//go:noinline
func Spin(n int) (x uint64) {
	for range n {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

// lock is fast but for every LockEvery-th request, which waits about
// LockHold on the mutex held by the background goroutine, and says so in
// its Request.
func (s *Service) lock(w http.ResponseWriter, r *http.Request) {
	if s.lockRequests.Add(1)%LockEvery == 0 {
		if req := FromContext(r.Context()); req != nil {
			req.Contended = true
		}
		s.waitForMutex()
	}
	w.Write([]byte("ok\n"))
}

// waitForMutex has the holder take the mutex and then waits for it.
//
//go:noinline
func (s *Service) waitForMutex() {
	held := make(chan struct{})
	select {
	case s.hold <- held:
	case <-s.done:
		return
	}
	<-held
	s.mu.Lock()
	s.mu.Unlock()
}

// holdMutex takes the mutex for LockHold each time it is asked to: a
// long critical section, as of a cache refresh.
func (s *Service) holdMutex() {
	for {
		select {
		case held := <-s.hold:
			s.mu.Lock()
			close(held)
			time.Sleep(LockHold)
			s.mu.Unlock()
		case <-s.done:
			return
		}
	}
}
