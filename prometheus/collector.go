package ttlprom

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// collector turns a Stats snapshot into metrics at scrape time. Every
// metric carries the instance label (cache, listener or scheduler) as a
// constant label, so several instances of one type register side by side.
type collector[S any] struct {
	stats   func() S
	descs   []*prometheus.Desc
	metrics []metric[S]
}

// metric is one time series: a description, an optional value for the
// description's variable label, and how to read it from a snapshot.
type metric[S any] struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	label []string
	value func(S) float64
	// hist, when set, makes the metric a histogram instead: count, sum,
	// and cumulative counts by upper bound.
	hist func(S) (uint64, float64, map[float64]uint64)
}

// series is one labelled series of a family added by collector.family.
type series[S any] struct {
	label string
	value func(S) float64
}

func newCollector[S any](stats func() S) *collector[S] {
	return &collector[S]{stats: stats}
}

// family adds a metric family named name. With no label it has one series,
// values[0] (whose label is ignored); otherwise one series per value,
// labelled label=value.label.
func (c *collector[S]) family(name, help string, kind prometheus.ValueType, instance prometheus.Labels, label string, values ...series[S]) {
	var vars []string
	if label != "" {
		vars = []string{label}
	}
	d := prometheus.NewDesc(name, help, vars, instance)
	c.descs = append(c.descs, d)
	for _, v := range values {
		m := metric[S]{desc: d, kind: kind, value: v.value}
		if label != "" {
			m.label = []string{v.label}
		}
		c.metrics = append(c.metrics, m)
	}
}

// one is a family with a single, unlabelled series.
func (c *collector[S]) one(name, help string, kind prometheus.ValueType, instance prometheus.Labels, value func(S) float64) {
	c.family(name, help, kind, instance, "", series[S]{value: value})
}

// histogram adds an unlabelled histogram family.
func (c *collector[S]) histogram(name, help string, instance prometheus.Labels, hist func(S) (uint64, float64, map[float64]uint64)) {
	d := prometheus.NewDesc(name, help, nil, instance)
	c.descs = append(c.descs, d)
	c.metrics = append(c.metrics, metric[S]{desc: d, hist: hist})
}

// durations returns a histogram of the core's Stats (timingwheel.Durations,
// the one type of the wheel's, cache's and jobs' histograms: a count per
// bucket, one bucket more than bounds) as a constant histogram wants it: count, sum in seconds,
// and cumulative counts by upper bound in seconds.
func durations(count uint64, sum time.Duration, buckets []uint64, bounds []time.Duration) (uint64, float64, map[float64]uint64) {
	b := make(map[float64]uint64, len(bounds))
	var cum uint64
	for i, bound := range bounds {
		cum += buckets[i]
		b[bound.Seconds()] = cum
	}
	return count, sum.Seconds(), b
}

// Describe sends each metric family's description once.
func (c *collector[S]) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect reads one snapshot and sends every series from it.
func (c *collector[S]) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for _, m := range c.metrics {
		if m.hist != nil {
			n, sum, b := m.hist(s)
			ch <- prometheus.MustNewConstHistogram(m.desc, n, sum, b, m.label...)
			continue
		}
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.value(s), m.label...)
	}
}
