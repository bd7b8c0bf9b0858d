package ttlprom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/ttlkit/ttlkit/cache"
	"github.com/ttlkit/ttlkit/timingwheel"
)

// Cache is what NewCacheCollector reads: a *cache.Cache of any key and
// value types.
type Cache interface {
	Stats() cache.Stats
	Len() int
}

// NewCacheCollector returns a collector of c's counters, labelled
// cache=name:
//
//	ttlkit_cache_requests_total{cache,result="hit"|"miss"}   counter (see cache.Stats for who counts as a hit)
//	ttlkit_cache_waits_total{cache}                          counter: lookups that waited for another's load
//	ttlkit_cache_not_found_hits_total{cache}                 counter: lookups answered by a remembered not-found
//	ttlkit_cache_sets_total{cache}                           counter: values stored
//	ttlkit_cache_loads_total{cache}                          counter: keys loaded
//	ttlkit_cache_load_errors_total{cache}                    counter
//	ttlkit_cache_loads_not_found_total{cache}                counter
//	ttlkit_cache_bulk_loads_total{cache}                     counter: BulkLoader calls
//	ttlkit_cache_load_seconds{cache}                         histogram of loader call durations, buckets timingwheel.DurationBounds
//	ttlkit_cache_refreshes_total{cache}                      counter: background reloads
//	ttlkit_cache_refresh_errors_total{cache}                 counter: failed reloads, old value kept
//	ttlkit_cache_removals_total{cache,reason="expired"|"evicted"|"deleted"|"replaced"}  counter
//	ttlkit_cache_entries{cache}                              gauge
//
// It reads c.Stats and c.Len when scraped (O(shards)), and costs nothing
// in between. Collectors for distinct names may be registered together.
func NewCacheCollector(name string, c Cache) prometheus.Collector {
	type snap struct {
		st cache.Stats
		n  int
	}
	l := prometheus.Labels{"cache": name}
	col := newCollector(func() snap { return snap{c.Stats(), c.Len()} })
	col.family("ttlkit_cache_requests_total", "Lookups by Get, GetOrSet, Take, Load and LoadAll, by whether they were served without a load of their own.",
		prometheus.CounterValue, l, "result",
		series[snap]{"hit", func(s snap) float64 { return float64(s.st.Hits) }},
		series[snap]{"miss", func(s snap) float64 { return float64(s.st.Misses) }})
	col.one("ttlkit_cache_sets_total", "Values stored, by Set, SetWithExpire, SetIfAbsent, GetOrSet or Take.",
		prometheus.CounterValue, l, func(s snap) float64 { return float64(s.st.Sets) })
	col.one("ttlkit_cache_waits_total", "Lookups that waited for another caller's load of their key; included in requests.",
		prometheus.CounterValue, l, func(s snap) float64 { return float64(s.st.Waits) })
	col.one("ttlkit_cache_not_found_hits_total", "Lookups answered by a remembered not-found result; included in hits.",
		prometheus.CounterValue, l, func(s snap) float64 { return float64(s.st.NotFoundHits) })
	col.one("ttlkit_cache_loads_total", "Keys loaded by Take's fetch, Loader or BulkLoader, refreshes included.",
		prometheus.CounterValue, l, func(s snap) float64 { return float64(s.st.Loads) })
	col.one("ttlkit_cache_load_errors_total", "Loads that failed (error, panic or Goexit); included in loads.",
		prometheus.CounterValue, l, func(s snap) float64 { return float64(s.st.LoadErrors) })
	col.one("ttlkit_cache_loads_not_found_total", "Loads that found nothing at the source; included in loads.",
		prometheus.CounterValue, l, func(s snap) float64 { return float64(s.st.LoadsNotFound) })
	col.one("ttlkit_cache_bulk_loads_total", "BulkLoader calls, each loading one or more keys.",
		prometheus.CounterValue, l, func(s snap) float64 { return float64(s.st.BulkLoads) })
	col.one("ttlkit_cache_refreshes_total", "Background reloads (RefreshAfter, Refresh) that ended; included in loads.",
		prometheus.CounterValue, l, func(s snap) float64 { return float64(s.st.Refreshes) })
	col.one("ttlkit_cache_refresh_errors_total", "Background reloads that failed and kept the old value; included in refreshes.",
		prometheus.CounterValue, l, func(s snap) float64 { return float64(s.st.RefreshErrors) })
	col.histogram("ttlkit_cache_load_seconds", "How long loader calls ran, failed ones included; a bulk call counts once.", l,
		func(s snap) (uint64, float64, map[float64]uint64) {
			d := &s.st.LoadTime
			return durations(d.Count, d.Sum, d.Buckets[:], timingwheel.DurationBounds[:])
		})
	col.family("ttlkit_cache_removals_total", "Values that left the cache, by reason (replaced: overwritten by a later write).",
		prometheus.CounterValue, l, "reason",
		series[snap]{"expired", func(s snap) float64 { return float64(s.st.Expired) }},
		series[snap]{"evicted", func(s snap) float64 { return float64(s.st.Evicted) }},
		series[snap]{"deleted", func(s snap) float64 { return float64(s.st.Deleted) }},
		series[snap]{"replaced", func(s snap) float64 { return float64(s.st.Replaced) }})
	col.one("ttlkit_cache_entries", "Entries in the cache, expired ones not yet removed included.",
		prometheus.GaugeValue, l, func(s snap) float64 { return float64(s.n) })
	return col
}
