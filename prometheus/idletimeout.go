package ttlprom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/ttlkit/ttlkit/idletimeout"
)

// NewListenerCollector returns a collector of l's counters, labelled
// listener=name:
//
//	ttlkit_idle_accepted_total{listener}                       counter
//	ttlkit_idle_wrapped_total{listener}                        counter
//	ttlkit_idle_open_connections{listener}                     gauge
//	ttlkit_idle_closed_total{listener}                         counter
//	ttlkit_idle_reaped_total{listener,reason="idle"|"read"|"write"}  counter
//	ttlkit_idle_released_total{listener}                       counter
//	ttlkit_idle_events_total{listener}                         counter
//	ttlkit_idle_kept_total{listener}                           counter
//	ttlkit_idle_onidle_panics_total{listener}                  counter
//
// It reads l.Stats when scraped (O(1)).
func NewListenerCollector(name string, l *idletimeout.Listener) prometheus.Collector {
	lb := prometheus.Labels{"listener": name}
	c := newCollector(l.Stats)
	counter := func(name, help string, v func(idletimeout.Stats) uint64) {
		c.one(name, help, prometheus.CounterValue, lb, func(s idletimeout.Stats) float64 { return float64(v(s)) })
	}
	counter("ttlkit_idle_accepted_total", "Connections returned by Accept.",
		func(s idletimeout.Stats) uint64 { return s.Accepted })
	counter("ttlkit_idle_wrapped_total", "Connections tracked by Listener.Wrap.",
		func(s idletimeout.Stats) uint64 { return s.Wrapped })
	c.one("ttlkit_idle_open_connections", "Tracked connections neither closed nor released.",
		prometheus.GaugeValue, lb, func(s idletimeout.Stats) float64 { return float64(s.Open) })
	counter("ttlkit_idle_closed_total", "Tracked connections closed, by Close or by a reap.",
		func(s idletimeout.Stats) uint64 { return s.Closed })
	c.family("ttlkit_idle_reaped_total", "Connections closed because a timeout expired, by timeout; included in closed.",
		prometheus.CounterValue, lb, "reason",
		series[idletimeout.Stats]{"idle", func(s idletimeout.Stats) float64 { return float64(s.ReapedIdle) }},
		series[idletimeout.Stats]{"read", func(s idletimeout.Stats) float64 { return float64(s.ReapedRead) }},
		series[idletimeout.Stats]{"write", func(s idletimeout.Stats) float64 { return float64(s.ReapedWrite) }})
	counter("ttlkit_idle_released_total", "Connections released from tracking (hijacked, for example).",
		func(s idletimeout.Stats) uint64 { return s.Released })
	counter("ttlkit_idle_events_total", "Expired timeouts reported: reaps and OnIdle calls.",
		func(s idletimeout.Stats) uint64 { return s.Events })
	counter("ttlkit_idle_kept_total", "Events for which OnIdle returned Keep.",
		func(s idletimeout.Stats) uint64 { return s.Kept })
	counter("ttlkit_idle_onidle_panics_total", "OnIdle calls that panicked.",
		func(s idletimeout.Stats) uint64 { return s.Panics })
	return c
}
