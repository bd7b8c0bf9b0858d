package cache_test

// This file shows how to test your own code that uses a cache: with
// testing/synctest, not a fake clock. Inside synctest.Test's bubble,
// time.Now and time.Sleep read and move a fake clock that jumps ahead as
// soon as every goroutine of the bubble is blocked, so half an hour of
// session time passes in no real time, and exactly. Create the cache inside
// the bubble (its goroutines then belong to it) and close it before the
// bubble ends, or synctest.Test fails on the goroutines left behind.

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ttlkit/ttlkit/cache"
)

// sessions is the code under test: a login session ends 30 minutes after
// its last use, and the sessions ended by inactivity are counted.
type sessions struct {
	c       *cache.Cache[string, string] // token -> user
	expired atomic.Int64
}

func newSessions() (*sessions, error) {
	s := &sessions{}
	c, err := cache.New(cache.Options[string, string]{
		TTL:        30 * time.Minute,
		Resolution: time.Second, // ended sessions are counted within a second
		OnEvict: func(e cache.Event[string, string]) {
			if e.Reason == cache.Expired {
				s.expired.Add(1)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	s.c = c
	return s, nil
}

func (s *sessions) login(token, user string) { s.c.Set(token, user) }

// user returns the session's user and keeps the session alive.
func (s *sessions) user(token string) (string, bool) {
	u, ok := s.c.Get(token)
	if ok {
		s.c.Touch(token)
	}
	return u, ok
}

func (s *sessions) close() error { return s.c.Close() }

// TestSessionsEndAfterInactivity tests sessions inside a synctest bubble:
// each time.Sleep returns at once, with the clock moved by exactly its
// argument.
func TestSessionsEndAfterInactivity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := newSessions()
		if err != nil {
			t.Fatal(err)
		}
		defer s.close()

		s.login("tok-1", "ada")
		time.Sleep(29 * time.Minute)
		if u, ok := s.user("tok-1"); !ok || u != "ada" {
			t.Fatalf("after 29 minutes: user %q, %v; want ada, true", u, ok)
		}
		// That use restarted the 30 minutes: one nanosecond short of
		// them the session is alive, at them it has ended (a cache entry
		// is never returned at or after its deadline).
		time.Sleep(30*time.Minute - time.Nanosecond)
		if _, ok := s.c.Peek("tok-1"); !ok { // Peek: a read that is not a use
			t.Fatal("session ended 1ns before 30 minutes of inactivity")
		}
		time.Sleep(time.Nanosecond)
		if _, ok := s.user("tok-1"); ok {
			t.Fatal("session alive after 30 minutes of inactivity")
		}

		// The expiry reaches OnEvict within a Resolution. synctest.Wait
		// returns once every goroutine of the bubble is blocked: the
		// callback has run by then.
		time.Sleep(time.Second)
		synctest.Wait()
		if got := s.expired.Load(); got != 1 {
			t.Errorf("sessions ended by inactivity: got %d, want 1", got)
		}
	})
}
