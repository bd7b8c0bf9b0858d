package ttlprom_test

import (
	"testing"
	"testing/synctest"
	"time"

	ttlprom "github.com/ttlkit/ttlkit/prometheus"
	"github.com/ttlkit/ttlkit/timingwheel"
)

func TestWheelCollector(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw, err := timingwheel.New(10*time.Millisecond, 8, func(key string, _ int) {
			if key == "a" {
				time.Sleep(25 * time.Millisecond) // inline: b and c fire 15ms late
			}
		}, timingwheel.WithInline())
		if err != nil {
			t.Fatal(err)
		}
		defer tw.Stop()
		tw.SetTimer("a", 1, 20*time.Millisecond)
		tw.SetTimer("b", 2, 30*time.Millisecond)
		tw.SetTimer("c", 3, 30*time.Millisecond)
		tw.SetTimer("d", 4, time.Hour)
		tw.SetTimer("e", 5, time.Hour)
		tw.RemoveTimer("d")
		time.Sleep(5 * time.Second)
		synctest.Wait()
		tw.Stop()
		// Stop unschedules e: Pending is 0 after it.
		check(t, ttlprom.NewWheelCollector("sessions", wakeUps{tw, 7}), `
# HELP ttlkit_wheel_fired_total Timers that came due and were handed to their callback.
# TYPE ttlkit_wheel_fired_total counter
ttlkit_wheel_fired_total{wheel="sessions"} 3
# HELP ttlkit_wheel_largest_batch_timers The most timers fired in one slice of the owner's work.
# TYPE ttlkit_wheel_largest_batch_timers gauge
ttlkit_wheel_largest_batch_timers{wheel="sessions"} 2
# HELP ttlkit_wheel_lateness_seconds How long after its deadline tick each timer fired.
# TYPE ttlkit_wheel_lateness_seconds histogram
ttlkit_wheel_lateness_seconds_bucket{wheel="sessions",le="0.0001"} 1
ttlkit_wheel_lateness_seconds_bucket{wheel="sessions",le="0.001"} 1
ttlkit_wheel_lateness_seconds_bucket{wheel="sessions",le="0.01"} 1
ttlkit_wheel_lateness_seconds_bucket{wheel="sessions",le="0.1"} 3
ttlkit_wheel_lateness_seconds_bucket{wheel="sessions",le="1"} 3
ttlkit_wheel_lateness_seconds_bucket{wheel="sessions",le="10"} 3
ttlkit_wheel_lateness_seconds_bucket{wheel="sessions",le="+Inf"} 3
ttlkit_wheel_lateness_seconds_sum{wheel="sessions"} 0.03
ttlkit_wheel_lateness_seconds_count{wheel="sessions"} 3
# HELP ttlkit_wheel_pending_timers Pending timers.
# TYPE ttlkit_wheel_pending_timers gauge
ttlkit_wheel_pending_timers{wheel="sessions"} 0
# HELP ttlkit_wheel_removed_total Timers removed before they fired.
# TYPE ttlkit_wheel_removed_total counter
ttlkit_wheel_removed_total{wheel="sessions"} 1
# HELP ttlkit_wheel_wakeups_total Wake-ups of the wheel's owner goroutine.
# TYPE ttlkit_wheel_wakeups_total counter
ttlkit_wheel_wakeups_total{wheel="sessions"} 7
`)
	})
}

// wakeUps pins Stats.WakeUps, which depends on how callers' signals met
// the owner, so that the exposition can be compared exactly.
type wakeUps struct {
	w ttlprom.Wheel
	n uint64
}

func (w wakeUps) Stats() timingwheel.Stats {
	s := w.w.Stats()
	s.WakeUps = w.n
	return s
}
