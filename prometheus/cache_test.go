package ttlprom_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/ttlkit/ttlkit/cache"
	ttlprom "github.com/ttlkit/ttlkit/prometheus"
)

func TestCacheCollector(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { // fetches take the time they sleep
		c, err := cache.New(cache.Options[string, int]{TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Set("a", 1)
		c.Set("a", 2) // replaced
		c.Set("b", 3)
		c.Get("a")                                                                                     // hit
		c.Get("x")                                                                                     // miss
		c.Take("y", func() (int, error) { time.Sleep(2 * time.Second); return 0, errors.New("down") }) // miss, load error
		c.Take("z", func() (int, error) { time.Sleep(5 * time.Millisecond); return 7, nil })           // miss, load
		c.Delete("b")                                                                                  // deleted
		check(t, ttlprom.NewCacheCollector("sessions", c), `
# HELP ttlkit_cache_entries Entries in the cache, expired ones not yet removed included.
# TYPE ttlkit_cache_entries gauge
ttlkit_cache_entries{cache="sessions"} 2
# HELP ttlkit_cache_load_errors_total Fetches that failed (error, panic or Goexit); included in loads.
# TYPE ttlkit_cache_load_errors_total counter
ttlkit_cache_load_errors_total{cache="sessions"} 1
# HELP ttlkit_cache_load_seconds How long fetches ran, failed ones included.
# TYPE ttlkit_cache_load_seconds histogram
ttlkit_cache_load_seconds_bucket{cache="sessions",le="0.0001"} 0
ttlkit_cache_load_seconds_bucket{cache="sessions",le="0.001"} 0
ttlkit_cache_load_seconds_bucket{cache="sessions",le="0.01"} 1
ttlkit_cache_load_seconds_bucket{cache="sessions",le="0.1"} 1
ttlkit_cache_load_seconds_bucket{cache="sessions",le="1"} 1
ttlkit_cache_load_seconds_bucket{cache="sessions",le="10"} 2
ttlkit_cache_load_seconds_bucket{cache="sessions",le="+Inf"} 2
ttlkit_cache_load_seconds_sum{cache="sessions"} 2.005
ttlkit_cache_load_seconds_count{cache="sessions"} 2
# HELP ttlkit_cache_loads_total Fetch functions run by Take.
# TYPE ttlkit_cache_loads_total counter
ttlkit_cache_loads_total{cache="sessions"} 2
# HELP ttlkit_cache_removals_total Values that left the cache, by reason (replaced: overwritten by a later write).
# TYPE ttlkit_cache_removals_total counter
ttlkit_cache_removals_total{cache="sessions",reason="deleted"} 1
ttlkit_cache_removals_total{cache="sessions",reason="evicted"} 0
ttlkit_cache_removals_total{cache="sessions",reason="expired"} 0
ttlkit_cache_removals_total{cache="sessions",reason="replaced"} 1
# HELP ttlkit_cache_requests_total Lookups by Get and Take, by whether they found a live entry.
# TYPE ttlkit_cache_requests_total counter
ttlkit_cache_requests_total{cache="sessions",result="hit"} 1
ttlkit_cache_requests_total{cache="sessions",result="miss"} 3
# HELP ttlkit_cache_sets_total Values stored, by Set, SetWithExpire, SetIfAbsent, GetOrSet or Take.
# TYPE ttlkit_cache_sets_total counter
ttlkit_cache_sets_total{cache="sessions"} 4
`)
	})
}

// Two caches register side by side: their series differ by the cache label.
func TestCacheCollectorsForTwoCaches(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	for _, name := range []string{"users", "sessions"} {
		c, err := cache.New(cache.Options[int, int]{TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := reg.Register(ttlprom.NewCacheCollector(name, c)); err != nil {
			t.Fatalf("Register(%q): %v", name, err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "ttlkit_cache_entries" {
			if got := len(mf.GetMetric()); got != 2 {
				t.Errorf("ttlkit_cache_entries: got %d series, want 2", got)
			}
			return
		}
	}
	t.Error("ttlkit_cache_entries not gathered")
}
