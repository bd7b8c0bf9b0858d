package timingwheel_test

// This file shows how to test your own code that uses a timing wheel: with
// testing/synctest, not a fake clock. Inside synctest.Test's bubble,
// time.Sleep moves a fake clock that jumps ahead as soon as every goroutine
// of the bubble is blocked, and synctest.Wait returns once they all are, so
// a test can check "not before the deadline, at most one interval after"
// exactly, in no real time. Create the wheel inside the bubble and shut it
// down before the bubble ends, or synctest.Test fails on the goroutines
// left behind.

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// bans is the code under test: an address banned for abuse is let back in
// when its ban ends; banning it again restarts the ban.
type bans struct {
	tw *timingwheel.TimingWheel[string, string] // address -> reason
}

// newBans calls unban on a worker goroutine as each ban ends.
func newBans(unban func(addr string)) (*bans, error) {
	tw, err := timingwheel.New(time.Second, 600, func(addr, reason string) { unban(addr) })
	if err != nil {
		return nil, err
	}
	return &bans{tw: tw}, nil
}

func (b *bans) ban(addr, reason string, d time.Duration) error {
	return b.tw.SetTimer(addr, reason, d)
}

func (b *bans) banned(addr string) bool { return b.tw.Has(addr) }

// close stops the wheel and waits for unban calls already started.
func (b *bans) close() error { return b.tw.Shutdown(context.Background()) }

// TestBansEnd tests bans inside a synctest bubble: each time.Sleep returns
// at once with the clock moved by exactly its argument, and time.Now in the
// unban callback reads the same clock.
func TestBansEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		unbanned := map[string]time.Duration{} // address -> when, since start
		b, err := newBans(func(addr string) {
			mu.Lock()
			defer mu.Unlock()
			unbanned[addr] = time.Since(start)
		})
		if err != nil {
			t.Fatal(err)
		}
		defer b.close()
		check := func(addr string, want time.Duration, pending bool) {
			t.Helper()
			synctest.Wait() // every callback due so far has returned
			mu.Lock()
			at, ok := unbanned[addr]
			mu.Unlock()
			switch {
			case pending && (ok || !b.banned(addr)):
				t.Errorf("at %v: %s unbanned (at %v), want it banned until %v", time.Since(start), addr, at, want)
			case !pending && !ok:
				t.Errorf("at %v: %s still banned, want it unbanned at %v", time.Since(start), addr, want)
			case !pending && (at < want || at > want+time.Second):
				t.Errorf("%s unbanned at %v, want within [%v, %v]: never early, at most one interval late", addr, at, want, want+time.Second)
			}
		}

		b.ban("198.51.100.7", "password spraying", 10*time.Minute)
		b.ban("203.0.113.9", "scraping", 10*time.Minute)
		time.Sleep(5 * time.Minute)
		b.ban("203.0.113.9", "scraping again", 10*time.Minute) // until 15m

		time.Sleep(5*time.Minute - time.Nanosecond)
		check("198.51.100.7", 10*time.Minute, true)
		time.Sleep(time.Second + time.Nanosecond) // one interval more
		check("198.51.100.7", 10*time.Minute, false)
		check("203.0.113.9", 15*time.Minute, true)
		time.Sleep(5 * time.Minute)
		check("203.0.113.9", 15*time.Minute, false)
	})
}
