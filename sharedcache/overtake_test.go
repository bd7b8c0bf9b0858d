package sharedcache

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"
)

// stepStore is a Store whose get blocks until the test lets it answer, so a
// test can deliver an event while a read is in flight.
type stepStore struct {
	h       handler
	rec     []byte
	rev     uint64
	getting chan struct{} // a get has started
	answer  chan struct{} // let it return
}

func (s *stepStore) bind(_ context.Context, _, _ time.Duration, h handler) error {
	s.h = h
	return nil
}
func (s *stepStore) get(context.Context, string) ([]byte, uint64, bool, error) {
	rec, rev := s.rec, s.rev
	s.getting <- struct{}{}
	<-s.answer
	return rec, rev, true, nil
}
func (s *stepStore) put(context.Context, string, []byte) (uint64, error) { panic("unused") }
func (s *stepStore) del(context.Context, string) error                   { panic("unused") }
func (s *stepStore) lease(context.Context, string) (func(), bool, error) { panic("unused") }
func (s *stepStore) connected() bool                                     { return true }
func (s *stepStore) unbind()                                             {}

func record(t *testing.T, v string) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return makeRecord(kindValue, time.Now().Add(time.Hour), b)
}

// TestReadOvertakenByEvent pins the rule that a store read overtaken by an
// event for its key keeps no local copy: the read got revision 1, another
// instance's write of revision 2 is reported before the read returns, and
// a copy of revision 1 would then be served until LocalTTL.
func TestReadOvertakenByEvent(t *testing.T) {
	s := &stepStore{rec: record(t, "old"), rev: 1, getting: make(chan struct{}), answer: make(chan struct{})}
	c, err := New[string](context.Background(), s, Options[string]{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := make(chan string)
	go func() {
		v, _ := c.Get(context.Background(), "k")
		done <- v
	}()
	<-s.getting
	s.h.changed("k", 2) // the write of revision 2, seen while the read is in flight
	s.answer <- struct{}{}
	if v := <-done; v != "old" {
		t.Fatalf("first get = %q, want %q (the read's value)", v, "old")
	}
	if e, ok := c.l1.Peek("k"); ok {
		t.Fatalf("local copy of revision %d kept after the event for revision 2, want none", e.rev)
	}
}

// TestReadAfterReconnect pins that a read in flight across a reconnect keeps
// no local copy: writes made while the connection was down are not known.
func TestReadAfterReconnect(t *testing.T) {
	s := &stepStore{rec: record(t, "old"), rev: 1, getting: make(chan struct{}), answer: make(chan struct{})}
	c, err := New[string](context.Background(), s, Options[string]{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := make(chan struct{})
	go func() {
		c.Get(context.Background(), "k")
		close(done)
	}()
	<-s.getting
	s.h.reconnected()
	s.h.resumed()
	s.answer <- struct{}{}
	<-done
	if e, ok := c.l1.Peek("k"); ok {
		t.Fatalf("local copy of revision %d kept from a read across a reconnect, want none", e.rev)
	}
}

// TestLocalCopyNeverWritten pins that a local copy is never written once
// it is in L1: a hit hands out L1's pointer without copying it, so a write
// in place (say, renewing the copy's freshness when a read past it finds
// the same revision in the store) would change what a reader holds.
func TestLocalCopyNeverWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c, err := New[string](ctx, newMemStore(), Options[string]{TTL: time.Hour, LocalTTL: time.Second, StaleIfError: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Set(ctx, "k", "a"); err != nil {
			t.Fatal(err)
		}
		held := c.local("k")
		if held == nil {
			t.Fatal("no local copy after Set, want one")
		}
		want := *held
		time.Sleep(2 * time.Second) // past fresh: the next Get reads the store
		if got, err := c.Get(ctx, "k"); err != nil || got != "a" {
			t.Fatalf("Get = %q, %v; want %q, nil", got, err, "a")
		}
		if now := c.local("k"); now == nil || now == held {
			t.Fatalf("local copy after a read past fresh = %p, want a new one (not %p)", now, held)
		}
		if *held != want {
			t.Fatalf("the copy held from L1 changed to %+v, want %+v", *held, want)
		}
	})
}
