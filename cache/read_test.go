package cache

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// stamped is a value that names its key and its version, so that a reader
// can tell a foreign or torn value from a current one.
type stamped struct {
	key, ver uint64
	check    uint64 // key ^ ver ^ stampedMagic: a torn copy breaks it
}

const stampedMagic = 0x5eed5eed5eed5eed

func newStamped(key, ver uint64) stamped { return stamped{key, ver, key ^ ver ^ stampedMagic} }

func (s stamped) valid() bool { return s.check == s.key^s.ver^stampedMagic }

// raceReads runs writers that overwrite, delete and re-insert their own keys
// with versions that only grow (under a Limit small enough to evict, and
// TTLs short enough to expire meanwhile) against lock-free readers, which
// check every value they get: it is the key's own, whole, and never older
// than a writer's version they saw before. Readers also Take, whose loads
// store version 0 (outside the writers' sequence). unwrap turns a V into the stamped value.
func raceReads[V any](t *testing.T, wrap func(stamped) V, unwrap func(V) stamped) {
	const (
		keys    = 512
		writers = 2
		readers = 2
	)
	ops := 100_000
	if raceEnabled {
		ops = 10_000
	}
	c := newCache(t, Options[uint64, V]{TTL: time.Millisecond, Limit: 200, Resolution: time.Millisecond})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 2))
			ver := make([]uint64, keys)
			for range ops {
				k := uint64(r.IntN(keys/writers)*writers + w) // this writer's keys only
				ver[k]++
				v := wrap(newStamped(k, ver[k]))
				switch op := r.IntN(10); {
				case op < 6:
					c.Set(k, v)
				case op < 8:
					// Mostly longer than the test, sometimes expiring
					// while readers look.
					c.SetWithExpire(k, v, time.Duration(r.IntN(4000))*time.Microsecond)
				case op < 9:
					c.Delete(k)
				default:
					c.Touch(k)
				}
			}
		})
	}
	for g := range readers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 3))
			seen := make([]uint64, keys)
			for i := range ops {
				k := uint64(r.IntN(keys))
				var v V
				var ok bool
				if i%4 == 0 {
					var err error
					v, err = c.Take(k, func() (V, error) { return wrap(newStamped(k, 0)), nil })
					ok = err == nil
				} else {
					v, ok = c.Get(k)
				}
				if !ok {
					continue
				}
				s := unwrap(v)
				switch {
				case !s.valid():
					t.Errorf("Get(%d) = %+v: torn value", k, s)
					return
				case s.key != k:
					t.Errorf("Get(%d) = %+v: another key's value", k, s)
					return
				case s.ver == 0:
					// A reader's load (ours or the other's): not in the
					// writer's sequence.
				case s.ver < seen[k]:
					t.Errorf("Get(%d) = version %d after version %d: went back in time", k, s.ver, seen[k])
					return
				}
				seen[k] = max(seen[k], s.ver)
			}
		})
	}
	wg.Wait()
	c.c.sched.Stop() // hold the structure still: entries go on expiring in real time
	checkInvariants(t, c, 200, false)
}

// TestReadersSeeOldOrNewValueNeverAnothers races lock-free Gets and Take
// hits with overwrites, deletes, evictions (nodes are never recycled for
// another key) and expiry, for a value without pointers and one with.
func TestReadersSeeOldOrNewValueNeverAnothers(t *testing.T) {
	t.Run("inline", func(t *testing.T) {
		raceReads(t, func(s stamped) stamped { return s }, func(v stamped) stamped { return v })
	})
	t.Run("boxed", func(t *testing.T) {
		raceReads(t, func(s stamped) *stamped { return &s }, func(v *stamped) stamped {
			if v == nil {
				return stamped{check: 1} // invalid
			}
			return *v
		})
	})
}

// TestEvictionCancelsTimers: nodes and their timers are not recycled, so
// an eviction cancels the victim's timer; the wheel then holds one timer
// per live entry, not a dead node per eviction until its deadline (which
// would pin evicted entries for a whole TTL).
func TestEvictionCancelsTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCache(t, Options[int, int]{TTL: time.Hour, Limit: 100})
		for k := range 10_000 {
			c.Set(k, k)
		}
		synctest.Wait()
		if got := c.c.sched.Len(); got != 100 {
			t.Errorf("wheel holds %d timers after 10000 inserts under Limit 100, want 100", got)
		}
		if st := c.Stats(); st.Evicted != 9900 {
			t.Errorf("Stats().Evicted = %d, want 9900", st.Evicted)
		}
		checkInvariants(t, c, 100, true)
	})
}

