// Package report carries what an exporter did during one Export call back
// to the profiler, which counts it in Stats and its metrics: the retries
// it made, the bytes the receiver accepted, and the files a file exporter
// removed. The profiler puts a Report
// in the context of every Export; an exporter that does not report (one
// written by a user) loses nothing but those two counts.
//
// A context value, in the manner of net/http/httptrace, keeps the public
// Exporter interface to Export and Shutdown.
package report

import (
	"context"
	"sync/atomic"
)

// Report accumulates what one profiler's exporter reports. Its methods are
// safe for concurrent use and do nothing on a nil Report, so an exporter
// calls them without checking whether the profiler asked.
type Report struct {
	retries atomic.Int64
	sent    atomic.Int64
	removed atomic.Int64
}

// Retried records one export attempt repeated after a retryable failure.
func (r *Report) Retried() {
	if r != nil {
		r.retries.Add(1)
	}
}

// Sent records n bytes (protobuf size, before compression) that the
// receiver accepted.
func (r *Report) Sent(n int64) {
	if r != nil {
		r.sent.Add(n)
	}
}

// Removed records n files removed to keep a directory within its
// retention bounds (exporters/otlpprofilefile).
func (r *Report) Removed(n int64) {
	if r != nil {
		r.removed.Add(n)
	}
}

// FilesRemoved returns the files recorded as removed so far.
func (r *Report) FilesRemoved() int64 {
	if r == nil {
		return 0
	}
	return r.removed.Load()
}

// Retries returns the retries recorded so far.
func (r *Report) Retries() int64 {
	if r == nil {
		return 0
	}
	return r.retries.Load()
}

// BytesSent returns the bytes recorded so far.
func (r *Report) BytesSent() int64 {
	if r == nil {
		return 0
	}
	return r.sent.Load()
}

type contextKey struct{}

// NewContext returns ctx carrying r.
func NewContext(ctx context.Context, r *Report) context.Context {
	return context.WithValue(ctx, contextKey{}, r)
}

// FromContext returns the Report ctx carries, or nil.
func FromContext(ctx context.Context) *Report {
	r, _ := ctx.Value(contextKey{}).(*Report)
	return r
}
