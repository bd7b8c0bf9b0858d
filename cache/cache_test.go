package cache

import (
	"cmp"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// newCache returns a cache that the test closes when it ends.
func newCache[K comparable, V any](t testing.TB, opts Options[K, V]) *Cache[K, V] {
	t.Helper()
	c, err := New(opts)
	if err != nil {
		t.Fatalf("New(%+v): %v", opts, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// recorder collects OnEvict events.
type recorder[K comparable, V any] struct {
	mu     sync.Mutex
	events []Event[K, V]
}

func (r *recorder[K, V]) on(e Event[K, V]) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// peek returns the events recorded since the last take, keeping them.
func (r *recorder[K, V]) peek() []Event[K, V] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recorder[K, V]) take() []Event[K, V] {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := r.events
	r.events = nil
	return ev
}

func wantGet[K comparable, V comparable](t *testing.T, c *Cache[K, V], key K, want V, wantOK bool) {
	t.Helper()
	got, ok := c.Get(key)
	if ok != wantOK || got != want {
		t.Errorf("Get(%v) = %v, %v; want %v, %v", key, got, ok, want, wantOK)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options[string, int]
	}{
		{"zero TTL", Options[string, int]{}},
		{"negative TTL", Options[string, int]{TTL: -time.Second}},
		{"negative Limit", Options[string, int]{TTL: time.Second, Limit: -1}},
		{"negative Jitter", Options[string, int]{TTL: time.Second, Jitter: -0.1}},
		{"Jitter one", Options[string, int]{TTL: time.Second, Jitter: 1}},
		{"Jitter NaN", Options[string, int]{TTL: time.Second, Jitter: math.NaN()}},
		{"negative Resolution", Options[string, int]{TTL: time.Second, Resolution: -time.Millisecond}},
		{"sub-millisecond Resolution", Options[string, int]{TTL: time.Second, Resolution: time.Microsecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.opts)
			if !errors.Is(err, ErrOptions) {
				t.Errorf("New: got %v, %v; want error wrapping ErrOptions", c, err)
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	tests := []struct {
		name    string
		ttl     time.Duration
		res     time.Duration
		wantRes time.Duration
	}{
		{"short TTL clamps to 10ms", 200 * time.Millisecond, 0, 10 * time.Millisecond},
		{"TTL/100", 5 * time.Second, 0, 50 * time.Millisecond},
		{"long TTL clamps to 1s", time.Hour, 0, time.Second},
		{"explicit", time.Hour, 3 * time.Millisecond, 3 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache(t, Options[int, int]{TTL: tt.ttl, Resolution: tt.res})
			if c.c.res != tt.wantRes {
				t.Errorf("resolution = %v, want %v", c.c.res, tt.wantRes)
			}
		})
	}
}

func TestShardCountAndLimitSplit(t *testing.T) {
	tests := []struct {
		name  string
		procs int
		limit int64
		want  int
	}{
		{"unbounded, 2 procs", 2, 0, 16},
		{"unbounded, 8 procs", 8, 0, 16},
		{"unbounded, 64 procs", 64, 0, 64},
		{"unbounded, 4096 procs caps", 4096, 0, 1024},
		{"tiny limit gets one shard", 2, 10, 1},
		{"limit 127 gets one shard", 2, 127, 1},
		{"limit 128 gets two", 2, 128, 2},
		{"limit 100k", 2, 100_000, 16},
		{"MaxWeight 2^40, 64 procs", 64, 1 << 40, 64},
		{"MaxWeight 2^40, 4096 procs caps", 4096, 1 << 40, 1024},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := shardCount(tt.procs, tt.limit); got != tt.want {
				t.Errorf("shardCount(%d, %d) = %d, want %d", tt.procs, tt.limit, got, tt.want)
			}
		})
	}
	for _, limit := range []int{1, 7, 128, 1000, 100_003} {
		c := newCache(t, Options[int, int]{TTL: time.Hour, Limit: limit})
		checkInvariants(t, c, limit, false)
	}
}

func TestGetNeverReturnsExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A coarse wheel, so the expired entry is still held when read.
		// Deadline 1.5s; the wheel reclaims at 2s.
		c := newCache(t, Options[string, int]{TTL: 1500 * time.Millisecond, Resolution: time.Second})
		c.Set("k", 1)
		time.Sleep(1500*time.Millisecond - time.Nanosecond)
		wantGet(t, c, "k", 1, true)
		time.Sleep(time.Nanosecond)
		wantGet(t, c, "k", 0, false)
		if got := c.Len(); got != 1 {
			t.Errorf("Len() = %d at the deadline, want 1 (not yet reclaimed)", got)
		}
		if _, err := c.Take("k", func() (int, error) { return 2, nil }); err != nil {
			t.Fatalf("Take: %v", err)
		}
		wantGet(t, c, "k", 2, true)
	})
}

func TestNeverRemovedBeforeDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCache(t, Options[int, int]{TTL: time.Second, Resolution: 7 * time.Millisecond})
		start := time.Now()
		deadline := map[int]time.Time{}
		for k := range 200 {
			ttl := time.Duration(k+1) * 3 * time.Millisecond
			c.SetWithExpire(k, k, ttl)
			deadline[k] = start.Add(ttl)
		}
		for step := 0; step < 700; step++ {
			time.Sleep(time.Millisecond)
			synctest.Wait()
			now := time.Now()
			for k, d := range deadline {
				_, ok := c.Get(k)
				if now.Before(d) != ok {
					t.Fatalf("at %v: Get(%d) ok = %v, deadline %v", now.Sub(start), k, ok, d.Sub(start))
				}
			}
			checkInvariants(t, c, 0, true)
		}
		if got := c.Len(); got != 0 {
			t.Errorf("Len() = %d after every deadline, want 0", got)
		}
	})
}

func TestExpiredReclaimedWithinOneInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder[string, int]{}
		res := 50 * time.Millisecond
		c := newCache(t, Options[string, int]{TTL: time.Second, Resolution: res, OnEvict: rec.on})
		c.Set("a", 1) // deadline 1s: reclaimed at tick 20 (1s)
		time.Sleep(60 * time.Millisecond)
		c.Set("b", 2) // deadline 1.06s: reclaimed at tick 22 (1.1s)
		time.Sleep(time.Second - 60*time.Millisecond + res - time.Nanosecond)
		synctest.Wait()
		if got := c.Len(); got != 1 {
			t.Errorf("Len() = %d one interval after a's deadline, want 1", got)
		}
		time.Sleep(60*time.Millisecond + time.Nanosecond)
		synctest.Wait()
		if got := c.Len(); got != 0 {
			t.Errorf("Len() = %d one interval after b's deadline, want 0", got)
		}
		ev := rec.take()
		want := []Event[string, int]{{"a", 1, Expired}, {"b", 2, Expired}}
		if fmt.Sprint(ev) != fmt.Sprint(want) {
			t.Errorf("events = %v, want %v", ev, want)
		}
		if st := c.Stats(); st.Expired != 2 {
			t.Errorf("Stats().Expired = %d, want 2", st.Expired)
		}
	})
}