// TestIndexShrinksAfterMassExpiry: the shards' tables give their slots back
// when their entries expire (a Go map never shrinks).
func TestIndexShrinksAfterMassExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 20_000
		res := 10 * time.Millisecond
		c := newCache(t, Options[int, int]{TTL: time.Second, Resolution: res})
		slots := func() int {
			total := 0
			for s := range c.c.made() {
				s.mu.Lock()
				total += s.tab.Slots()
				s.mu.Unlock()
			}
			return total
		}
		for k := range n {
			c.Set(k, k)
		}
		if got := slots(); got < n {
			t.Fatalf("%d slots for %d entries, want at least one each", got, n)
		}
		time.Sleep(time.Second + res)
		synctest.Wait()
		if got := c.Len(); got != 0 {
			t.Fatalf("Len() = %d after every deadline, want 0", got)
		}
		if got, want := slots(), 8*len(c.c.shards); got > want {
			t.Errorf("%d slots after the mass expiry, want at most %d (8 per shard)", got, want)
		}
		checkInvariants(t, c, 0, true)
	})
}

// TestStatsCountConcurrentReads: the striped hit and miss counters lose
// nothing under concurrency.
func TestStatsCountConcurrentReads(t *testing.T) {
	c := newCache(t, Options[int, int]{TTL: time.Hour})
	c.Set(1, 1)
	const goroutines, reads = 8, 1000
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range reads {
				c.Get(1)
				c.Get(2)
			}
		})
	}
	wg.Wait()
	st := c.Stats()
	if st.Hits != goroutines*reads || st.Misses != goroutines*reads {
		t.Errorf("Stats() hits %d, misses %d; want %d each", st.Hits, st.Misses, goroutines*reads)
	}
}

// dated is a value that learns, after the Set that stored it returns, an
// upper bound of its deadline (MaxInt64 for a Set with the hour-long TTL) (the writer's clock after the Set, plus the
// ttl; with no jitter the deadline is the Set's own reading plus the ttl).
type dated struct {
	key   int
	bound atomic.Int64 // 0 until known; ns since the cache's origin
}

// TestReaderNeverReturnsExpiredDuringOverwrite races readers with a writer
// that keeps replacing hour-long values by ones with a ttl of nanoseconds
// or microseconds (an earlier deadline) and back. Each reader reads the
// clock before each Get and fails if the value it got is another key's or
// has a deadline bound at or before that reading: a short-lived value that
// has expired must not be returned, however the Get interleaves with the
// overwrites around it (see cache.lookup: a node's value and deadline belong together).
func TestReaderNeverReturnsExpiredDuringOverwrite(t *testing.T) {
	const keys = 4
	ops := 200_000
	if raceEnabled {
		ops = 20_000
	}
	c := newCache(t, Options[int, *dated]{TTL: time.Hour, Resolution: time.Millisecond})
	in := c.c
	var stop atomic.Bool
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		r := rand.New(rand.NewPCG(1, 2))
		for i := 0; !stop.Load(); i++ {
			k := r.IntN(keys)
			if i%2 == 0 {
				v := &dated{key: k}
				v.bound.Store(math.MaxInt64)
				c.Set(k, v)
				continue
			}
			ttl := time.Duration(1 + r.IntN(3000))
			v := &dated{key: k}
			c.SetWithExpire(k, v, ttl)
			v.bound.Store(in.now() + int64(ttl))
		}
	}()
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 3))
			for range ops {
				k := r.IntN(keys)
				before := in.now()
				v, ok := c.Get(k)
				if !ok {
					continue
				}
				if v.key != k {
					t.Errorf("Get(%d) returned key %d's value", k, v.key)
					return
				}
				b := v.bound.Load()
				for b == 0 { // the writer is between its Set and its Store
					runtime.Gosched()
					b = v.bound.Load()
				}
				if b <= before {
					t.Errorf("Get(%d) at >= %v returned a value whose deadline is <= %v", k, time.Duration(before), time.Duration(b))
					return
				}
			}
		})
	}
	wg.Wait()
	stop.Store(true)
	<-writer
}

// TestWordValueReaderNeverReturnsExpired is
// TestReaderNeverReturnsExpiredDuringOverwrite for a word value (see
// wordValue), which a write with a later deadline stores in place: a
// writer alternates hour-long values (in place after a shorter one) with
// ones of nanoseconds or microseconds (an earlier deadline: a new node)
// and Touches, which give the TTL of 3µs (in place after a shorter
// deadline, a new node after an hour-long one). A value is key<<32 | write
// number, and the writer records an upper bound of each value's deadline
// once its write has returned (and, for a Touch, a lenient bound while it
// runs, and when it shortened the value's life); readers fail on another
// key's value or one whose bound is at or before the clock reading they
// took before the Get.
func TestWordValueReaderNeverReturnsExpired(t *testing.T) {
	if !wordValue[uint64]() {
		t.Fatal("uint64 is not a word value")
	}
	readerNeverReturnsExpired(t, func(v uint64) uint64 { return v }, func(v uint64) (uint64, bool) { return v, true })
}

