package sharedcache

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestStaleIfError, in a synctest bubble: a copy read with LocalTTL 1m is
// served fresh for a minute; with the store down it is served for
// StaleIfError (5m) more, not a moment longer, by Get and Take (whose
// loader does not run); without the option it is not served past its
// deadline. A store that answers is always preferred to a stale copy.
func TestStaleIfError(t *testing.T) {
	const localTTL, bound = time.Minute, 5 * time.Minute
	type step struct {
		at   time.Duration // since the copy was read
		down bool
		want string // "v1", "v2", "notfound", "unavailable"
	}
	for _, tc := range []struct {
		name         string
		staleIfError time.Duration
		setup        func(s *memStore) // at the first step's time, before its read
		steps        []step
	}{
		{"within-bound", bound, nil, []step{
			{at: localTTL / 2, down: true, want: "v1"},
			{at: localTTL + time.Second, down: true, want: "v1"},
			{at: localTTL + bound - time.Second, down: true, want: "v1"},
		}},
		{"past-bound", bound, nil, []step{
			{at: localTTL + time.Second, down: true, want: "v1"},
			{at: localTTL + bound, down: true, want: "unavailable"},
		}},
		{"option-off", 0, nil, []step{
			{at: localTTL - time.Second, down: true, want: "v1"},
			{at: localTTL, down: true, want: "unavailable"},
		}},
		{"store-answers-new-value", bound, func(s *memStore) { s.store("k", record(t, "v2")) }, []step{
			{at: localTTL + time.Second, want: "v2"},
		}},
		{"store-answers-gone", bound, func(s *memStore) { delete(s.recs, "k") }, []step{
			{at: localTTL + time.Second, want: "notfound"},
			{at: localTTL + 2*time.Second, down: true, want: "unavailable"},
		}},
	} {
		for _, via := range []string{"get", "take"} {
			t.Run(tc.name+"/"+via, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					s := newMemStore()
					ctx := context.Background()
					c, err := New[string](ctx, s, Options[string]{TTL: time.Hour, LocalTTL: localTTL, StaleIfError: tc.staleIfError})
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					s.store("k", record(t, "v1"))
					if v, err := c.Get(ctx, "k"); err != nil || v != "v1" {
						t.Fatalf("first Get = %q, %v; want v1", v, err)
					}
					start := time.Now()
					loads := 0
					for i, st := range tc.steps {
						time.Sleep(start.Add(st.at).Sub(time.Now()))
						if i == 0 && tc.setup != nil {
							tc.setup(s)
						}
						s.mu.Lock()
						s.down = st.down
						s.mu.Unlock()
						var v string
						var err error
						loadsBefore := loads
						if via == "get" {
							v, err = c.Get(ctx, "k")
						} else {
							v, err = c.Take(ctx, "k", func(context.Context) (string, error) {
								loads++
								return "", ErrUnavailable // a loader that fails tells the outcome apart
							})
						}
						got := v
						switch {
						case errors.Is(err, ErrNotFound):
							got = "notfound"
						case errors.Is(err, ErrUnavailable):
							got = "unavailable"
						case err != nil:
							got = err.Error()
						}
						if via == "take" && st.want == "notfound" {
							// Take loads a key the store lacks; this loader fails.
							st.want = "unavailable"
						}
						if got != st.want {
							t.Errorf("%s at %v after the read (store down: %v) = %q, want %q", via, st.at, st.down, got, st.want)
						}
						if st.want == "v1" && loads != loadsBefore {
							t.Errorf("take at %v ran its loader, want the copy served without it", st.at)
						}
					}
					staleWant := uint64(0)
					for _, st := range tc.steps {
						if st.down && st.at >= localTTL && st.want == "v1" {
							staleWant++
						}
					}
					if got := c.Stats().StaleHits; got != staleWant {
						t.Errorf("Stats().StaleHits = %d, want %d", got, staleWant)
					}
				})
			})
		}
	}
}
