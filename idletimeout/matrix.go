package idletimeout

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// The limits beyond idleness: a first-byte deadline, minimum transfer
// rates and a maximum age. Read and Write only count bytes for them (one
// atomic add, when any is set; the first byte of a transfer also stores
// the clock); everything else happens when the connection's timer comes
// up, on the owner goroutine, in judge, and each limit's deadline is a
// time the timer is set for.

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
	}{{"FirstByteTimeout", c.FirstByteTimeout}, {"HandshakeTimeout", c.HandshakeTimeout}, {"RateGrace", c.RateGrace},
		{"MaxAge", c.MaxAge}, {"MaxAgeGrace", c.MaxAgeGrace}} {
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
	s.handshake = int64(c.HandshakeTimeout)
	if s.handshake > 0 {
		s.shorter(s.handshake)
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

// transferBit in rbytes or wbytes says that no byte moved that way since
// the last transfer boundary: the wrap, a Pause, a Resume (reads only),
// or (seen by the owner) the other side moving. The Read or Write that moves the next
// byte stores the activity clock in rfrom or wfrom, then clears the bit,
// so a transfer is judged from its first byte, within a Resolution.
const transferBit = 1 << 63

// began records the first byte of a transfer: the other direction's
// count (so the owner can order bytes stamped in the same tick), the
// clock, then the clear bit, so an owner that sees the bit clear finds
// the time stored. The first byte of a write transfer also ends the read
// transfer: the next byte read begins one, with its own record, however
// soon the owner looks (an answer, then the next request trickled).
func (c *Conn) began(count *atomic.Uint64, from *atomic.Int64) {
	if from == &c.wfrom {
		c.wfromRead.Store(c.rbytes.Load() &^ transferBit)
		c.rbytes.Or(transferBit)
	} else {
		c.rfromWrote.Store(c.wbytes.Load() &^ transferBit)
	}
	from.Store(c.tr.now.Load())
	count.And(^uint64(transferBit))
}

// boundary ends the read transfer, and the write transfer too unless
// reads only: the next byte that way begins a new one. A Pause (a request
// arrived) ends both; a Resume (its response is written) only the read
// transfer, since the response's bytes may still be queued to the peer.
func (c *Conn) boundary(readsOnly bool) {
	if c.counts {
		c.rbytes.Or(transferBit)
		if !readsOnly {
			c.wbytes.Or(transferBit)
		}
	}
}

// window is what the owner remembers of one direction's transfer: when it
// began and the progress before it. The rate is judged over the whole
// transfer, not a sliding window: a sender sees a slow reader's progress
// only as the peer acknowledges, and a receiver opens its window in steps
// of up to half its buffer (over 100 KiB every few seconds for a reader
// taking 20 KB/s), so any shorter window would cut honest readers. The
// price: a peer that took a burst at first (its receive buffer) gets that
// burst / rate seconds of credit.
type window struct {
	start int64  // 0: no transfer running
	base  uint64 // progress before it
}

// transferStart returns when a transfer first seen at nowNs began: just
// after the first byte recorded in from, when count's bit is clear and
// that record is known to follow the last boundary (the other side did
// not move since the last look, or moved before the record, at stamp
// other); else nowNs: a transfer whose first byte went unrecorded counts
// from the look that saw it, which is lenient.
func (t *tracker) transferStart(count uint64, from *atomic.Int64, otherMoved bool, other, nowNs int64) int64 {
	if count&transferBit != 0 {
		return nowNs
	}
	f := from.Load()
	if otherMoved && f <= other {
		return nowNs
	}
	if b, ok := t.successorStored(f); ok {
		return min(b, nowNs)
	}
	return nowNs
}

// tickOf returns the start of the activity clock's tick holding ns: a
// multiple of Resolution since the tracker's origin. The wheel started
// just after that origin, so a deadline on such a multiple is due on the
// wheel's tick there, and a look on that tick reads a time in it.
func (t *tracker) tickOf(ns int64) int64 { return ns - ns%t.res }

// slow reports whether a transfer is slower than rate: its n bytes moved
// from start (an upper bound of its first byte's time) to end (a lower
// bound of its last byte's time, or now) fall short of the rate, and it
// has lasted grace, counted in ticks from start's tick to last's (an upper
// bound of its last byte's time, or now). Counting in ticks, the wheel's
// own unit, a transfer is judged on the tick its grace ends, not one tick
// later because the clock's publication after its first byte came a little
// after its tick: so it may be judged up to that lateness (at most a
// Resolution) before grace has passed since its first byte, over a
// duration never longer than the truth, so an honest transfer above the
// rate is never judged slow. A rate of 0 is never slow.
func (t *tracker) slow(rate int64, n uint64, start, end, last, grace int64) bool {
	if rate == 0 || t.tickOf(last)-t.tickOf(start) < grace {
		return false
	}
	return n < uint64(mulSat(rate, max(end-start, 0))/int64(time.Second))
}

// due returns when a transfer that began at start and has moved n bytes
// becomes slower than rate if it moves nothing more: once its grace has
// passed (in ticks, see slow) and n no longer pays for the time.
func (t *tracker) due(start int64, n uint64, rate, grace int64) int64 {
	pays := mulSat(int64(min(n, math.MaxInt64/2)+1), int64(time.Second))
	return max(addSat(t.tickOf(start), grace), addSat(start, ceilDiv(pays, rate)))
}

// rateState is the owner's view of a connection's transfers, allocated
// at the first look when a rate is set.
type rateState struct {
	rx, wx       window // the read and write transfers being judged
	lastR, lastW uint64 // bytes read and the write progress at the last look
	lastWs       int64  // wstamp at the last look
	lastPaused   bool   // the state at the last look
	queued       bool   // bytes were queued to the peer at the last look that asked
}

// judge looks at the limits beyond idleness for c, in state paused or not,
// at nowNs. It returns a verdict when one is broken (hard: close even a
// paused connection, whatever its activity), when to look again
// (math.MaxInt64: never for these limits), and whether bytes are queued
// to the peer under a write rate (which then stands in for idleness on
// the write side).
func (t *tracker) judge(c *Conn, paused bool, nowNs int64) (v verdict, hard bool, next int64, sending bool) {
	s := c.cfg
	next = math.MaxInt64
	ev := func(r Reason, d int64) verdict {
		return verdict{Event: Event{Conn: c, Reason: r, Idle: time.Duration(d), Count: 1}}
	}

	rv := c.rbytes.Load()
	rn := rv &^ transferBit
	if s.firstByte > 0 && rn == 0 && !paused {
		at := addSat(c.born, s.firstByte)
		if at <= nowNs {
			return ev(ReasonFirstByte, nowNs-c.born), false, 0, false
		}
		next = min(next, at)
	}

	if hs := c.handshakeDue.Load(); hs != 0 {
		if hs <= nowNs {
			return ev(ReasonHandshake, nowNs-c.born), true, 0, false
		}
		next = min(next, hs)
	}

	if s.rates() {
		if c.rs == nil {
			c.rs = &rateState{lastWs: c.born, lastPaused: paused} // as at the wrap: no byte yet
		}
		rs := c.rs
		rst, ws := c.rstamp.Load(), c.wstamp.Load()
		read := rn != rs.lastR
		if paused != rs.lastPaused { // a request began or ended (Pause and Resume set the bits)
			rs.rx, rs.lastPaused = window{}, paused
		}
		wrote := ws != rs.lastWs
		// A byte written after the read transfer's first byte (the write
		// count moved since, whatever the stamps say) ended it; the first
		// byte of a write transfer also set the bit, and a read after it
		// recorded a transfer of its own.
		wroteAfter := rv&transferBit == 0 && c.wbytes.Load()&^transferBit != c.rfromWrote.Load()
		if wrote { // an answer ends the read transfer
			rs.rx = window{}
			if wroteAfter {
				c.rbytes.Or(transferBit) // the next read begins a transfer
			}
		}
		// Bytes read since the last look begin a transfer unless a
		// boundary came after them all (the bit is set again): the end of
		// a request answered before this look.
		if read && rs.rx.start == 0 && rv&transferBit == 0 {
			rs.rx = window{t.transferStart(rv, &c.rfrom, wroteAfter, math.MaxInt64, nowNs), rs.lastR}
		}
		if rs.rx.start != 0 && s.rate[0] > 0 {
			n := rn - rs.rx.base
			// A request head under ConnState is owed in full: silence
			// counts. Elsewhere the transfer is measured to its last
			// byte, so a client waiting for an answer is never judged;
			// past its due time, looked at on every tick, the byte that
			// ends the grace decides: the grace is judged by the latest
			// bound of its time, the rate by the earliest (never harsher
			// than the truth).
			end, last := nowNs, nowNs
			if paused || !c.awaitsHead.Load() {
				end = max(rst, rs.rx.start)
				if b, ok := t.successorStored(rst); ok {
					last = b
				}
			}
			if t.slow(s.rate[0], n, rs.rx.start, end, last, s.grace) {
				return ev(ReasonReadRate, end-rs.rx.start), true, 0, false
			}
			at := t.due(rs.rx.start, n, s.rate[0], s.grace)
			if at <= nowNs {
				at = nowNs + 1
			}
			next = min(next, at)
		}
		rs.lastR, rs.lastWs = rn, ws
		if s.rate[1] > 0 {
			wv := c.wbytes.Load()
			// The peer spoke after the write transfer began: it ends.
			// Bytes read before the last read boundary (a request, then
			// Pause and Resume around its response: Resume touches
			// rstamp) end nothing.
			if read && (wv&transferBit != 0 || rv&transferBit == 0 && rst > c.wfrom.Load()) {
				rs.wx = window{}
				if wv&transferBit == 0 {
					c.wbytes.Or(transferBit) // the next write begins a transfer
					wv |= transferBit
				}
			}
			// The kernel is asked (a system call) only when a write
			// transfer may run: one was running or had bytes queued at
			// the last look, or a Write came since the last boundary.
			// Otherwise nothing can be queued that was not seen empty.
			if rs.wx.start != 0 || rs.queued || wv&transferBit == 0 {
				// Progress is what the peer took: the bytes it
				// acknowledged on TCP, where a Write's bytes sit in the
				// kernel's queue until then; elsewhere what Writes
				// returned.
				wp, queued, ok := tcpProgress(c.inner)
				if !ok {
					wp = wv &^ transferBit
					q, _ := sendQueued(c.inner)
					queued = q > 0
				}
				rs.queued = queued
				if !queued && wp == rs.lastW { // nothing to send: no transfer
					rs.wx = window{}
					if wv&transferBit == 0 {
						c.wbytes.Or(transferBit)
					}
				} else {
					if rs.wx.start == 0 {
						// A read stamped in the same tick as the first
						// byte written may precede it or follow it: the
						// counts tell (net/http reads a request and
						// answers within microseconds). Only a byte read
						// after that first byte leaves the start unknown.
						readAfter := read && rn != c.wfromRead.Load()
						rs.wx = window{t.transferStart(wv, &c.wfrom, readAfter, rst, nowNs), rs.lastW}
					}
					n := wp - rs.wx.base
					if t.slow(s.rate[1], n, rs.wx.start, nowNs, nowNs, s.grace) {
						return ev(ReasonWriteRate, nowNs-rs.wx.start), true, 0, false
					}
					next = min(next, t.due(rs.wx.start, n, s.rate[1], s.grace))
					sending = queued
				}
				rs.lastW = wp
			}
		}
		// Transfers that begin later are seen within RateGrace / 4.
		next = min(next, nowNs+s.grace/4)
	}

	if s.maxAge > 0 {
		switch {
		case nowNs < c.ageDue:
			next = min(next, c.ageDue)
		case !paused:
			return ev(ReasonMaxAge, nowNs-c.born), false, 0, false
		case s.maxAgeGrace > 0:
			hardDue := addSat(c.ageDue, s.maxAgeGrace)
			if hardDue <= nowNs {
				return ev(ReasonMaxAge, nowNs-c.born), true, 0, false
			}
			next = min(next, hardDue)
		}
		// Paused past MaxAge without a hard end: Resume closes it.
	}
	return verdict{}, false, next, sending
}

// closeAged makes the owner look at c on its next tick if c is past
// MaxAge: Resume's check, so a connection that was busy when it came of
// age ends after its request, and the look (which closes it unless a new
// request paused it) comes after the server has written the response it
// reported done: net/http's HTTP/2 server reports a connection idle when
// its last stream ends, before it flushes that stream's last frames.
func (c *Conn) closeAged(nowNs int64) {
	if c.cfg.maxAge == 0 || nowNs < c.ageDue || c.tr.sched == nil {
		return
	}
	c.tr.sched.Schedule(&c.timer, 1) // ErrClosed after Listener.Close: nothing to look at
}
