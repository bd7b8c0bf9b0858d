// Package sharedprom exports the counters of sharedcache caches to
// Prometheus.
//
//	prometheus.MustRegister(sharedprom.NewCollector("users", users)) // a *sharedcache.Cache[V]
//
// The collector reads the cache's Stats when scraped and does nothing in
// between. Its series, labelled cache=name:
//
//	ttlkit_sharedcache_hits_total{cache,tier="l1"|"l2"}  counter: Get and Take answered by the local copy (l1) or the store (l2)
//	ttlkit_sharedcache_stale_hits_total{cache}           counter: answered by a copy past its deadline, the store unreachable
//	ttlkit_sharedcache_store_misses_total{cache}         counter: store reads that found no value
//	ttlkit_sharedcache_loads_total{cache}                counter: loader calls on this instance
//	ttlkit_sharedcache_lease_waits_total{cache}          counter: Takes that waited for another instance's load
//	ttlkit_sharedcache_invalidations_total{cache}        counter: local copies dropped for another instance's write
//	ttlkit_sharedcache_stale_drops_total{cache}          counter: local copies dropped after a lost connection
//
// Summed over instances, loads_total against store_misses_total shows
// whether cold keys are loaded once across them; stale_drops_total counts
// the copies each reconnect threw away.
//
// It is a package of its own so that ttlprom's other users do not build
// the NATS and Redis clients.
//
// How it is built, and why: doc/design/exporters.md.
package sharedprom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/ttlkit/ttlkit/sharedcache"
)

// Cache is what NewCollector reads: a *sharedcache.Cache of any value type.
type Cache interface {
	Stats() sharedcache.Stats
}

// NewCollector returns a collector of c's counters, labelled cache=name.
// Collectors for distinct names may be registered together; two with the
// same name on one registry fail to register.
func NewCollector(name string, c Cache) prometheus.Collector {
	l := prometheus.Labels{"cache": name}
	d := func(metric, help string, vars ...string) *prometheus.Desc {
		return prometheus.NewDesc("ttlkit_sharedcache_"+metric, help, vars, l)
	}
	return &collector{
		c:    c,
		hits: d("hits_total", "Get and Take answered by this instance's local copy (l1) or by the store (l2, a not-found placeholder included).", "tier"),
		counters: []counter{
			{d("stale_hits_total", "Get and Take answered by a local copy past its deadline because the store could not be reached (Options.StaleIfError)."),
				func(s sharedcache.Stats) uint64 { return s.StaleHits }},
			{d("store_misses_total", "Store reads that found no value for the key."),
				func(s sharedcache.Stats) uint64 { return s.Misses }},
			{d("loads_total", "Loader calls on this instance."),
				func(s sharedcache.Stats) uint64 { return s.Loads }},
			{d("lease_waits_total", "Takes that waited for another instance's load of their key."),
				func(s sharedcache.Stats) uint64 { return s.LeaseWaits }},
			{d("invalidations_total", "Local copies dropped because another instance wrote or deleted the key."),
				func(s sharedcache.Stats) uint64 { return s.Invalidations }},
			{d("stale_drops_total", "Local copies dropped after a lost connection to the store, when it came back."),
				func(s sharedcache.Stats) uint64 { return s.StaleDrops }},
		},
	}
}

type collector struct {
	c        Cache
	hits     *prometheus.Desc
	counters []counter
}

type counter struct {
	desc  *prometheus.Desc
	value func(sharedcache.Stats) uint64
}

// Describe sends each metric family's description once.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.hits
	for _, m := range c.counters {
		ch <- m.desc
	}
}

// Collect reads one Stats snapshot and sends every series from it.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.c.Stats()
	ch <- prometheus.MustNewConstMetric(c.hits, prometheus.CounterValue, float64(s.L1Hits), "l1")
	ch <- prometheus.MustNewConstMetric(c.hits, prometheus.CounterValue, float64(s.L2Hits), "l2")
	for _, m := range c.counters {
		ch <- prometheus.MustNewConstMetric(m.desc, prometheus.CounterValue, float64(m.value(s)))
	}
}
