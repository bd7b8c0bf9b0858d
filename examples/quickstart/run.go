package main

import (
	"fmt"
	"io"
	"time"
)

// step is the interval of every wheel in the tour, and the unit stamps are
// rounded to.
const step = 10 * time.Millisecond

// run narrates the tour to out, one section per feature. It takes about a
// second.
//
// Stamps are the time since the section began, rounded to the nearest 10ms.
// The test runs run inside a testing/synctest bubble, where time moves only
// when every goroutine waits, so each stamp is exact there. On a real clock
// (go run) the same text is printed, except that the idle reap may land a
// tick or two (10-20ms) later than in the test: the reaper's activity clock
// starts ticking at the first connection, and on a real clock that moment
// falls between two ticks, so the quiet connection's last activity is
// rounded up, where in the test it sits exactly on a tick. Nothing ever
// happens earlier than printed, and a heavily loaded machine can add
// scheduling delay to any line.
func run(out io.Writer) error {
	n := &narrator{out: out}
	sections := []struct {
		title string
		run   func(*narrator) error
	}{
		{"timingwheel (10ms ticks): timers fire on the first tick at or after their deadline", tourWheel},
		{"cache: entries live for their TTL (100ms); Set and Touch restart it", tourExpiry},
		{"cache: with Limit 2, the least recently used entry makes room", tourEviction},
		{"cache: Take loads a missing key once, however many callers wait", tourTake},
		{"idletimeout: connections silent for 100ms are closed", tourIdle},
	}
	for i, s := range sections {
		if i > 0 {
			fmt.Fprintln(out)
		}
		fmt.Fprintln(out, s.title)
		n.start = time.Now()
		if err := s.run(n); err != nil {
			return fmt.Errorf("%s: %w", s.title, err)
		}
	}
	return nil
}

// narrator writes stamped lines. It is not safe for concurrent use: each
// section prints from one goroutine at a time, handing over through channels.
type narrator struct {
	out   io.Writer
	start time.Time
}

// stamp returns the time since the section began, rounded to a step.
func (n *narrator) stamp() string {
	return fmt.Sprintf("%5dms", time.Since(n.start).Round(step).Milliseconds())
}

// say prints one stamped line.
func (n *narrator) say(format string, args ...any) {
	fmt.Fprintf(n.out, "%s  %s\n", n.stamp(), fmt.Sprintf(format, args...))
}

// at waits until d after the start of the section. Sections pace their
// steps on this absolute schedule, so waits do not add up their overshoot.
func (n *narrator) at(d time.Duration) {
	time.Sleep(time.Until(n.start.Add(d)))
}