func TestLaterDeadlineOnlyRecorded(t *testing.T) {
	// Unit level: a later deadline from Touch arms nothing; an earlier one
	// re-arms. An overwrite replaces the node: the new one is armed, the
	// old one's timer cancelled. An int64 is a word value (see wordValue):
	// its overwrite with a later deadline goes in place and arms nothing,
	// and an earlier deadline, from a write or a Touch, replaces the node.
	// Deadlines are whole ticks of 8 ns, as dueAt makes them.
	var s shard[string, int64]
	s.init(0, false, maphash.MakeSeed(), new(atomic.Int64))
	h := s.tab.Hash("k")
	var p pending[string, int64]
	s.setLocked("k", h, 1, 1, 0, 104, &p)
	if p.arm == nil || p.armAt != 104 {
		t.Fatalf("new key: arm = %v at %d; want the node at 104", p.arm, p.armAt)
	}
	first := p.arm
	p = pending[string, int64]{}
	if !s.touchLocked("k", h, 10, 200, &p) || p.arm != nil || p.cancel != nil {
		t.Errorf("later deadline by Touch: arm = %v, cancel = %v; want neither", p.arm, p.cancel)
	}
	p = pending[string, int64]{}
	s.setLocked("k", h, 2, 1, 20, 304, &p)
	if n := s.tab.Get("k", h); p.arm != nil || p.cancel != nil || n != first || s.valueOf(n) != 2 || n.deadline() != 304 {
		t.Errorf("later deadline by Set of a word value: arm = %v, cancel = %v, same node %v, value %d, deadline %d; want neither, the same node holding 2 until 304",
			p.arm, p.cancel, n == first, s.valueOf(n), n.deadline())
	}
	if p.event != (Event[string, int64]{"k", 1, Replaced}) {
		t.Errorf("overwrite: event %v, want {k 1 Replaced}", p.event)
	}
	for _, tt := range []struct {
		name  string
		write func(p *pending[string, int64])
	}{
		{"Touch", func(p *pending[string, int64]) { s.touchLocked("k", h, 30, 248, p) }},
		{"Set", func(p *pending[string, int64]) { s.setLocked("k", h, 2, 1, 30, 200, p) }},
	} {
		old := s.tab.Get("k", h)
		p = pending[string, int64]{}
		tt.write(&p)
		n := s.tab.Get("k", h)
		if p.arm != n || p.cancel != old || n == old || old.live() || s.valueOf(n) != 2 {
			t.Errorf("earlier deadline by %s: arm = %v, cancel = %v, old node live %v, value %d; want the new node %v armed, the old %v cancelled and dead, value 2",
				tt.name, p.arm, p.cancel, old.live(), s.valueOf(n), n, old)
		}
	}
	if d := s.tab.Get("k", h).deadline(); d != 200 {
		t.Errorf("deadline %d after the earlier writes, want 200", d)
	}

	// Behaviour: the entry lives to its later deadline, and no longer.
	synctest.Test(t, func(t *testing.T) {
		res := 10 * time.Millisecond
		c := newCache(t, Options[string, int]{TTL: time.Second, Resolution: res})
		c.Set("k", 1)
		time.Sleep(500 * time.Millisecond)
		c.Set("k", 2) // deadline 1.5s
		time.Sleep(700 * time.Millisecond)
		synctest.Wait()
		wantGet(t, c, "k", 2, true)
		if got := c.Len(); got != 1 {
			t.Errorf("Len() = %d at 1.2s, want 1", got)
		}
		time.Sleep(300 * time.Millisecond)
		wantGet(t, c, "k", 0, false)
		time.Sleep(res)
		synctest.Wait()
		if got := c.Len(); got != 0 {
			t.Errorf("Len() = %d one interval after 1.5s, want 0", got)
		}
		checkInvariants(t, c, 0, true)
	})
}

func TestEarlierDeadlineRearms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := 10 * time.Millisecond
		c := newCache(t, Options[string, int]{TTL: time.Hour, Resolution: res})
		c.Set("k", 1)
		c.SetWithExpire("k", 2, time.Second)
		time.Sleep(time.Second - time.Nanosecond)
		wantGet(t, c, "k", 2, true)
		time.Sleep(time.Nanosecond)
		wantGet(t, c, "k", 0, false)
		time.Sleep(res)
		synctest.Wait()
		if got := c.Len(); got != 0 {
			t.Errorf("Len() = %d one interval after the earlier deadline, want 0", got)
		}
	})
}

func TestSetWithExpireNonPositiveDeletes(t *testing.T) {
	for _, ttl := range []time.Duration{0, -time.Second} {
		t.Run(fmt.Sprint(ttl), func(t *testing.T) {
			rec := &recorder[string, int]{}
			c := newCache(t, Options[string, int]{TTL: time.Hour, OnEvict: rec.on})
			c.Set("k", 1)
			c.SetWithExpire("k", 2, ttl)
			wantGet(t, c, "k", 0, false)
			c.SetWithExpire("new", 3, ttl)
			wantGet(t, c, "new", 0, false)
			if got := c.Len(); got != 0 {
				t.Errorf("Len() = %d, want 0", got)
			}
			if ev, want := rec.take(), []Event[string, int]{{"k", 1, Deleted}}; fmt.Sprint(ev) != fmt.Sprint(want) {
				t.Errorf("events = %v, want %v", ev, want)
			}
		})
	}
}

func TestJitterBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCache(t, Options[int, int]{TTL: time.Second, Jitter: 0.1, Resolution: time.Millisecond})
		for k := range 1000 {
			c.Set(k, k)
		}
		time.Sleep(900*time.Millisecond - time.Nanosecond)
		if got := c.Len(); got != 1000 {
			t.Errorf("Len() = %d just before 0.9 TTL, want 1000", got)
		}
		time.Sleep(200*time.Millisecond + time.Millisecond)
		synctest.Wait()
		if got := c.Len(); got != 0 {
			t.Errorf("Len() = %d after 1.1 TTL + resolution, want 0", got)
		}
		if st := c.Stats(); st.Expired != 1000 {
			t.Errorf("Stats().Expired = %d, want 1000", st.Expired)
		}
	})
}

