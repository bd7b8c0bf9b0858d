package natsjobs

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
)

// defaultRetry is the policy of a zero WorkOptions.Retry. Unlike package
// jobs, whose zero Retry never retries, a durable queue retries by
// default: a worker that dies mid-run uses up an attempt too.
var defaultRetry = jobs.Retry{Attempts: 5, Base: time.Second, Max: 10 * time.Minute, Factor: 2, Jitter: 0.1}

// policy validates r, applies the defaults and returns the policy Work
// uses.
func policy(r jobs.Retry) (jobs.Retry, error) {
	if r.Attempts == 0 && r.Base == 0 && r.Max == 0 && r.Factor == 0 && r.Jitter == 0 && r.If == nil {
		return defaultRetry, nil
	}
	switch {
	case r.Attempts < 0:
		return r, invalidf("Retry.Attempts %d, want >= 0", r.Attempts)
	case r.Base < 0:
		return r, invalidf("Retry.Base %v, want >= 0", r.Base)
	case r.Max < 0:
		return r, invalidf("Retry.Max %v, want >= 0", r.Max)
	case r.Factor != 0 && !(r.Factor >= 1 && r.Factor <= math.MaxFloat64):
		return r, invalidf("Retry.Factor %v, want 0 or >= 1", r.Factor)
	case !(r.Jitter >= 0 && r.Jitter < 1):
		return r, invalidf("Retry.Jitter %v, want in [0, 1)", r.Jitter)
	}
	if r.Attempts == 0 {
		r.Attempts = defaultRetry.Attempts
	}
	if r.Base == 0 {
		r.Base = time.Second
	}
	if r.Factor == 0 {
		r.Factor = 2
	}
	return r, nil
}

// retryable reports whether err may be retried under r.
func retryable(r *jobs.Retry, err error) bool {
	return !jobs.IsPermanent(err) && (r.If == nil || r.If(err))
}

// backoff is the wait after failed attempt n (from 1), as package jobs
// documents it: Base × Factor^(n-1), capped at Max, then jittered.
func backoff(r *jobs.Retry, n int) time.Duration {
	d := float64(r.Base) * math.Pow(r.Factor, float64(n-1))
	if r.Max > 0 {
		d = min(d, float64(r.Max))
	}
	d = min(d, float64(365*24*time.Hour))
	if r.Jitter > 0 {
		d *= 1 + r.Jitter*(2*rand.Float64()-1)
	}
	return max(time.Duration(d), 1)
}
