package sharedcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// memStore is a Store in memory for in-process tests. beforeLease, when set,
// runs at the start of each lease call, where a test plays another
// instance acting between a Take's read and its lease.
type memStore struct {
	mu          sync.Mutex
	h           handler
	recs        map[string][]byte
	revs        map[string]uint64
	rev         uint64
	leases      map[string]bool
	down        bool
	gets        int
	beforeLease func(s *memStore, key string)
}

func newMemStore() *memStore {
	return &memStore{recs: map[string][]byte{}, revs: map[string]uint64{}, leases: map[string]bool{}}
}

func (s *memStore) bind(_ context.Context, _, _ time.Duration, h handler) error {
	s.h = h
	return nil
}

func (s *memStore) get(_ context.Context, key string) ([]byte, uint64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return nil, 0, false, ErrUnavailable
	}
	s.gets++
	rec, ok := s.recs[key]
	return rec, s.revs[key], ok, nil
}

// store writes rec for key as another instance would, without an event.
func (s *memStore) store(key string, rec []byte) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rev++
	s.recs[key], s.revs[key] = rec, s.rev
	return s.rev
}

func (s *memStore) put(_ context.Context, key string, rec []byte) (uint64, error) {
	s.mu.Lock()
	down := s.down
	s.mu.Unlock()
	if down {
		return 0, ErrUnavailable
	}
	rev := s.store(key, rec)
	s.h.changed(key, rev)
	return rev, nil
}

func (s *memStore) del(_ context.Context, key string) error {
	s.mu.Lock()
	if s.down {
		s.mu.Unlock()
		return ErrUnavailable
	}
	s.rev++
	rev := s.rev
	delete(s.recs, key)
	delete(s.revs, key)
	s.mu.Unlock()
	s.h.changed(key, rev)
	return nil
}

func (s *memStore) lease(_ context.Context, key string) (func(), bool, error) {
	if f := s.beforeLease; f != nil {
		f(s, key)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return nil, false, ErrUnavailable
	}
	if s.leases[key] {
		return nil, false, nil
	}
	s.leases[key] = true
	return func() {
		s.mu.Lock()
		delete(s.leases, key)
		s.mu.Unlock()
	}, true, nil
}

func (s *memStore) held(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leases[key]
}

func (s *memStore) connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.down
}

func (s *memStore) unbind() {}

// TestTakeLeaseAfterOthersLoad pins the invariant "a Take loads only if the
// key is absent from the store after it holds the lease". The Take reads
// the key (absent); before its lease call, another instance loads the key,
// writes it and releases its lease (its event not delivered yet); the
// lease is then free. The Take must return the other instance's value and
// give its lease back, not load a second time. (CI saw it as
// TestLeaseholderCrash/store=nats hanging in a second loader.)
func TestTakeLeaseAfterOthersLoad(t *testing.T) {
	s := newMemStore()
	c, err := New[string](context.Background(), s, Options[string]{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s.beforeLease = func(s *memStore, key string) {
		s.beforeLease = nil
		s.store(key, record(t, "theirs"))
	}
	loads := 0
	v, err := c.Take(context.Background(), "k", func(context.Context) (string, error) {
		loads++
		return "mine", nil
	})
	if err != nil || v != "theirs" {
		t.Errorf("Take = %q, %v; want %q, nil (the value written before the lease was taken)", v, err, "theirs")
	}
	if loads != 0 {
		t.Errorf("loader ran %d times, want 0: the key was in the store once the lease was held", loads)
	}
	if got := c.Stats().Loads; got != 0 {
		t.Errorf("Stats().Loads = %d, want 0", got)
	}
	if s.held("k") {
		t.Errorf("lease on k still held after Take returned, want released")
	}
}

// TestTakeLeaseLoads: with the key absent before and after the lease, the
// leaseholder loads once, writes the value and releases the lease.
func TestTakeLeaseLoads(t *testing.T) {
	s := newMemStore()
	c, err := New[string](context.Background(), s, Options[string]{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	loads := 0
	v, err := c.Take(context.Background(), "k", func(context.Context) (string, error) {
		loads++
		return "mine", nil
	})
	if err != nil || v != "mine" || loads != 1 {
		t.Fatalf("Take = %q, %v after %d loads; want %q, nil after 1", v, err, loads, "mine")
	}
	if _, ok := s.recs["k"]; !ok {
		t.Errorf("store has no record for k after the load, want the loaded value")
	}
	if s.held("k") {
		t.Errorf("lease on k still held after Take returned, want released")
	}
	if _, err := c.Take(context.Background(), "k", func(context.Context) (string, error) {
		return "", errors.New("loader must not run")
	}); err != nil {
		t.Errorf("second Take: %v, want the kept value", err)
	}
}

// retained counts what this instance keeps for Takes: those in flight and
// their wake-ups.
func retained[V any](c *Cache[V]) int {
	n := 0
	c.flights.Range(func(any, any) bool { n++; return true })
	return n
}

// TestTakeRetainsNothing: after Takes of many keys end (found in the store,
// loaded, or failed), with no event for any of them, the instance keeps
// nothing for them but their local copies.
func TestTakeRetainsNothing(t *testing.T) {
	s := newMemStore()
	c, err := New[string](context.Background(), s, Options[string]{TTL: time.Hour, LocalTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	for i := range 100 {
		s.store(fmt.Sprint("stored-", i), record(t, "v"))
		if _, err := c.Take(ctx, fmt.Sprint("stored-", i), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Take(ctx, fmt.Sprint("loaded-", i), func(context.Context) (string, error) { return "v", nil }); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Take(ctx, fmt.Sprint("failed-", i), func(context.Context) (string, error) { return "", errors.New("boom") }); err == nil {
			t.Fatal("failed load returned no error")
		}
	}
	if n := retained(c); n != 0 {
		t.Errorf("after 300 Takes ended: %d flights and wake-ups retained, want 0", n)
	}
}

// TestTakeWokenByEvent: a Take waiting for another instance's load (its
// lease held elsewhere, LeaseTTL an hour so no retry comes in the test's
// time) returns the value as soon as the event for the key, or a
// reconnect, arrives.
func TestTakeWokenByEvent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		arrive func(s *memStore)
	}{
		{"event", func(s *memStore) { s.h.changed("k", s.store("k", record(t, "theirs"))) }},
		{"reconnect", func(s *memStore) {
			s.store("k", record(t, "theirs"))
			s.h.reconnected()
			s.h.resumed()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newMemStore()
			s.leases["k"] = true // another instance is loading k
			c, err := New[string](context.Background(), s, Options[string]{TTL: time.Hour, LeaseTTL: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			waiting := make(chan struct{}, 1)
			testHookWaiting = func(string) {
				select {
				case waiting <- struct{}{}:
				default:
				}
			}
			defer func() { testHookWaiting = nil }()
			got := make(chan string, 1)
			go func() {
				v, err := c.Take(context.Background(), "k", func(context.Context) (string, error) { return "mine", nil })
				got <- fmt.Sprint(v, " ", err)
			}()
			<-waiting
			tc.arrive(s)
			select {
			case v := <-got:
				if want := "theirs <nil>"; v != want {
					t.Errorf("Take = %q, want %q", v, want)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("Take still waiting 30s after the %s, want it woken", tc.name)
			}
			if n := retained(c); n != 0 {
				t.Errorf("%d flights retained after the Take returned, want 0", n)
			}
		})
	}
}