// TestDeletedAndReplacedValuesNotPinned: a value that left the cache
// (deleted, overwritten, evicted) is garbage once the expiry engine has
// dropped its entry's timer; nothing in the cache keeps it.
func TestDeletedAndReplacedValuesNotPinned(t *testing.T) {
	c := newCache(t, Options[string, *[64]byte]{TTL: time.Hour, Limit: 200})
	set := func(key string) weak.Pointer[[64]byte] {
		v := new([64]byte)
		c.Set(key, v)
		return weak.Make(v)
	}
	gone := map[string]weak.Pointer[[64]byte]{}
	gone["deleted"] = set("del")
	c.Delete("del")
	gone["replaced"] = set("rep")
	c.Set("rep", new([64]byte))
	c.Set("box", new([64]byte))
	gone["replaced in place"] = set("box") // boxes it (see boxed)
	c.Set("box", new([64]byte))            // a new box in the same node
	gone["evicted"] = set("victim")
	for i := range 1000 {
		c.Set(fmt.Sprint(i), new([64]byte))
	}
	if _, ok := c.Get("victim"); ok {
		t.Fatal("victim still held after 1,000 new keys in a cache of 200")
	}
	c.c.sched.Len() // the engine has taken every Cancel
	runtime.GC()
	for how, w := range gone {
		if w.Value() != nil {
			t.Errorf("%s value still reachable after a collection", how)
		}
	}
}

func TestOnEvictReasons(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder[string, int]{}
		c := newCache(t, Options[string, int]{TTL: time.Second, Limit: 2, OnEvict: rec.on})
		c.Set("a", 1)
		c.Set("a", 2) // Replaced
		c.Get("a")
		c.Get("a")
		c.Set("b", 3)
		c.Delete("b") // Deleted
		c.Delete("b") // nothing
		c.Set("c", 4)
		c.Set("d", 5) // Evicted c: a was used three times, c once
		time.Sleep(time.Second)
		c.Set("d", 6)               // Expired: d's deadline passed, not yet reclaimed
		time.Sleep(2 * time.Second) // a and d expire
		synctest.Wait()
		want := []Event[string, int]{
			{"a", 1, Replaced}, {"b", 3, Deleted}, {"c", 4, Evicted}, {"a", 2, Expired}, {"d", 5, Expired}, {"d", 6, Expired},
		}
		ev := rec.take()
		if len(ev) > 3 {
			// a's reclaim by the wheel and the Set that finds d expired
			// both happen at the 1 s instant, in either order.
			slices.SortStableFunc(ev[3:], func(x, y Event[string, int]) int {
				return cmp.Or(cmp.Compare(x.Key, y.Key), cmp.Compare(x.Value, y.Value))
			})
		}
		if fmt.Sprint(ev) != fmt.Sprint(want) {
			t.Errorf("events = %v, want %v", ev, want)
		}
		st := c.Stats()
		if st.Replaced != 1 || st.Evicted != 1 || st.Deleted != 1 || st.Expired != 3 {
			t.Errorf("Stats() = %+v, want 1 Replaced, 1 Evicted, 1 Deleted, 3 Expired", st)
		}
		for r, want := range map[Reason]string{Expired: "Expired", Evicted: "Evicted", Deleted: "Deleted", Replaced: "Replaced"} {
			if got := r.String(); got != want {
				t.Errorf("Reason(%d).String() = %q, want %q", uint8(r), got, want)
			}
		}
		if got := Reason(0).String(); got != "Reason(0)" {
			t.Errorf("Reason(0).String() = %q, want %q", got, "Reason(0)")
		}
	})
}

func TestOnEvictCalledWithoutLocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c *Cache[int, int]
		reasons := map[Reason]int{}
		var mu sync.Mutex
		onEvict := func(e Event[int, int]) {
			// Each of these takes the key's shard lock, exclusively or
			// shared: a lock held by the caller would deadlock here.
			if e.Key < 1000 && e.Reason != Evicted {
				c.Set(e.Key+1000, e.Value)
			}
			c.Get(e.Key)
			c.Delete(e.Key + 1000)
			c.Len()
			mu.Lock()
			reasons[e.Reason]++
			mu.Unlock()
		}
		var err error
		c, err = New(Options[int, int]{TTL: time.Second, Limit: 2, OnEvict: onEvict})
		if err != nil {
			t.Fatal(err)
		}
		c.Set(1, 1)
		c.Set(1, 2) // Replaced
		c.Delete(1) // Deleted
		c.Set(2, 2)
		time.Sleep(2 * time.Second) // Expired
		synctest.Wait()
		c.Set(3, 3)
		c.Set(4, 4)
		c.Set(5, 5) // Evicted
		c.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, r := range []Reason{Replaced, Deleted, Expired, Evicted} {
			if reasons[r] == 0 {
				t.Errorf("no %v event seen (got %v)", r, reasons)
			}
		}
	})
}

