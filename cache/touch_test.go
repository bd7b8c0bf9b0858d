package cache

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestTouchRestartsTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := New(Options[string, int]{TTL: 100 * time.Millisecond, Resolution: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Set("k", 1)
		time.Sleep(80 * time.Millisecond)
		if !c.Touch("k") {
			t.Fatal("Touch of a live entry = false, want true")
		}
		time.Sleep(80 * time.Millisecond) // 160ms after Set, 80ms after Touch
		if v, ok := c.Get("k"); !ok || v != 1 {
			t.Errorf("Get 80ms after Touch = %v, %v; want 1, true", v, ok)
		}
		time.Sleep(20 * time.Millisecond) // exactly the TTL after Touch
		if _, ok := c.Get("k"); ok {
			t.Error("Get one TTL after Touch: hit, want a miss")
		}
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		if n := c.Len(); n != 0 {
			t.Errorf("Len after the touched entry expired = %d, want 0 (reclaimed)", n)
		}
	})
}

func TestTouchNeverRevives(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := New(Options[string, int]{TTL: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if c.Touch("absent") {
			t.Error("Touch of an absent key = true, want false")
		}
		c.Set("deleted", 1)
		c.Delete("deleted")
		if c.Touch("deleted") {
			t.Error("Touch after Delete = true, want false")
		}
		c.Set("expired", 1)
		time.Sleep(100 * time.Millisecond)
		if c.Touch("expired") {
			t.Error("Touch of an expired entry = true, want false")
		}
		if _, ok := c.Get("expired"); ok {
			t.Error("Get after Touch of an expired entry: hit, want a miss")
		}
		c.Close()
		if c.Touch("x") {
			t.Error("Touch after Close = true, want false")
		}
	})
}
