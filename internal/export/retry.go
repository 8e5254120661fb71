package export

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/pprofotel/profiler/internal/export/report"
)

// RetryConfig is the retry policy of WithRetry.
//
// The wait before retry n (n = 1, 2, ...) is drawn uniformly from
// [interval/2, interval], where interval is InitialInterval multiplied by
// 1.5 for each earlier retry and capped at MaxInterval: the jitter spreads
// the retries of many processes that failed together, and no wait chosen by
// the policy exceeds MaxInterval.
//
// When the receiver names a delay (a gRPC RetryInfo or an HTTP Retry-After)
// that delay is the wait, as the OTLP specification asks: shorter than the
// backoff it would retry sooner than the receiver can take it back, longer
// it is what the receiver asked for, so it is neither shortened to
// MaxInterval nor lengthened to the backoff. The backoff interval still
// grows, so that a later failure without a delay waits longer.
//
// A receiver's delay holds for every request until it has passed, not only
// for the request it answered: when the policy gives up on a request
// because the delay reaches past its limits, the next Export waits for the
// rest of the delay before its first attempt. Meanwhile the caller's queue
// fills, and its drop-oldest rule bounds the memory.
type RetryConfig struct {
	// Enabled turns retrying on. When false every Export makes exactly
	// one attempt, still not before a receiver's delay has passed.
	Enabled bool
	// InitialInterval is the interval of the first retry. A value <= 0
	// takes the default.
	InitialInterval time.Duration
	// MaxInterval caps the interval. A value <= 0 takes the default; a
	// value below InitialInterval is raised to it.
	MaxInterval time.Duration
	// MaxElapsedTime bounds the time from the start of the first attempt
	// to the start of the last one: a retry whose wait would end past it is
	// not made. Zero leaves the bound to the context alone.
	MaxElapsedTime time.Duration
}

// DefaultRetryConfig is the policy of the OpenTelemetry Go OTLP exporters:
// first interval 5s, intervals capped at 30s, no retry started after 1m.
var DefaultRetryConfig = RetryConfig{
	Enabled:         true,
	InitialInterval: 5 * time.Second,
	MaxInterval:     30 * time.Second,
	MaxElapsedTime:  time.Minute,
}

// backoffMultiplier is the growth of the interval from one retry to the
// next; it is the OpenTelemetry Go exporters' growth.
const backoffMultiplier = 1.5

// RetryOption customises the decorator returned by WithRetry.
type RetryOption func(*retryHooks)

// retryHooks are the decorator's replaceable parts, apart from the request
// type so that one option type serves every Sender.
type retryHooks struct {
	onRetry func(int, time.Duration, error)
	now     func() time.Time
	sleep   func(context.Context, time.Duration) error
	// random returns a number in [0, 1) that places a wait within its
	// jitter range.
	random func() float64
}

// OnRetry registers fn, called synchronously before each wait with the
// number of the attempt that failed (starting at 1), the wait before the
// next attempt, and the failure. It is not called when the decorator gives
// up, so the number of calls is the number of retries.
func OnRetry(fn func(attempt int, delay time.Duration, err error)) RetryOption {
	return func(r *retryHooks) { r.onRetry = fn }
}

// WithClock replaces the wall clock: now reads the time and sleep waits for
// d, returning ctx's error early if ctx is done first. Tests use it to run a
// retry schedule without waiting for it.
func WithClock(now func() time.Time, sleep func(ctx context.Context, d time.Duration) error) RetryOption {
	return func(r *retryHooks) {
		r.now = now
		r.sleep = sleep
	}
}

// WithRetry returns an exporter that sends a request again while the
// failure is retryable according to Retryable, following cfg, for no longer
// than ctx allows. Permanent failures and partial successes (which e
// reports as success) are returned at once.
//
// The decorator never waits past ctx's deadline: when the next attempt
// would start after it, or after MaxElapsedTime, the decorator gives up at
// once and returns the last failure, wrapped in an error that counts the
// attempts. The returned errors keep the last failure in their chain, so
// errors.As finds its *ExportError. An Export that the receiver's delay
// keeps from starting before ctx's deadline returns an error wrapping
// ErrThrottled without an attempt.
//
// Each retry is counted in the report.Report of ctx, if any, just before
// its wait.
//
// Shutdown interrupts a wait or an attempt in flight, then shuts e down.
// It wraps any Sender, so profiles and logs requests share one policy.
func WithRetry[R any](e Sender[R], cfg RetryConfig, opts ...RetryOption) Sender[R] {
	if cfg.InitialInterval <= 0 {
		cfg.InitialInterval = DefaultRetryConfig.InitialInterval
	}
	if cfg.MaxInterval <= 0 {
		cfg.MaxInterval = DefaultRetryConfig.MaxInterval
	}
	cfg.MaxInterval = max(cfg.MaxInterval, cfg.InitialInterval)
	cfg.MaxElapsedTime = max(cfg.MaxElapsedTime, 0)
	ctx, cancel := context.WithCancel(context.Background())
	r := &retryExporter[R]{
		next:       e,
		cfg:        cfg,
		retryHooks: retryHooks{now: time.Now, sleep: sleepContext, random: rand.Float64},
		stopping:   ctx,
		stop:       cancel,
	}
	for _, opt := range opts {
		if opt != nil {
			opt(&r.retryHooks)
		}
	}
	return r
}

