package collection

import (
	"errors"
	"math"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ttlkit/ttlkit/cache"
	"github.com/ttlkit/ttlkit/timingwheel"
)

func TestCacheGoZeroAPI(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := NewCache(time.Minute, WithLimit(2), WithName("users"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Set("a", 1)
		if v, ok := c.Get("a"); !ok || v != 1 {
			t.Errorf(`Get("a") = %v, %v; want 1, true`, v, ok)
		}
		v, err := c.Take("b", func() (any, error) { return 2, nil })
		if err != nil || v != 2 {
			t.Errorf(`Take("b") = %v, %v; want 2, nil`, v, err)
		}
		c.Set("c", 3) // over the limit of 2: one entry goes
		if n := c.Len(); n != 2 {
			t.Errorf("Len = %d, want 2", n)
		}
		c.Del("c")
		if _, ok := c.Get("c"); ok {
			t.Error(`Get("c") after Del: present`)
		}
	})
}

func TestCacheNeverReturnsExpired(t *testing.T) {
	// go-zero's Get returns whatever its wheel has not removed yet, and the
	// wheel removes entries by counted ticks: late whenever ticks are
	// delayed. Ours checks the deadline on every Get.
	synctest.Test(t, func(t *testing.T) {
		c, err := NewCache(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Set("k", "v")
		time.Sleep(1050 * time.Millisecond) // past the TTL even with +5% jitter
		if v, ok := c.Get("k"); ok {
			t.Errorf(`Get("k") after its TTL = %v, true; want a miss`, v)
		}
	})
}

func TestCacheNonPositiveTTL(t *testing.T) {
	if _, err := NewCache(0); !errors.Is(err, cache.ErrOptions) {
		t.Errorf("NewCache(0): got %v, want ErrOptions", err)
	}
	if _, err := NewCache(-time.Second); !errors.Is(err, cache.ErrOptions) {
		t.Errorf("NewCache(-1s): got %v, want ErrOptions", err)
	}
	synctest.Test(t, func(t *testing.T) {
		c, err := NewCache(time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Set("k", 1)
		c.SetWithExpire("k", 2, 0) // go-zero keeps this forever
		if v, ok := c.Get("k"); ok {
			t.Errorf("Get after SetWithExpire(0) = %v, true; want a miss", v)
		}
	})
}

func TestCacheTakePanicReachesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := NewCache(time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		release := make(chan struct{})
		waiterErr := make(chan error)
		loaderPanic := make(chan any)
		go func() {
			defer func() { loaderPanic <- recover() }()
			c.Take("k", func() (any, error) { <-release; panic("boom") })
		}()
		synctest.Wait() // the loader is inside fetch
		go func() {
			_, err := c.Take("k", func() (any, error) { return "unused", nil })
			waiterErr <- err
		}()
		synctest.Wait() // the waiter is waiting for the loader
		close(release)
		if r := <-loaderPanic; r == nil {
			t.Error("loader did not panic")
		}
		var pe *timingwheel.PanicError
		if err := <-waiterErr; !errors.As(err, &pe) {
			t.Errorf("waiter got %v, want a *timingwheel.PanicError (go-zero returns nil, nil)", err)
		}
	})
}

func TestCacheCloseTwice(t *testing.T) {
	c, err := NewCache(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := c.Close(); !errors.Is(err, cache.ErrClosed) {
		t.Errorf("second Close: got %v, want cache.ErrClosed", err)
	}
	if _, err := c.Take("k", func() (any, error) { return 1, nil }); !errors.Is(err, cache.ErrClosed) {
		t.Errorf("Take after Close: got %v, want cache.ErrClosed", err)
	}
}

// TestCacheMaxInt64Expire: NewCache(math.MaxInt64), a common "forever",
// always applies go-zero's 5% jitter; the jittered TTL overflowed and about
// half the Sets were dropped at once.
func TestCacheMaxInt64Expire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := NewCache(math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		const n = 200
		for i := range n {
			c.Set(strconv.Itoa(i), i)
			c.SetWithExpire("e"+strconv.Itoa(i), i, math.MaxInt64)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := c.Len(); got != 2*n {
			t.Errorf("Len() = %d an hour later, want %d", got, 2*n)
		}
		for i := range n {
			if v, ok := c.Get(strconv.Itoa(i)); !ok || v != i {
				t.Fatalf("Get(%q) = %v, %v; want %d, true", strconv.Itoa(i), v, ok, i)
			}
		}
	})
}
