package idletimeout

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// The limits beyond idleness: a first-byte deadline, minimum transfer
// rates and a maximum age. Read and Write only count bytes for them (one
// atomic add, when any is set); everything else happens when the
// connection's timer comes up, on the owner goroutine, in judge.

// shorter lowers minT to d.
func (s *settings) shorter(d int64) {
	if s.minT == 0 || d < s.minT {
		s.minT = d
	}
}

// validateMatrix checks and copies the limits beyond idleness.
func (s *settings) validateMatrix(c Config) error {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"FirstByteTimeout", c.FirstByteTimeout}, {"RateGrace", c.RateGrace}, {"MaxAge", c.MaxAge}, {"MaxAgeGrace", c.MaxAgeGrace}} {
		if f.d < 0 {
			return fmt.Errorf("%w: %s %v, want >= 0", ErrInvalidConfig, f.name, f.d)
		}
	}
	if c.MinReadRate < 0 || c.MinWriteRate < 0 {
		return fmt.Errorf("%w: MinReadRate %d, MinWriteRate %d, want >= 0", ErrInvalidConfig, c.MinReadRate, c.MinWriteRate)
	}
	s.firstByte = int64(c.FirstByteTimeout)
	if s.firstByte > 0 {
		s.shorter(s.firstByte)
	}
	s.rate = [2]int64{int64(c.MinReadRate), int64(c.MinWriteRate)}
	if s.rates() {
		s.grace = int64(c.RateGrace)
		if s.grace == 0 {
			s.grace = int64(defaultRateGrace)
		}
		s.shorter(s.grace)
	}
	s.maxAge, s.maxAgeGrace = int64(c.MaxAge), int64(c.MaxAgeGrace)
	s.counts = s.firstByte > 0 || s.rates()
	return nil
}

// ageLimit returns when a connection born at born reaches MaxAge: MaxAge
// plus a jitter of up to a tenth of it.
func (s *settings) ageLimit(born int64) int64 {
	if s.maxAge == 0 {
		return 0
	}
	return addSat(born, addSat(s.maxAge, rand.Int64N(s.maxAge/10+1)))
}

// window is what the owner remembers of one direction's transfer: when
// it first saw it and the progress before it. The rate is judged over the
// whole transfer, not a sliding window: a sender sees a slow reader's
// progress only as the peer acknowledges, and a receiver opens its window
// in steps of up to half its buffer (over 100 KiB every few seconds for a
// reader taking 20 KB/s), so any shorter window would cut honest readers.
// The price: a peer that took a burst at first (its receive buffer) gets
// that burst / rate seconds of credit.
type window struct {
	start int64  // 0: no transfer running
	base  uint64 // progress before it
}

// look reports whether the transfer, at progress p at nowNs, is slower
// than rate bytes per second since it began, once it has lasted grace. It
// starts the transfer (from the progress before, last) if none runs.
func (w *window) look(nowNs int64, p, last uint64, rate, grace int64) bool {
	if w.start == 0 {
		*w = window{nowNs, last} // lenient: this look's bytes count as at its time
		return false
	}
	return slow(rate, p-w.base, nowNs-w.start, grace)
}

// rateState is the owner's view of a connection's transfers, allocated
// at the first look when a rate is set.
type rateState struct {
	rx, wx       window // the read and write transfers being judged
	lastR, lastW uint64 // rbytes and the write progress at the last look
	lastWs       int64  // wstamp at the last look
	lastPaused   bool   // the state at the last look
}

// judge looks at the limits beyond idleness for c, in state paused or not,
// at nowNs. It returns a verdict when one is broken (hard: close even a
// paused connection, whatever its activity), and when to look again
// (math.MaxInt64: never for these limits).
func (t *tracker) judge(c *Conn, paused bool, nowNs int64) (v verdict, hard bool, next int64) {
	s := c.cfg
	next = 1<<63 - 1
	ev := func(r Reason, d int64) verdict {
		return verdict{Event: Event{Conn: c, Reason: r, Idle: time.Duration(d), Count: 1}}
	}

	rn := c.rbytes.Load()
	if s.firstByte > 0 && rn == 0 && !paused {
		due := addSat(c.born, s.firstByte)
		if due <= nowNs {
			return ev(ReasonFirstByte, nowNs-c.born), false, 0
		}
		next = min(next, due)
	}

	if s.rates() {
		if c.rs == nil {
			c.rs = &rateState{lastWs: c.born, lastPaused: paused} // as at the wrap: no byte yet
		}
		rs := c.rs
		ws := c.wstamp.Load()
		if paused != rs.lastPaused { // a request began or ended
			rs.rx, rs.wx, rs.lastPaused = window{}, window{}, paused
		}
		read := rn != rs.lastR
		if ws != rs.lastWs { // an answer ends a read transfer
			rs.rx = window{}
		}
		if read {
			rs.wx = window{} // the peer spoke: a write transfer ends
			if rs.rx.look(nowNs, rn, rs.lastR, s.rate[0], s.grace) {
				return ev(ReasonReadRate, nowNs-rs.rx.start), true, 0
			}
		}
		rs.lastR, rs.lastWs = rn, ws
		if s.rate[1] > 0 {
			// Progress is what the peer took: the bytes it acknowledged
			// on TCP, where a Write's bytes sit in the kernel's queue
			// until then; elsewhere what Writes returned.
			wp, queued, ok := tcpProgress(c.inner)
			if !ok {
				wp = c.wbytes.Load()
				q, _ := sendQueued(c.inner)
				queued = q > 0
			}
			if !queued && wp == rs.lastW {
				rs.wx = window{} // nothing to send: no transfer
			} else {
				if rs.wx.look(nowNs, wp, rs.lastW, s.rate[1], s.grace) {
					return ev(ReasonWriteRate, nowNs-rs.wx.start), true, 0
				}
			}
			rs.lastW = wp
		}
		next = min(next, nowNs+s.grace/4)
	}

	if s.maxAge > 0 {
		switch {
		case nowNs < c.ageDue:
			next = min(next, c.ageDue)
		case !paused:
			return ev(ReasonMaxAge, nowNs-c.born), false, 0
		case s.maxAgeGrace > 0:
			hardDue := addSat(c.ageDue, s.maxAgeGrace)
			if hardDue <= nowNs {
				return ev(ReasonMaxAge, nowNs-c.born), true, 0
			}
			next = min(next, hardDue)
		}
		// Paused past MaxAge without a hard end: Resume closes it.
	}
	return verdict{}, false, next
}

// slow reports whether n bytes in d ns fall below rate bytes per second,
// once d has reached grace. A rate of 0 is never slow.
func slow(rate int64, n uint64, d, grace int64) bool {
	if rate == 0 || d < grace {
		return false
	}
	return n < uint64(mulSat(rate, d)/int64(time.Second))
}

// closeAged closes c for MaxAge if it is past it: Resume's check, so a
// connection that was busy when it came of age ends after its request.
func (c *Conn) closeAged(nowNs int64) {
	if c.cfg.maxAge == 0 || nowNs < c.ageDue {
		return
	}
	c.tr.stats.events.Add(1)
	c.reap(verdict{Event: Event{Conn: c, Reason: ReasonMaxAge, Idle: time.Duration(nowNs - c.born), Count: 1}})
}
