//go:build linux && (amd64 || arm64)

package processctx

import "testing"

// SetMemfdCreate replaces memfd_create for the duration of t.
func SetMemfdCreate(t *testing.T, f func(string, int) (int, error)) {
	prev := memfdCreate
	memfdCreate = f
	t.Cleanup(func() { memfdCreate = prev })
}
