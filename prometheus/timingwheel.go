package ttlprom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/ttlkit/ttlkit/timingwheel"
)

// Wheel is what NewWheelCollector reads: a *timingwheel.TimingWheel or a
// *timingwheel.Scheduler of any type.
type Wheel interface {
	Stats() timingwheel.Stats
}

// NewWheelCollector returns a collector of w's counters, labelled
// wheel=name:
//
//	ttlkit_wheel_pending_timers{wheel}       gauge
//	ttlkit_wheel_fired_total{wheel}          counter
//	ttlkit_wheel_removed_total{wheel}        counter
//	ttlkit_wheel_wakeups_total{wheel}        counter: the owner goroutine's wake-ups
//	ttlkit_wheel_largest_batch_timers{wheel} gauge: most timers fired in one slice
//	ttlkit_wheel_lateness_seconds{wheel}     histogram, buckets timingwheel.DurationBounds
//
// It reads w.Stats when scraped (O(shards) for a TimingWheel, O(1) for a
// Scheduler); it never waits for the wheel's goroutine.
func NewWheelCollector(name string, w Wheel) prometheus.Collector {
	l := prometheus.Labels{"wheel": name}
	c := newCollector(w.Stats)
	c.one("ttlkit_wheel_pending_timers", "Pending timers.",
		prometheus.GaugeValue, l, func(s timingwheel.Stats) float64 { return float64(s.Pending) })
	c.one("ttlkit_wheel_fired_total", "Timers that came due and were handed to their callback.",
		prometheus.CounterValue, l, func(s timingwheel.Stats) float64 { return float64(s.Fired) })
	c.one("ttlkit_wheel_removed_total", "Timers removed before they fired.",
		prometheus.CounterValue, l, func(s timingwheel.Stats) float64 { return float64(s.Removed) })
	c.one("ttlkit_wheel_wakeups_total", "Wake-ups of the wheel's owner goroutine.",
		prometheus.CounterValue, l, func(s timingwheel.Stats) float64 { return float64(s.WakeUps) })
	c.one("ttlkit_wheel_largest_batch_timers", "The most timers fired in one slice of the owner's work.",
		prometheus.GaugeValue, l, func(s timingwheel.Stats) float64 { return float64(s.LargestBatch) })
	c.histogram("ttlkit_wheel_lateness_seconds", "How long after its deadline tick each timer fired.", l,
		func(s timingwheel.Stats) (uint64, float64, map[float64]uint64) {
			l := &s.Lateness
			return durations(l.Count, l.Sum, l.Buckets[:], timingwheel.DurationBounds[:])
		})
	return c
}
