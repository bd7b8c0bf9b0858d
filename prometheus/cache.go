package ttlprom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/ttlkit/ttlkit/cache"
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
//	ttlkit_cache_requests_total{cache,result="hit"|"miss"}   counter
//	ttlkit_cache_sets_total{cache}                           counter: values stored
//	ttlkit_cache_loads_total{cache}                          counter
//	ttlkit_cache_load_errors_total{cache}                    counter
//	ttlkit_cache_load_seconds{cache}                         histogram of fetch durations, buckets cache.DurationBounds
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
	col.family("ttlkit_cache_requests_total", "Lookups by Get and Take, by whether they found a live entry.",
		prometheus.CounterValue, l, "result",
		series[snap]{"hit", func(s snap) float64 { return float64(s.st.Hits) }},
		series[snap]{"miss", func(s snap) float64 { return float64(s.st.Misses) }})
	col.one("ttlkit_cache_sets_total", "Values stored, by Set, SetWithExpire, SetIfAbsent, GetOrSet or Take.",
		prometheus.CounterValue, l, func(s snap) float64 { return float64(s.st.Sets) })
	col.one("ttlkit_cache_loads_total", "Fetch functions run by Take.",
		prometheus.CounterValue, l, func(s snap) float64 { return float64(s.st.Loads) })
	col.one("ttlkit_cache_load_errors_total", "Fetches that failed (error, panic or Goexit); included in loads.",
		prometheus.CounterValue, l, func(s snap) float64 { return float64(s.st.LoadErrors) })
	col.histogram("ttlkit_cache_load_seconds", "How long fetches ran, failed ones included.", l,
		func(s snap) (uint64, float64, map[float64]uint64) {
			d := &s.st.LoadTime
			return durations(d.Count, d.Sum, d.Buckets[:], cache.DurationBounds[:])
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
