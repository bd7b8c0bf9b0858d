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

// fakeEpochEnd bounds the synthetic clock of a bubble, which starts at
// midnight UTC on 2000-01-01. A real clock never reads earlier than this.
var fakeEpochEnd = time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)

// Inside reports whether the caller appears to run inside a synctest
// bubble, judged by the clock: a bubble's clock starts in 2000, and a test
// would have to advance it by a year for this to answer false. A machine
// whose real clock is set before 2001 is taken for a bubble, which only
// costs it the cleanup.
func Inside() bool { return time.Now().Before(fakeEpochEnd) }
