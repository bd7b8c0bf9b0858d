package timingwheel

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ttlkit/ttlkit/internal/table"
)

// checkKeyed verifies the keyed layer's invariants on the owner goroutine
// (through driver.call, so nothing races with it): every indexed timer is
// armed (the owner settles no firing during a call), sits in the shard its
// key hashes to, and, unless its shard's inbox holds changes still queued
// for the owner, is linked in the wheel no later than it wants to fire;
// every linked timer is indexed, or is a removed (dead) one queued in its
// inbox for unlinking; the wheel counts exactly the linked timers.
func checkKeyed[K comparable, V any](t *testing.T, tw *TimingWheel[K, V]) {
	t.Helper()
	k := tw.k
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	err := k.d.call(func() {
		w := k.d.w
		indexed := map[*node[K, V]]bool{}
		for i := range k.shards.len() {
			sh := k.shards.get(i)
			if sh == nil {
				continue
			}
			sh.mu.Lock()
			quiet := len(sh.items) == 0
			sh.tab.All(func(n *node[K, V]) bool {
				indexed[n] = true
				want := n.deadline()
				switch shard := table.Shard(maphash.Comparable(k.seed, n.Value.key), k.shards.len()); {
				case want <= dead && want > relativeTop:
					fail("key %v: indexed with state %d, want a deadline", n.Value.key, want)
				case shard != i:
					fail("key %v: in shard %d, hashes to %d", n.Value.key, i, shard)
				case !quiet:
				case !n.scheduled():
					fail("key %v: indexed, shard quiet, but not linked", n.Value.key)
				case want > dead && slotVisit(w, n) > max(want, w.cur+1):
					fail("key %v: linked in a slot visited at tick %d, later than its deadline %d", n.Value.key, slotVisit(w, n), want)
				}
				return true
			})
			sh.mu.Unlock()
		}
		linked := 0
		visit := func(head *Timer[entry[K, V]]) {
			for n := head.next; n != head; n = n.next {
				linked++
				if !indexed[n] && !(n.deadline() == dead && n.queued()) {
					fail("a linked timer (deadline %d) is neither indexed nor queued for removal", n.deadline())
				}
			}
		}
		visit(&w.scan)
		w.heads(func(_ int, head *Timer[entry[K, V]]) { visit(head) })
		if linked != w.count {
			fail("wheel counts %d timers, %d are linked", w.count, linked)
		}
	})
	if err != nil {
		t.Fatalf("checkKeyed: %v", err)
	}
	for _, e := range errs {
		t.Error(e)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
}

// modelTimer is the reference model's view of one key: its value and the
// absolute time it must fire at, the first tick at or after its deadline.
type modelTimer struct {
	value  int
	fireAt time.Duration
}

// runKeyedScript drives a keyed wheel and a trivially correct model (a map
// of absolute firing times) with ops decoded from data, inside a synctest
// bubble, and compares every callback run with the model: which key, which
// value, at which instant. Three bytes make an op: kind, key, and an
// argument for the delay or the time to let pass.
func runKeyedScript(t *testing.T, data []byte, numSlots int, opts ...Option) {
	synctest.Test(t, func(t *testing.T) {
		tw, rec := newTestWheel(t, iv, numSlots, opts...)
		model := map[string]modelTimer{}
		now := time.Duration(0)
		delayOf := func(b byte) time.Duration {
			// Sub-interval, exact-tick and multi-rotation delays.
			switch b % 4 {
			case 0:
				return time.Duration(b/4%10+1) * time.Millisecond
			case 1:
				return time.Duration(b/4%8+1) * iv
			default:
				return time.Duration(b)*iv/3 + time.Millisecond
			}
		}
		fireAt := func(d time.Duration) time.Duration { return firstTick(now+d, iv) }
		var want []event
		for op := 0; len(data) >= 3; op++ {
			kind, key, arg := data[0]%5, fmt.Sprint("k", data[1]%6), data[2]
			data = data[3:]
			switch kind {
			case 0:
				d := delayOf(arg)
				must(t, tw.SetTimer(key, op, d))
				model[key] = modelTimer{op, fireAt(d)}
			case 1:
				d := delayOf(arg)
				must(t, tw.MoveTimer(key, d))
				if m, ok := model[key]; ok {
					model[key] = modelTimer{m.value, fireAt(d)}
				}
			case 2:
				must(t, tw.RemoveTimer(key))
				delete(model, key)
			case 3, 4:
				step := time.Duration(arg%32) * iv / 4
				time.Sleep(step)
				now += step
				for k, m := range model {
					if m.fireAt <= now {
						want = append(want, event{k, m.value, m.fireAt})
						delete(model, k)
					}
				}
			}
			got := rec.takeByTime()
			sortEvents(want)
			if !slices.Equal(got, want) {
				t.Fatalf("op %d at %v: fired %v, want %v", op, now, got, want)
			}
			want = want[:0]
			if got := tw.Len(); got != len(model) {
				t.Fatalf("op %d: Len = %d, want %d", op, got, len(model))
			}
			for k := range model {
				if !tw.Has(k) {
					t.Fatalf("op %d: Has(%q) = false, want true", op, k)
				}
			}
			// checkKeyed wakes the owner, which then takes every queued
			// change; checking only after time has passed leaves the
			// changes of a run of ops to the owner's own wake-ups, as in
			// use, so that the scripts test when those happen too.
			if kind >= 3 || len(data) < 3 {
				checkKeyed(t, tw)
			}
		}
	})
}

func sortEvents(es []event) {
	slices.SortFunc(es, func(a, b event) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		if a.key != b.key {
			if a.key < b.key {
				return -1
			}
			return 1
		}
		return a.value - b.value
	})
}

