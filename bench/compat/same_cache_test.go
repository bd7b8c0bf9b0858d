package compat

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	gz "github.com/zeromicro/go-zero/core/collection"

	"github.com/ttlkit/ttlkit/collection"
)

// cacheAPI is the method set go-zero's *Cache and ours share.
type cacheAPI interface {
	Get(key string) (any, bool)
	Set(key string, value any)
	SetWithExpire(key string, value any, expire time.Duration)
	Take(key string, fetch func() (any, error)) (any, error)
	Del(key string)
}

// cacheOp is one step of a cache script on keys "k0".."k4".
type cacheOp struct {
	kind  byte // 'S' Set, 'E' SetWithExpire, 'G' Get, 'D' Del, 'T' Take, 'X' Take whose fetch fails
	key   string
	value int
}

var errFetch = errors.New("fetch failed")

// apply runs o on c and describes its result, including whether Take
// called fetch.
func (o cacheOp) apply(c cacheAPI) string {
	switch o.kind {
	case 'S':
		c.Set(o.key, o.value)
	case 'E':
		c.SetWithExpire(o.key, o.value, 2*time.Hour)
	case 'D':
		c.Del(o.key)
	case 'G':
		v, ok := c.Get(o.key)
		return fmt.Sprint(v, ok)
	case 'T', 'X':
		fetched := false
		v, err := c.Take(o.key, func() (any, error) {
			fetched = true
			if o.kind == 'X' {
				return nil, errFetch
			}
			return o.value, nil
		})
		return fmt.Sprint(v, err, fetched)
	}
	return ""
}

func (o cacheOp) String() string { return fmt.Sprintf("%c(%s,%d)", o.kind, o.key, o.value) }

// randomCacheScript returns n random ops drawn from kinds.
func randomCacheScript(r *rand.Rand, n int, kinds string) []cacheOp {
	ops := make([]cacheOp, n)
	for i := range ops {
		ops[i] = cacheOp{kinds[r.IntN(len(kinds))], fmt.Sprint("k", r.IntN(5)), i}
	}
	return ops
}

// bothCaches builds go-zero's cache and ours with the same options, inside
// the calling bubble; ours is closed when the bubble's test ends.
func bothCaches(t *testing.T, ttl time.Duration, limit int) (gozero, ours cacheAPI) {
	t.Helper()
	g, err := gz.NewCache(ttl, gz.WithLimit(limit), gz.WithName("compat"))
	if err != nil {
		t.Fatalf("go-zero NewCache: %v", err)
	}
	o, err := collection.NewCache(ttl, collection.WithLimit(limit), collection.WithName("compat"))
	if err != nil {
		t.Fatalf("ours NewCache: %v", err)
	}
	t.Cleanup(func() { o.Close() })
	return g, o
}

// TestSame_CacheRandomScripts runs random Set, SetWithExpire, Get, Del and
// Take (fetch succeeding or failing) scripts, with nothing expiring, on
// go-zero's cache and ours, and compares every result: values, hits, errors
// and whether Take called fetch.
func TestSame_CacheRandomScripts(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 3))
	for range 150 {
		ops := randomCacheScript(r, 30, "SSEGGDDTTX")
		inLeakyBubble(t, func(t *testing.T) {
			g, o := bothCaches(t, time.Hour, 0)
			for i, op := range ops {
				if gr, or := op.apply(g), op.apply(o); gr != or {
					t.Fatalf("%v, op %d %v: go-zero %q, ours %q", ops, i, op, gr, or)
				}
			}
		})
	}
}

// TestSame_CacheLimitHoldsLimitAndNewest: with a limit, both caches hold
// as many entries as the limit allows and keep the key written last, after
// random Set and SetWithExpire scripts. Which older entries they keep
// differs (go-zero evicts in write order, ours by frequency: see
// TestDiff_CacheLimitIsTinyLFUNotLRU), so after a Del of a key that one
// evicted and the other kept, they would hold different numbers.
func TestSame_CacheLimitHoldsLimitAndNewest(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 1))
	for i := range 150 {
		limit := 1 + i%4
		ops := randomCacheScript(r, 20, "SSSE")
		inLeakyBubble(t, func(t *testing.T) {
			g, o := bothCaches(t, time.Hour, limit)
			for _, op := range ops {
				op.apply(g)
				op.apply(o)
			}
			get := cacheOp{'G', ops[len(ops)-1].key, 0}
			if gr, or := get.apply(g), get.apply(o); gr != or {
				t.Errorf("limit %d, %v: %v (the key written last): go-zero %q, ours %q", limit, ops, get, gr, or)
			}
			held := func(c cacheAPI) (n int) {
				for k := range 5 {
					if _, ok := c.Get(fmt.Sprint("k", k)); ok {
						n++
					}
				}
				return n
			}
			if gn, on := held(g), held(o); gn != on {
				t.Errorf("limit %d, %v: go-zero holds %d entries, ours %d", limit, ops, gn, on)
			}
		})
	}
}
