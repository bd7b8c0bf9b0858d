package natsjobs

import (
	"errors"
	"math/rand/v2"
	"time"
)

// Retry is the retry policy of a Work call. The zero value means: 5
// attempts in all, waiting 1 s, 2 s, 4 s, 8 s between them (±10 %).
type Retry struct {
	// MaxAttempts counts the first run: 1 never retries. Zero means 5.
	MaxAttempts int
	// Base is the wait before the first retry. Zero means 1 s.
	Base time.Duration
	// Max caps the wait. Zero means 10 min.
	Max time.Duration
	// Factor multiplies the wait after each failure. Zero means 2.
	Factor float64
	// Jitter spreads each wait by up to ± this fraction. Zero means 0.1;
	// negative means none.
	Jitter float64
}

func (r *Retry) validate() error {
	if r.MaxAttempts < 0 || r.Base < 0 || r.Max < 0 || r.Factor < 0 || r.Jitter >= 1 {
		return invalidf("Retry %+v: negative field or Jitter ≥ 1", *r)
	}
	if r.Factor > 0 && r.Factor < 1 {
		return invalidf("Retry: Factor %v under 1", r.Factor)
	}
	if r.MaxAttempts == 0 {
		r.MaxAttempts = 5
	}
	if r.Base == 0 {
		r.Base = time.Second
	}
	if r.Max == 0 {
		r.Max = 10 * time.Minute
	}
	if r.Factor == 0 {
		r.Factor = 2
	}
	if r.Jitter == 0 {
		r.Jitter = 0.1
	}
	if r.Jitter < 0 {
		r.Jitter = 0
	}
	return nil
}

// delay returns the wait after failed attempt n (1 for the first run).
func (r *Retry) delay(n int) time.Duration {
	d := float64(r.Base)
	for i := 1; i < n && d < float64(r.Max); i++ {
		d *= r.Factor
	}
	d = min(d, float64(r.Max))
	if r.Jitter > 0 {
		d *= 1 + r.Jitter*(2*rand.Float64()-1)
	}
	return time.Duration(d)
}

// Permanent wraps err so that the job is not retried: it goes to the dead
// letters at once. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (p *permanentError) Error() string { return p.err.Error() }
func (p *permanentError) Unwrap() error { return p.err }

func isPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}