// TestKeyedMatchesModel runs random scripts on small wheels (1, 3 and 8
// slots: delays of several rotations are common) against the model.
func TestKeyedMatchesModel(t *testing.T) {
	runs := 60
	if testing.Short() {
		runs = 10
	}
	r := rand.New(rand.NewPCG(7, 11))
	for _, slots := range []int{1, 3, 8} {
		for run := range runs {
			data := make([]byte, 3*(20+r.IntN(120)))
			for i := range data {
				data[i] = byte(r.Uint32())
			}
			t.Run(fmt.Sprintf("slots=%d/run=%d", slots, run), func(t *testing.T) {
				runKeyedScript(t, data, slots)
			})
		}
	}
}

// TestKeyedMatchesModelInline is TestKeyedMatchesModel with callbacks on
// the owner goroutine.
func TestKeyedMatchesModelInline(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for run := range 20 {
		data := make([]byte, 3*(20+r.IntN(120)))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		t.Run(fmt.Sprintf("run=%d", run), func(t *testing.T) {
			runKeyedScript(t, data, 4, WithInline())
		})
	}
}

func FuzzKeyed(f *testing.F) {
	f.Add([]byte{0, 1, 5, 3, 0, 9, 1, 1, 200, 3, 0, 31, 2, 1, 0, 4, 0, 31})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 600 {
			data = data[:600]
		}
		runKeyedScript(t, data, 4)
	})
}

// TestRacingCallersAndExpiry races SetTimer, MoveTimer (its lock-free path
// included), RemoveTimer and expiry on a few shared keys from several
// goroutines. Every arming has its own value, so: no value fires twice, no
// fired value was never set, and once everything has had time to fire the
// index is empty and consistent.
func TestRacingCallersAndExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, rec := newTestWheel(t, iv, 4)
		const workers, opsEach = 4, 400
		done := make(chan struct{})
		for w := range workers {
			go func() {
				defer func() { done <- struct{}{} }()
				r := rand.New(rand.NewPCG(uint64(w), 99))
				for i := range opsEach {
					key := fmt.Sprint("k", r.IntN(3))
					d := time.Duration(1+r.IntN(40)) * iv / 4
					switch r.IntN(4) {
					case 0, 1:
						must(t, tw.MoveTimer(key, d))
					case 2:
						must(t, tw.SetTimer(key, w*opsEach+i, d))
					case 3:
						must(t, tw.RemoveTimer(key))
					}
					if r.IntN(4) == 0 {
						time.Sleep(time.Duration(r.IntN(8)) * iv / 4)
					}
				}
			}()
		}
		for range workers {
			<-done
		}
		time.Sleep(20 * iv)
		seen := map[int]bool{}
		for _, e := range rec.take() {
			if seen[e.value] {
				t.Errorf("value %d fired twice", e.value)
			}
			seen[e.value] = true
			if e.value < 0 || e.value >= workers*opsEach {
				t.Errorf("fired value %d that was never set", e.value)
			}
		}
		if len(seen) == 0 {
			t.Error("nothing fired")
		}
		if got := tw.Len(); got != 0 {
			t.Errorf("Len = %d after every timer was due, want 0", got)
		}
		checkKeyed(t, tw)
	})
}

// slotVisit returns the tick at which the slot holding linked timer n is
// visited (the scanned tick for the scan list).
func slotVisit[T any](w *wheel[T], n *Timer[T]) int64 {
	at := int64(never)
	for e := n.next; ; e = e.next {
		if e == &w.scan {
			return w.scanAt
		}
		found := false
		w.heads(func(idx int, head *Timer[T]) {
			if head == e {
				found = true
				level, i := 0, int64(idx)
				if idx >= int(w.n) {
					level, i = 1+(idx-int(w.n))>>w.b, (int64(idx)-w.n)&(w.m-1)
				}
				at = visitOf(w, level, i)
			}
		})
		if found {
			return at
		}
	}
}
