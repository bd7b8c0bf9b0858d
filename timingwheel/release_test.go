package timingwheel

import (
	"fmt"
	"hash/maphash"
	"runtime"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/ttlkit/ttlkit/internal/table"
)

type payload struct {
	name string
	_    [64]byte
}

// armWeak sets a timer whose key and value are fresh pointers and returns
// only weak pointers to them, so nothing on the test's side keeps them.
func armWeak(t *testing.T, tw *TimingWheel[*payload, *payload], delay time.Duration) (weak.Pointer[payload], weak.Pointer[payload]) {
	k, v := &payload{name: "key"}, &payload{name: "value"}
	must(t, tw.SetTimer(k, v, delay))
	return weak.Make(k), weak.Make(v)
}

func released(p weak.Pointer[payload]) bool {
	runtime.GC()
	runtime.GC()
	return p.Value() == nil
}

// TestReleasesKeyAndValue: a removed, re-set, fired or drained timer lets go
// of its value at once and of its key once the owner has unlinked it, not
// when its slot is next scanned. The timers are due in two hours, so the
// owner sleeps longer than lazyWait and a removal signals it at once.
func TestReleasesKeyAndValue(t *testing.T) {
	const far = 2 * time.Hour
	cases := []struct {
		name    string
		op      func(t *testing.T, tw *TimingWheel[*payload, *payload], k weak.Pointer[payload])
		keyFree bool // the key is released too, not just the value
	}{
		{"removed", func(t *testing.T, tw *TimingWheel[*payload, *payload], k weak.Pointer[payload]) {
			must(t, tw.RemoveTimer(k.Value()))
		}, true},
		{"value replaced by SetTimer", func(t *testing.T, tw *TimingWheel[*payload, *payload], k weak.Pointer[payload]) {
			must(t, tw.SetTimer(k.Value(), &payload{name: "new"}, far))
		}, false},
		{"fired", func(t *testing.T, tw *TimingWheel[*payload, *payload], k weak.Pointer[payload]) {
			time.Sleep(far)
			synctest.Wait()
		}, true},
		{"drained", func(t *testing.T, tw *TimingWheel[*payload, *payload], k weak.Pointer[payload]) {
			must(t, tw.Drain(func(k, v *payload) {}))
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tw, err := New(iv, 8, func(k, v *payload) {})
				must(t, err)
				defer tw.Stop()
				// Neighbours in the same slot, so an unscanned slot would
				// still hold the entry if removal did not unlink it.
				for i := range 3 {
					must(t, tw.SetTimer(&payload{name: fmt.Sprint(i)}, nil, far))
				}
				k, v := armWeak(t, tw, far)
				synctest.Wait()
				if released(v) {
					t.Fatal("value released while its timer is armed")
				}
				c.op(t, tw, k)
				synctest.Wait() // the owner has placed or unlinked what changed
				if !released(v) {
					t.Error("value still reachable")
				}
				if c.keyFree && !released(k) {
					t.Error("key still reachable")
				}
			})
		})
	}
}

// TestRemovedKeyReleasedAtNextWake: when the owner will wake within
// lazyWait anyway, a removal waits for that wake-up instead of signalling;
// the value goes at once, the key at that wake-up, long before the removed
// timer's slot comes up.
func TestRemovedKeyReleasedAtNextWake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, err := New(iv, 8, func(k, v *payload) {})
		must(t, err)
		defer tw.Stop()
		soon := lazyWait / 2
		must(t, tw.SetTimer(&payload{name: "soon"}, nil, soon))
		k, v := armWeak(t, tw, time.Hour)
		synctest.Wait()
		removeQuietly(t, tw, k.Value())
		if !released(v) {
			t.Error("value still reachable after RemoveTimer")
		}
		time.Sleep(soon)
		synctest.Wait()
		if !released(k) {
			t.Errorf("key still reachable %v after RemoveTimer, at the owner's next wake-up", soon)
		}
	})
}

