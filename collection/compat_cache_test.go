package collection

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestCompat_CacheDelSetRaceLeavesNoImmortalEntry pins the fix for
// go-zero's lost-timer race: its Cache.Del removes the wheel timer after
// unlocking, so a Set that slips in between keeps its entry while Del's
// RemoveTimer cancels the timer that Set just re-armed, and the entry never
// expires. The interleaving depends on go-zero's select choosing between
// two ready channels, so go-zero's side cannot be forced in a test; this
// shows ours: goroutines race Del, Set, SetWithExpire and Take on a few keys,
// and once every TTL has passed, nothing is left.
func TestCompat_CacheDelSetRaceLeavesNoImmortalEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = time.Second
		c, err := NewCache(ttl)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), 9))
				for i := range 2000 {
					k := fmt.Sprint(r.IntN(8))
					switch r.IntN(4) {
					case 0:
						c.Del(k)
					case 1:
						c.Set(k, i)
					case 2:
						c.SetWithExpire(k, i, ttl/2)
					case 3:
						c.Take(k, func() (any, error) { return i, nil })
					}
					if i%100 == 0 {
						time.Sleep(ttl / 10)
					}
				}
			})
		}
		wg.Wait()
		time.Sleep(2 * ttl) // past every TTL with its +5% jitter, and the wheel's resolution
		synctest.Wait()
		if n := c.Len(); n != 0 {
			t.Errorf("Len() = %d once every TTL has passed, want 0", n)
		}
		for k := range 8 {
			if v, ok := c.Get(fmt.Sprint(k)); ok {
				t.Errorf("Get(%d) = %v once every TTL has passed, want a miss", k, v)
			}
		}
	})
}
