// Package bubble tells whether code runs inside a testing/synctest bubble.
//
// A cleanup registered with runtime.AddCleanup runs on a runtime goroutine
// outside every bubble, and closing or sending on a channel that belongs to
// a bubble from outside it is a fatal error. Packages that stop their
// goroutines from a cleanup therefore skip that cleanup for objects made
// inside a bubble: a bubble reports a goroutine left running by itself,
// with its stack, when the test ends.
package bubble

import "time"

// start is read during package initialization, which never runs inside a
// bubble, so it carries a reading of the real monotonic clock.
var start = time.Now()

// bubbleGap is far more than any process lives, and far less than the
// distance between the real monotonic clock (time since boot) and a
// bubble's clock (time since 1970, starting in 2000).
const bubbleGap = 15 * 365 * 24 * time.Hour

// Inside reports whether the caller runs inside a synctest bubble. It reads
// the clock twice at most and does not depend on the wall clock's setting:
// a machine that boots in 1970 without a real-time clock is not taken for
// a bubble.
func Inside() bool { return insideAt(time.Now(), start) }

// insideAt reports whether now, a reading of time.Now, was taken inside a
// bubble, given start, a reading taken outside every bubble. A bubble's time.Now has no monotonic reading (since Go 1.26), or
// one taken from the bubble's clock, which counts from 1970 like the wall
// clock (Go 1.25): decades away from the real monotonic clock, which counts
// from boot. Outside a bubble, now has a monotonic reading at most the
// process's age after start, whatever the wall clock says.
func insideAt(now, start time.Time) bool {
	if now == now.Round(0) {
		// No monotonic reading. Outside a bubble that happens only for
		// wall times past 2157.
		return true
	}
	d := now.Sub(start) // monotonic readings only
	return d > bubbleGap || d < -bubbleGap
}
