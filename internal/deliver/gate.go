package deliver

import "sync"

// Gate guards what the exporting goroutine does to the application's
// state: the counters Stats reads, the application's logger, the callbacks
// the exporter makes (retries, partial successes). Shutdown returns by its
// context's deadline even while an export is stuck in a transport that
// ignores its context (an application's http.RoundTripper or gRPC
// interceptor); the goroutine blocked there cannot be ended, so Shutdown
// closes the gate instead, and whatever the goroutine does once the call
// returns is refused.
//
// A Gate is safe for concurrent use. The zero Gate is open.
type Gate struct {
	mu     sync.Mutex
	closed bool
}

// Run calls fn unless the gate is closed, and reports whether it did. fn
// runs under the gate's lock, so Close waits for it: fn must do no more
// than count and log.
func (g *Gate) Run(fn func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	fn()
	return true
}

// Close waits for a call of fn in progress, then refuses every later one.
func (g *Gate) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}