func TestLimitNeverExceeded(t *testing.T) {
	for _, limit := range []int{1, 3, 100, 1000} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			c := newCache(t, Options[int, int]{TTL: time.Hour, Limit: limit})
			for k := range 5 * limit {
				c.Set(k, k)
				if k%7 == 0 {
					c.Get(k / 2)
				}
				if got := c.Len(); got > limit {
					t.Fatalf("Len() = %d after %d inserts, want <= %d", got, k+1, limit)
				}
			}
			checkInvariants(t, c, limit, false)
			if st := c.Stats(); st.Evicted != uint64(4*limit) {
				t.Errorf("Stats().Evicted = %d, want %d", st.Evicted, 4*limit)
			}
		})
	}
}

func TestEvictionPrefersExpiredTail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder[int, int]{}
		c := newCache(t, Options[int, int]{TTL: time.Hour, Limit: 2, Resolution: time.Hour, OnEvict: rec.on})
		c.SetWithExpire(1, 1, time.Second)
		c.Set(2, 2)
		time.Sleep(time.Second)
		c.Get(1) // a miss, and no mark
		c.Set(3, 3)
		if ev := rec.take(); len(ev) != 1 || ev[0] != (Event[int, int]{1, 1, Expired}) {
			t.Errorf("events = %v, want {1 1 Expired}", ev)
		}
	})
}

func TestCloseIdempotentAndAfterClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder[string, int]{}
		c, err := New(Options[string, int]{TTL: time.Second, OnEvict: rec.on})
		if err != nil {
			t.Fatal(err)
		}
		c.Set("a", 1)
		c.Get("a")
		if err := c.Close(); err != nil {
			t.Errorf("first Close() = %v, want nil", err)
		}
		if err := c.Close(); !errors.Is(err, ErrClosed) {
			t.Errorf("second Close() = %v, want ErrClosed", err)
		}
		wantGet(t, c, "a", 0, false)
		c.Set("b", 2)
		c.SetWithExpire("b", 2, time.Minute)
		c.Delete("a")
		if got := c.Len(); got != 0 {
			t.Errorf("Len() after Close = %d, want 0", got)
		}
		called := false
		if _, err := c.Take("b", func() (int, error) { called = true; return 1, nil }); !errors.Is(err, ErrClosed) || called {
			t.Errorf("Take after Close: err %v, fetch called %v; want ErrClosed, false", err, called)
		}
		for k := range c.All() {
			t.Errorf("All after Close yielded %q", k)
		}
		if st := c.Stats(); st.Hits != 1 {
			t.Errorf("Stats().Hits after Close = %d, want 1", st.Hits)
		}
		if ev := rec.take(); len(ev) != 0 {
			t.Errorf("Close reported %v to OnEvict, want nothing", ev)
		}
		checkInvariants(t, c, 0, false)
		// The bubble ending without blocked goroutines proves Close
		// released the wheel and the delivery goroutine.
	})
}

func TestCloseDeliversQueuedExpiredEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var mu sync.Mutex
		var got []int
		c, err := New(Options[int, int]{TTL: time.Second, OnEvict: func(e Event[int, int]) {
			<-release
			mu.Lock()
			got = append(got, e.Key)
			mu.Unlock()
		}})
		if err != nil {
			t.Fatal(err)
		}
		for k := range 3 {
			c.Set(k, k)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		close(release)
		c.Close()
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 3 {
			t.Errorf("delivered %v before Close returned, want 3 events", got)
		}
	})
}

func TestAllYieldsLiveEntriesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCache(t, Options[int, int]{TTL: time.Hour, Resolution: time.Hour})
		for k := range 100 {
			c.Set(k, k*10)
		}
		c.SetWithExpire(1000, 0, time.Second)
		time.Sleep(time.Second) // 1000 expired, still held
		seen := map[int]int{}
		for k, v := range c.All() {
			seen[k]++
			if v != k*10 {
				t.Errorf("All yielded %d=%d, want %d", k, v, k*10)
			}
			c.Set(k, v) // yield may call the cache
		}
		if len(seen) != 100 {
			t.Errorf("All yielded %d keys, want 100", len(seen))
		}
		for k, n := range seen {
			if n != 1 {
				t.Errorf("All yielded %d %d times", k, n)
			}
		}
		n := 0
		c.Range(func(int, int) bool { n++; return n < 10 })
		if n != 10 {
			t.Errorf("Range went on for %d calls after false, want 10", n)
		}
	})
}

