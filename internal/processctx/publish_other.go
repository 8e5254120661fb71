//go:build !(linux && (amd64 || arm64))

package processctx

import (
	"errors"

	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// Context is a published process context; off Linux amd64 and arm64 there
// is none.
type Context struct{}

// Publish returns errors.ErrUnsupported: the eBPF profiler, the reader of
// the process context, runs on Linux amd64 and arm64 only.
func Publish(*resourcepb.Resource) (*Context, []string, error) {
	return nil, nil, errors.ErrUnsupported
}

// Update does nothing.
func (*Context) Update(*resourcepb.Resource) ([]string, error) { return nil, nil }

// Withdraw does nothing.
func (*Context) Withdraw() error { return nil }