// TestBoxedValueReaderNeverReturnsExpired is
// TestWordValueReaderNeverReturnsExpired for a value that is not a word,
// a [2]uint64, which its first overwrite boxes and later ones with a later
// deadline store in place (a new box in the node, then the deadline; see
// boxed): v and ^v, so that readers also fail on a torn value.
func TestBoxedValueReaderNeverReturnsExpired(t *testing.T) {
	if wordValue[[2]uint64]() {
		t.Fatal("[2]uint64 is a word value")
	}
	readerNeverReturnsExpired(t, func(v uint64) [2]uint64 { return [2]uint64{v, ^v} },
		func(v [2]uint64) (uint64, bool) { return v[0], v[1] == ^v[0] })
}

// TestPointerValueReaderNeverReturnsExpired is
// TestWordValueReaderNeverReturnsExpired for a word value that is one
// pointer (see pointerValue), stored in place without a box.
func TestPointerValueReaderNeverReturnsExpired(t *testing.T) {
	if !wordValue[*uint64]() || !pointerValue[*uint64]() {
		t.Fatal("*uint64 is not a pointer word value")
	}
	readerNeverReturnsExpired(t, func(v uint64) *uint64 { return &v }, func(v *uint64) (uint64, bool) { return *v, true })
}

// readerNeverReturnsExpired runs the writer and readers of
// TestWordValueReaderNeverReturnsExpired with values of type V: enc makes
// the value of a number, dec gives it back and whether it is whole.
func readerNeverReturnsExpired[V any](t *testing.T, enc func(uint64) V, dec func(V) (uint64, bool)) {
	const keys = 4
	writes := 400_000
	if raceEnabled {
		writes = 40_000
	}
	const ttl = 3 * time.Microsecond // Touch's: earlier than an hour, later than a nanosecond
	c := newCache(t, Options[int, V]{TTL: ttl, Resolution: time.Millisecond})
	in := c.c
	bounds := make([]atomic.Int64, writes+1)
	// A Touch that shortens a value's life: when it returned, and the
	// bound of the deadline it gave (the latest such Touch of each value).
	touchedAt, touchBound := make([]atomic.Int64, writes+1), make([]atomic.Int64, writes+1)
	var done atomic.Bool
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		defer done.Store(true)
		r := rand.New(rand.NewPCG(5, 6))
		var last [keys]int // the write whose value each key holds, if any
		for i := 1; i <= writes; i++ {
			k := r.IntN(keys)
			v := enc(uint64(k)<<32 | uint64(i))
			switch i % 3 {
			case 0:
				c.SetWithExpire(k, v, time.Hour)
				bounds[i].Store(math.MaxInt64)
				last[k] = i
			case 1:
				short := time.Duration(1 + r.IntN(3000))
				c.SetWithExpire(k, v, short)
				bounds[i].Store(in.now() + int64(short))
				last[k] = i
			case 2:
				bounds[i].Store(math.MaxInt64) // no value of its own
				if j := last[k]; j != 0 {
					b := &bounds[j]
					prev := b.Load()
					b.Store(math.MaxInt64)
					touchedAt[j].Store(0) // no earlier Touch's bound holds during this one
					if c.Touch(k) {
						now := in.now()
						b.Store(max(prev, now+int64(ttl)))
						touchBound[j].Store(now + int64(ttl))
						touchedAt[j].Store(now)
					} else {
						b.Store(prev)
					}
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for !done.Load() {
				k := r.IntN(keys)
				before := in.now()
				got, ok := c.Get(k)
				if !ok {
					continue
				}
				v, whole := dec(got)
				if !whole {
					t.Errorf("Get(%d) = %v: torn value", k, got)
					return
				}
				if int(v>>32) != k {
					t.Errorf("Get(%d) returned key %d's value", k, v>>32)
					return
				}
				i := v & (1<<32 - 1)
				b := bounds[i].Load()
				for b == 0 { // the writer is between its Set and its Store
					runtime.Gosched()
					b = bounds[i].Load()
				}
				if at := touchedAt[i].Load(); at != 0 && at < before {
					// The Get began after a Touch that shortened the value's life.
					b = min(b, touchBound[i].Load())
				}
				if b <= before {
					t.Errorf("Get(%d) at >= %v returned a value whose deadline is <= %v", k, time.Duration(before), time.Duration(b))
					return
				}
			}
		})
	}
	wg.Wait()
	<-writer
	c.c.sched.Stop()
	checkInvariants(t, c, 0, false)
}
