package ttlprom_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
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
# HELP ttlkit_cache_bulk_loads_total BulkLoader calls, each loading one or more keys.
# TYPE ttlkit_cache_bulk_loads_total counter
ttlkit_cache_bulk_loads_total{cache="sessions"} 0
# HELP ttlkit_cache_load_errors_total Loads that failed (error, panic or Goexit); included in loads.
# TYPE ttlkit_cache_load_errors_total counter
ttlkit_cache_load_errors_total{cache="sessions"} 1
# HELP ttlkit_cache_load_seconds How long loader calls ran, failed ones included; a bulk call counts once.
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
# HELP ttlkit_cache_loads_not_found_total Loads that found nothing at the source; included in loads.
# TYPE ttlkit_cache_loads_not_found_total counter
ttlkit_cache_loads_not_found_total{cache="sessions"} 0
# HELP ttlkit_cache_loads_total Keys loaded by Take's fetch, Loader or BulkLoader, refreshes included.
# TYPE ttlkit_cache_loads_total counter
ttlkit_cache_loads_total{cache="sessions"} 2
# HELP ttlkit_cache_not_found_hits_total Lookups answered by a remembered not-found result; included in hits.
# TYPE ttlkit_cache_not_found_hits_total counter
ttlkit_cache_not_found_hits_total{cache="sessions"} 0
# HELP ttlkit_cache_refresh_errors_total Background reloads that failed and kept the old value; included in refreshes.
# TYPE ttlkit_cache_refresh_errors_total counter
ttlkit_cache_refresh_errors_total{cache="sessions"} 0
# HELP ttlkit_cache_refreshes_total Background reloads (RefreshAfter, Refresh) that ended; included in loads.
# TYPE ttlkit_cache_refreshes_total counter
ttlkit_cache_refreshes_total{cache="sessions"} 0
# HELP ttlkit_cache_removals_total Values that left the cache, by reason (replaced: overwritten by a later write).
# TYPE ttlkit_cache_removals_total counter
ttlkit_cache_removals_total{cache="sessions",reason="deleted"} 1
ttlkit_cache_removals_total{cache="sessions",reason="evicted"} 0
ttlkit_cache_removals_total{cache="sessions",reason="expired"} 0
ttlkit_cache_removals_total{cache="sessions",reason="replaced"} 1
# HELP ttlkit_cache_requests_total Lookups by Get, GetOrSet, Take, Load and LoadAll, by whether they were served without a load of their own.
# TYPE ttlkit_cache_requests_total counter
ttlkit_cache_requests_total{cache="sessions",result="hit"} 1
ttlkit_cache_requests_total{cache="sessions",result="miss"} 3
# HELP ttlkit_cache_sets_total Values stored, by Set, SetWithExpire, SetIfAbsent, GetOrSet or Take.
# TYPE ttlkit_cache_sets_total counter
ttlkit_cache_sets_total{cache="sessions"} 4
# HELP ttlkit_cache_waits_total Lookups that waited for another caller's load of their key; included in requests.
# TYPE ttlkit_cache_waits_total counter
ttlkit_cache_waits_total{cache="sessions"} 0
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

// TestCacheCollectorLoading: the loading counters (waits, not-found hits
// and loads, bulk loads, refreshes and their errors) reach the series.
func TestCacheCollectorLoading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var refreshing atomic.Bool
		c, err := cache.New(cache.Options[string, int]{TTL: time.Minute, NotFoundTTL: time.Minute,
			Loader: func(_ context.Context, key string) (cache.Loaded[int], error) {
				switch {
				case refreshing.Load():
					return cache.Loaded[int]{}, errors.New("down")
				case key == "gone":
					return cache.Loaded[int]{NotFound: true}, nil
				}
				<-release
				return cache.Loaded[int]{Value: 1}, nil
			},
			BulkLoader: func(_ context.Context, keys []string) (map[string]cache.Loaded[int], error) {
				return map[string]cache.Loaded[int]{keys[0]: {Value: 2}}, nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var wg sync.WaitGroup
		for range 3 { // one miss and load, two waits (hits)
			wg.Go(func() { c.Load(context.Background(), "k") })
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		c.Load(context.Background(), "gone") // miss, load not found
		c.Load(context.Background(), "gone") // not-found hit
		c.LoadAll(context.Background(), []string{"b"})
		refreshing.Store(true)
		c.Refresh("k")
		synctest.Wait()
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(ttlprom.NewCacheCollector("users", c))
		want := `
# HELP ttlkit_cache_bulk_loads_total BulkLoader calls, each loading one or more keys.
# TYPE ttlkit_cache_bulk_loads_total counter
ttlkit_cache_bulk_loads_total{cache="users"} 1
# HELP ttlkit_cache_loads_not_found_total Loads that found nothing at the source; included in loads.
# TYPE ttlkit_cache_loads_not_found_total counter
ttlkit_cache_loads_not_found_total{cache="users"} 1
# HELP ttlkit_cache_loads_total Keys loaded by Take's fetch, Loader or BulkLoader, refreshes included.
# TYPE ttlkit_cache_loads_total counter
ttlkit_cache_loads_total{cache="users"} 4
# HELP ttlkit_cache_not_found_hits_total Lookups answered by a remembered not-found result; included in hits.
# TYPE ttlkit_cache_not_found_hits_total counter
ttlkit_cache_not_found_hits_total{cache="users"} 1
# HELP ttlkit_cache_refresh_errors_total Background reloads that failed and kept the old value; included in refreshes.
# TYPE ttlkit_cache_refresh_errors_total counter
ttlkit_cache_refresh_errors_total{cache="users"} 1
# HELP ttlkit_cache_refreshes_total Background reloads (RefreshAfter, Refresh) that ended; included in loads.
# TYPE ttlkit_cache_refreshes_total counter
ttlkit_cache_refreshes_total{cache="users"} 1
# HELP ttlkit_cache_requests_total Lookups by Get, GetOrSet, Take, Load and LoadAll, by whether they were served without a load of their own.
# TYPE ttlkit_cache_requests_total counter
ttlkit_cache_requests_total{cache="users",result="hit"} 3
ttlkit_cache_requests_total{cache="users",result="miss"} 3
# HELP ttlkit_cache_waits_total Lookups that waited for another caller's load of their key; included in requests.
# TYPE ttlkit_cache_waits_total counter
ttlkit_cache_waits_total{cache="users"} 2
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
			"ttlkit_cache_bulk_loads_total", "ttlkit_cache_loads_not_found_total", "ttlkit_cache_loads_total",
			"ttlkit_cache_not_found_hits_total", "ttlkit_cache_refresh_errors_total", "ttlkit_cache_refreshes_total",
			"ttlkit_cache_requests_total", "ttlkit_cache_waits_total"); err != nil {
			t.Error(err)
		}
	})
}