func TestStatsCountHitsMissesLoads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { // fetches take no time
		c := newCache(t, Options[string, int]{TTL: time.Hour})
		c.Set("a", 1)
		c.Get("a")
		c.Get("b")
		c.Take("a", func() (int, error) { return 0, nil })
		c.Take("c", func() (int, error) { return 3, nil })
		c.Take("d", func() (int, error) { return 0, errors.New("boom") })
		st := c.Stats()
		want := Stats{Hits: 2, Misses: 3, Sets: 2, Loads: 2, LoadErrors: 1, LoadTime: timingwheel.Durations{Count: 2, Buckets: [7]uint64{2}}}
		if st != want {
			t.Errorf("Stats() = %+v, want %+v", st, want)
		}
		if got := st.HitRatio(); got != 0.4 {
			t.Errorf("HitRatio() = %v, want 0.4", got)
		}
		if got := (Stats{}).HitRatio(); got != 0 {
			t.Errorf("zero HitRatio() = %v, want 0", got)
		}
	})
}

func TestHotPathsDoNotAllocate(t *testing.T) {
	c := newCache(t, Options[int, int]{TTL: time.Hour})
	c.Set(1, 1)
	if n := testing.AllocsPerRun(1000, func() { c.Get(1) }); n != 0 {
		t.Errorf("Get hit: %v allocs, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() { c.Get(2) }); n != 0 {
		t.Errorf("Get miss: %v allocs, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() { c.Peek(1); c.Remaining(1); c.GetOrSet(1, 1) }); n != 0 {
		t.Errorf("Peek, Remaining and GetOrSet hits: %v allocs, want 0", n)
	}
	// A 64-bit int is a word value (see wordValue): an overwrite with a
	// later deadline goes in place. Another V's overwrite (a 32-bit
	// platform's int too) replaces the node, so that lock-free readers of
	// the old value never see it change.
	want := 1.0
	if wordValue[int]() {
		want = 0
	}
	if n := testing.AllocsPerRun(1000, func() { c.Set(1, 2) }); n != want {
		t.Errorf("Set overwrite of an int: %v allocs, want %v (in place for a word value, else a new node)", n, want)
	}
	strs := newCache(t, Options[int, string]{TTL: time.Hour})
	if n := testing.AllocsPerRun(1000, func() { strs.Set(1, "v") }); n != 1 {
		t.Errorf("Set overwrite of a string: %v allocs, want 1 (the new node)", n)
	}
	// Insertion into a full cache: the new node, nothing else (its timer
	// is part of it; the victim's is cancelled).
	full := newCache(t, Options[int, int]{TTL: time.Hour, Limit: 64})
	k := 0
	if n := testing.AllocsPerRun(1000, func() { k++; full.Set(k, k) }); n != 1 {
		t.Errorf("Set of a new key into a full cache: %v allocs, want 1 (the node)", n)
	}
	if n := testing.AllocsPerRun(1000, func() { c.Take(1, func() (int, error) { return 0, nil }) }); n != 0 {
		t.Errorf("Take hit: %v allocs, want 0", n)
	}
}

func TestString(t *testing.T) {
	if got := newCache(t, Options[int, int]{TTL: time.Hour}).String(); got != "cache" {
		t.Errorf("String() = %q, want %q", got, "cache")
	}
	if got := newCache(t, Options[int, int]{TTL: time.Hour, Name: "users"}).String(); got != "cache users" {
		t.Errorf("String() = %q, want %q", got, "cache users")
	}
}

// TestLenTakesNoLock pins that Len never waits for a shard lock: a caller
// that polls Len (a metrics scrape) must not queue behind the expiry engine
// or a writer, nor hold up the writers queued behind it.
func TestLenTakesNoLock(t *testing.T) {
	c := newCache(t, Options[int, int]{TTL: time.Hour})
	for i := range 100 {
		c.Set(i, i)
	}
	for s := range c.c.made() {
		s.mu.Lock()
	}
	got := make(chan int, 1)
	go func() { got <- c.Len() }()
	select {
	case n := <-got:
		if n != 100 {
			t.Errorf("Len = %d, want 100", n)
		}
	case <-time.After(10 * time.Second):
		t.Error("Len waited for a shard lock")
	}
	for s := range c.c.made() {
		s.mu.Unlock()
	}
}
