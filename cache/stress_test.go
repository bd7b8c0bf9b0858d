package cache

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestRacingWritesAllExpire pins go-zero's lost-timer bug: there, Del
// cancels the timer after unlocking, so a Set racing with it keeps its
// entry but loses its timer and lives forever. Here goroutines race Set,
// SetWithExpire (later, earlier and non-positive TTLs), Delete, Take and
// expiry on a small key space; once they stop and every deadline has
// passed, every key must have expired: Len() == 0 and the wheel is empty.
func TestRacingWritesAllExpire(t *testing.T) {
	tests := []struct {
		name   string
		limit  int
		jitter float64
	}{
		{"unbounded", 0, 0},
		{"bounded", 64, 0},
		{"jitter", 0, 0.2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const (
					keys       = 256
					goroutines = 8
					ops        = 1500
					ttl        = 50 * time.Millisecond
				)
				res := time.Millisecond
				c := newCache(t, Options[int, int]{TTL: ttl, Limit: tt.limit, Jitter: tt.jitter, Resolution: res})
				boom := errors.New("boom")
				var wg sync.WaitGroup
				for g := range goroutines {
					wg.Go(func() {
						r := rand.New(rand.NewPCG(uint64(g), 1))
						for i := range ops {
							k := r.IntN(keys)
							switch op := r.IntN(100); {
							case op < 30:
								c.Set(k, i)
							case op < 45:
								c.SetWithExpire(k, i, time.Duration(r.IntN(int(2*ttl))))
							case op < 65:
								c.Delete(k)
							case op < 85:
								c.Take(k, func() (int, error) {
									if r.IntN(4) == 0 {
										return 0, boom
									}
									runtime.Gosched()
									return i, nil
								})
							default:
								c.Get(k)
							}
							if i%50 == 0 {
								time.Sleep(time.Duration(r.IntN(int(ttl / 5))))
							}
						}
					})
				}
				wg.Wait()
				synctest.Wait()
				checkInvariants(t, c, tt.limit, true)
				time.Sleep(time.Duration(float64(2*ttl)*(1+tt.jitter)) + res)
				synctest.Wait()
				if got := c.Len(); got != 0 {
					t.Errorf("Len() = %d after every deadline, want 0", got)
				}
				if got := c.c.sched.Len(); got != 0 {
					t.Errorf("wheel holds %d timers after every deadline, want 0", got)
				}
				checkInvariants(t, c, tt.limit, true)
			})
		})
	}
}

// TestMassExpiry expires many keys at one tick while other goroutines go
// on reading and writing: everything is reclaimed, nothing live is lost.
// (Latency under mass expiry is measured by BenchmarkMassExpiry.)
func TestMassExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := 200_000
		if testing.Short() || raceEnabled {
			n = 20_000
		}
		res := 10 * time.Millisecond
		c := newCache(t, Options[int, int]{TTL: time.Second, Resolution: res})
		for k := range n {
			c.Set(k, k)
		}
		time.Sleep(time.Second - time.Millisecond)
		var wg sync.WaitGroup
		wg.Go(func() {
			// Writes a fresh key space across the expiry; each must
			// survive it.
			for k := range 1000 {
				c.Set(n+k, k)
				if k%100 == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		})
		wg.Wait()
		time.Sleep(res)
		synctest.Wait()
		if got := c.Len(); got != 1000 {
			t.Errorf("Len() = %d after the mass expiry, want the 1000 later keys", got)
		}
		for k := range 1000 {
			if v, ok := c.Get(n + k); !ok || v != k {
				t.Fatalf("Get(%d) = %d, %v after the mass expiry; want %d, true", n+k, v, ok, k)
			}
		}
		if st := c.Stats(); st.Expired != uint64(n) {
			t.Errorf("Stats().Expired = %d, want %d", st.Expired, n)
		}
		checkInvariants(t, c, 0, true)
	})
}

// TestDroppedCacheReleasesGoroutines checks the cleanup: a cache the user
// drops without Close stops its goroutines once it is collected. The test
// keeps the inner state, which the goroutines reference anyway, and waits
// for its event goroutine to have exited (close stops the wheel first and
// waits for both).
func TestDroppedCacheReleasesGoroutines(t *testing.T) {
	var inner []*cache[string, int]
	func() {
		for i := range 3 {
			c, err := New(Options[string, int]{TTL: time.Minute, Name: fmt.Sprint(i), OnEvict: func(Event[string, int]) {}})
			if err != nil {
				t.Fatal(err)
			}
			c.Set("k", i)
			inner = append(inner, c.c)
		}
	}()
	for i := 0; ; i++ {
		runtime.GC()
		runtime.Gosched()
		stopped := 0
		for _, c := range inner {
			select {
			case <-c.notify.done():
				stopped++
			default:
			}
		}
		if stopped == len(inner) {
			break
		}
		if i == 10_000 {
			t.Fatalf("%d of %d dropped caches stopped after %d collections", stopped, len(inner), i)
		}
	}
	for i, c := range inner {
		if err := c.sched.Schedule(&new(node[string, int]).timer, time.Second); err == nil {
			t.Errorf("cache %d: wheel still accepts commands after the cleanup", i)
		}
	}
}
