package natsjobs

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
)

// defaultRetry is the policy of a zero WorkOptions.Retry. Unlike package
// jobs, whose zero Retry never retries, a durable queue retries by
// default: a worker that dies mid-run uses up an attempt too.
var defaultRetry = jobs.Retry{Attempts: 5, Base: time.Second, Max: 10 * time.Minute, Factor: 2, Jitter: 0.1}

// maxRetryDelay bounds a retry's wait, which becomes a server-side
// schedule: a year.
const maxRetryDelay = 365 * 24 * time.Hour

// policy validates r (with jobs.Retry.Validate), applies the defaults and
// returns the policy Work uses: defaultRetry for the zero Retry;
// otherwise a zero Attempts means defaultRetry's, and the other zero
// fields mean what they mean in jobs.Retry.Delay (Base 1s, Factor 2, Max
// no cap).
func policy(r jobs.Retry) (jobs.Retry, error) {
	if r.Attempts == 0 && r.Base == 0 && r.Max == 0 && r.Factor == 0 && r.Jitter == 0 && r.If == nil {
		return defaultRetry, nil
	}
	if err := r.Validate(); err != nil {
		return r, fmt.Errorf("%w: WorkOptions: %w", ErrInvalid, err)
	}
	if r.Attempts == 0 {
		r.Attempts = defaultRetry.Attempts
	}
	return r, nil
}

// retryable reports whether err may be retried under r. Retry.If is user
// code: a panic in it is logged and counts as false, as in package jobs,
// so that the job is dead-lettered with err instead of taking the worker
// down with a delivery it never answers.
func retryable(r *jobs.Retry, err error) (ok bool) {
	if jobs.IsPermanent(err) {
		return false
	}
	if r.If == nil {
		return true
	}
	defer func() {
		if p := recover(); p != nil {
			slog.Error("natsjobs: Retry.If panicked", "err", err, "panic", p, "stack", string(debug.Stack()))
			ok = false
		}
	}()
	return r.If(err)
}

// backoff is the wait after failed attempt n (from 1): jobs.Retry.Delay,
// at most maxRetryDelay.
func backoff(r *jobs.Retry, n int) time.Duration {
	return min(r.Delay(n), maxRetryDelay)
}
