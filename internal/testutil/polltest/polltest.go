// Package polltest waits, in tests, for what another goroutine brings
// about.
package polltest

import (
	"testing"
	"time"
)

// Until calls cond every 10ms until it holds, and fails t, naming what it
// waited for, if it has not after a minute: a guard against a hang, never
// a timing assertion.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for range 6000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("never saw %s", what)
}
