package bench

import "testing"

// TestMemAdapters checks every memory-benchmark adapter for both key/value
// types: what was set is found, a bounded cache stays within its capacity
// (checked through its own Get: at most capacity of 4 × capacity keys
// hit), and an unbounded one keeps everything.
func TestMemAdapters(t *testing.T) {
	const capacity = 500
	keys := newMemKeys(4 * capacity)
	namesFor(4 * capacity)
	for _, im := range memImpls {
		t.Run(im.name, func(t *testing.T) {
			checkMemAdapter(t, "u64", im.u64, im.bounded, im.unbounded, u64Key, u64Val)
			checkMemAdapter(t, "str", im.str, im.bounded, im.unbounded, keys.key, keys.val)
		})
	}
}

func checkMemAdapter[K, V any](t *testing.T, kv string, build func(int) memCache[K, V], bounded, unbounded bool, key func(int) K, val func(int) V) {
	t.Helper()
	const capacity = 500
	if bounded {
		checkMemBounded(t, kv, build, key, val)
	}
	if !unbounded {
		return
	}
	c := build(0)
	defer c.close()
	for i := range 4 * capacity {
		c.set(key(i), val(i))
	}
	c.sync()
	for i := range 4 * capacity {
		if !c.has(key(i)) {
			t.Fatalf("%s, unbounded: key %d of %d not held", kv, i, 4*capacity)
		}
	}
}

func checkMemBounded[K, V any](t *testing.T, kv string, build func(int) memCache[K, V], key func(int) K, val func(int) V) {
	t.Helper()
	const capacity = 500
	c := build(capacity)
	for i := range 4 * capacity {
		c.set(key(i), val(i))
	}
	c.sync()
	held := 0
	for i := range 4 * capacity {
		if c.has(key(i)) {
			held++
		}
	}
	c.close()
	if held == 0 || held > capacity {
		t.Errorf("%s, capacity %d: %d of %d keys held, want 1 to %d", kv, capacity, held, 4*capacity, capacity)
	}
}