// TestRemovalsSignalAtBatchSize: removals that can wait for the owner's
// next wake-up do not wake it, until one shard has lazyBatch of them; then
// the owner takes them all, and their keys are released, with no time
// passing.
func TestRemovalsSignalAtBatchSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, err := New(iv, 8, func(k, v *payload) {})
		must(t, err)
		defer tw.Stop()
		must(t, tw.SetTimer(&payload{name: "soon"}, nil, lazyWait/2))
		var keys []weak.Pointer[payload]
		for len(keys) < lazyBatch {
			k, _ := armWeak(t, tw, time.Hour)
			if h := maphash.Comparable(tw.k.seed, k.Value()); table.Shard(h, tw.k.shards.len()) == 0 {
				keys = append(keys, k)
			}
		}
		// Have the owner place every new timer, so that shard 0's list
		// holds only what follows.
		if err := tw.k.d.call(func() {}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		before := tw.k.d.loops.Load()
		for _, k := range keys[:lazyBatch-1] {
			must(t, tw.RemoveTimer(k.Value()))
		}
		synctest.Wait()
		if wakes := tw.k.d.loops.Load() - before; wakes != 0 {
			t.Errorf("owner woke %d times for %d removals that could wait", wakes, lazyBatch-1)
		}
		must(t, tw.RemoveTimer(keys[lazyBatch-1].Value()))
		synctest.Wait() // no time passes: only a signal wakes the owner
		if wakes := tw.k.d.loops.Load() - before; wakes == 0 {
			t.Fatalf("owner not woken by %d removals in one shard", lazyBatch)
		}
		runtime.GC()
		runtime.GC()
		live := 0
		for _, k := range keys {
			if k.Value() != nil {
				live++
			}
		}
		if live != 0 {
			t.Errorf("%d of %d removed keys still reachable after the signalled wake-up", live, len(keys))
		}
	})
}

// TestRemovalUnderTicker: under WithTicker the owner wakes for every tick
// anyway, so a removal does not wake it and waits for the next tick; once
// the ticker is closed (the wheel is frozen) every removal wakes it, and
// its key is released at once.
func TestRemovalUnderTicker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ticks := make(chan time.Time)
		tw, err := New(iv, 8, func(k, v *payload) {}, WithTicker(ticks))
		must(t, err)
		defer tw.Stop()
		k, v := armWeak(t, tw, 1000*iv) // far beyond lazyWait
		synctest.Wait()
		removeQuietly(t, tw, k.Value())
		ticks <- time.Time{}
		synctest.Wait()
		if !released(v) || !released(k) {
			t.Errorf("removed timer's value or key still reachable after the next tick")
		}

		close(ticks)
		synctest.Wait()
		k, v = armWeak(t, tw, 1000*iv)
		synctest.Wait()
		must(t, tw.RemoveTimer(k.Value()))
		synctest.Wait()
		if !released(v) || !released(k) {
			t.Errorf("frozen wheel: removed timer's value or key still reachable")
		}
	})
}

// removeQuietly removes key's timer and checks that the removal, which can
// wait for the owner's next wake-up, did not wake it. Inside a bubble.
func removeQuietly(t *testing.T, tw *TimingWheel[*payload, *payload], key *payload) {
	t.Helper()
	before := tw.k.d.loops.Load()
	must(t, tw.RemoveTimer(key))
	synctest.Wait()
	if wakes := tw.k.d.loops.Load() - before; wakes != 0 {
		t.Errorf("a removal that can wait woke the owner %d times", wakes)
	}
}

// TestRemovalStreamWakesOwnerRarely: while the owner sleeps long, the first
// removal wakes it, and having taken a removal it sleeps no longer than
// lazyWait, so a steady stream of removals costs about one wake-up per
// lazyWait, not one per removal. Every removed key is still released
// within lazyWait.
func TestRemovalStreamWakesOwnerRarely(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, err := New(iv, 8, func(k, v *payload) {})
		must(t, err)
		defer tw.Stop()
		const n = 1000
		const every = 10 * time.Millisecond // n removals over 10 lazyWaits
		keys := make([]weak.Pointer[payload], n)
		for i := range keys {
			keys[i], _ = armWeak(t, tw, time.Hour)
		}
		tw.Len()
		synctest.Wait() // the owner sleeps until the hour is up
		before := tw.k.d.loops.Load()
		for _, k := range keys {
			must(t, tw.RemoveTimer(k.Value()))
			time.Sleep(every)
		}
		time.Sleep(lazyWait + iv)
		synctest.Wait()
		wakes := tw.k.d.loops.Load() - before
		if limit := uint64(n*every/lazyWait) + 3; wakes > limit {
			t.Errorf("owner woke %d times for %d removals over %v, want at most %d", wakes, n, n*every, limit)
		}
		runtime.GC()
		runtime.GC()
		for i, k := range keys {
			if k.Value() != nil {
				t.Fatalf("key %d still reachable %v after the last removal", i, lazyWait+iv)
			}
		}
	})
}