// retryExporter is the decorator built by WithRetry.
type retryExporter[R any] struct {
	next Sender[R]
	cfg  RetryConfig
	retryHooks

	// stopping is cancelled by Shutdown.
	stopping context.Context
	stop     context.CancelFunc

	// holdMu guards holdUntil, the end of the last delay a receiver
	// asked for: no attempt starts before it.
	holdMu    sync.Mutex
	holdUntil time.Time
}

// ErrThrottled is in the chain of the error of an Export that was not
// attempted because the receiver's requested delay had not passed before
// the caller's deadline.
var ErrThrottled = errors.New("export: the receiver asked to wait")

// hold extends the time before which no attempt starts to until.
func (r *retryExporter[R]) hold(until time.Time) {
	r.holdMu.Lock()
	defer r.holdMu.Unlock()
	if until.After(r.holdUntil) {
		r.holdUntil = until
	}
}

// waitHold waits until the receiver's last delay has passed, or returns
// at once when ctx's deadline comes first.
func (r *retryExporter[R]) waitHold(ctx context.Context) error {
	r.holdMu.Lock()
	until := r.holdUntil
	r.holdMu.Unlock()
	now := r.now()
	wait := until.Sub(now)
	if wait <= 0 {
		return nil
	}
	if deadline, ok := ctx.Deadline(); ok && !until.Before(deadline) {
		return fmt.Errorf("export: not attempted: %w until %s, %v away, after the context deadline",
			ErrThrottled, until.Format(time.RFC3339), wait.Round(time.Millisecond))
	}
	if err := r.sleep(ctx, wait); err != nil {
		if r.stopping.Err() != nil {
			err = ErrShutdown
		}
		return fmt.Errorf("export: not attempted: %w while waiting %v, as the receiver asked: %w",
			err, wait.Round(time.Millisecond), ErrThrottled)
	}
	return nil
}

// Export makes attempts until one succeeds, a failure is permanent, or the
// next attempt could not start in time.
func (r *retryExporter[R]) Export(ctx context.Context, req R) error {
	if r.stopping.Err() != nil {
		return ErrShutdown
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopWatching := context.AfterFunc(r.stopping, cancel)
	defer stopWatching()

	if err := r.waitHold(ctx); err != nil {
		return err
	}
	start := r.now()
	interval := r.cfg.InitialInterval
	for attempt := 1; ; attempt++ {
		err := r.next.Export(ctx, req)
		if err == nil {
			return nil
		}
		retry, delay := Retryable(err)
		if retry && delay > 0 {
			r.hold(r.now().Add(delay))
		}
		if !r.cfg.Enabled {
			return err
		}
		if !retry {
			if attempt == 1 {
				return err
			}
			return fmt.Errorf("export: %s, the last failed permanently: %w", attempts(attempt), err)
		}
		if r.stopping.Err() != nil {
			return fmt.Errorf("export: giving up after %s: %w: %w", attempts(attempt), ErrShutdown, err)
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fmt.Errorf("export: giving up after %s: %w: %w", attempts(attempt), ctxErr, err)
		}
		if delay <= 0 {
			delay = r.jitter(interval)
		}
		interval = r.grow(interval)
		if err := r.tooLate(ctx, attempt, start, delay, err); err != nil {
			return err
		}
		if r.onRetry != nil {
			r.onRetry(attempt, delay, err)
		}
		report.FromContext(ctx).Retried()
		if sleepErr := r.sleep(ctx, delay); sleepErr != nil {
			if r.stopping.Err() != nil {
				sleepErr = ErrShutdown
			}
			return fmt.Errorf("export: giving up after %s: %w while waiting %v to retry: %w",
				attempts(attempt), sleepErr, delay, err)
		}
	}
}

// grow returns the backoff interval after interval: multiplied, up to
// MaxInterval. It grows in floating point and is compared before it is
// converted back, so that a cap near the largest Duration cannot
// overflow.
func (r *retryExporter[R]) grow(interval time.Duration) time.Duration {
	if next := float64(interval) * backoffMultiplier; next < float64(r.cfg.MaxInterval) {
		return time.Duration(next)
	}
	return r.cfg.MaxInterval
}

// tooLate returns the error that ends the retries begun at start, after
// attempt attempts that failed with err last, when the next attempt, due
// in delay, would start past ctx's deadline or the retry limit; nil
// otherwise.
func (r *retryExporter[R]) tooLate(ctx context.Context, attempt int, start time.Time, delay time.Duration, err error) error {
	now := r.now()
	if deadline, ok := ctx.Deadline(); ok && !now.Add(delay).Before(deadline) {
		return fmt.Errorf("export: giving up after %s: the next attempt, due in %v, would start after the context deadline (%v away): %w",
			attempts(attempt), delay, deadline.Sub(now).Round(time.Millisecond), err)
	}
	if limit := r.cfg.MaxElapsedTime; limit > 0 && now.Add(delay).Sub(start) > limit {
		return fmt.Errorf("export: giving up after %s in %v: the next attempt, due in %v, would start after the retry limit of %v: %w",
			attempts(attempt), now.Sub(start).Round(time.Millisecond), delay, limit, err)
	}
	return nil
}

// jitter draws a wait from [interval/2, interval].
func (r *retryExporter[R]) jitter(interval time.Duration) time.Duration {
	half := interval / 2
	return half + time.Duration(r.random()*float64(interval-half))
}

// Shutdown interrupts a pending Export, then shuts the wrapped exporter
// down.
func (r *retryExporter[R]) Shutdown(ctx context.Context) error {
	r.stop()
	return r.next.Shutdown(ctx)
}

// sleepContext waits for d or until ctx is done.
func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// attempts spells a count of attempts.
func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}
