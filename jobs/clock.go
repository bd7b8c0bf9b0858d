package jobs

import (
	"sync"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// stepThreshold is the wall-clock step, against the monotonic clock, past
// which the wall-clock jobs are re-armed.
const stepThreshold = time.Second

// clock watches the wall clock for steps while wall-clock jobs (At, Cron,
// custom schedules) exist. The wheel measures time on the monotonic clock,
// so a wall-clock job is armed for its wall-clock time converted at
// arming. A step back would make it fire early: fireJob catches that
// itself and re-arms for the rest. A step forward (NTP, a suspended
// machine) would make it fire late: the watcher, a wheel timer firing
// every second, compares the wall and monotonic time elapsed since its
// last firing and, when they differ by more than stepThreshold, re-arms
// every wall-clock job from the wall clock, off the owner goroutine.
type clock struct {
	tw timingwheel.Timer[*job] // Value nil

	mu       sync.Mutex
	jobs     int  // wall-clock jobs scheduled
	armed    bool // e is scheduled
	lastWall time.Time
	lastMono time.Time

	// offset, when set (tests only), is added to every wall-clock
	// reading, to simulate steps.
	offset func() time.Duration
}

// wallAt returns the wall-clock reading of now, a time.Now reading: now
// without its monotonic part.
func (s *Scheduler) wallAt(now time.Time) time.Time {
	w := now.Round(0)
	if s.clock.offset != nil {
		w = w.Add(s.clock.offset())
	}
	return w
}

// watchClock counts delta wall-clock jobs in or out and arms the watcher
// when the first one comes. It may be called with a job locked.
func (s *Scheduler) watchClock(delta int) {
	c := &s.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	c.jobs += delta
	if c.jobs > 0 && !c.armed {
		now := time.Now()
		c.lastWall, c.lastMono = s.wallAt(now), now
		if s.sched.ScheduleAt(&c.tw, now.Add(time.Second)) == nil {
			c.armed = true
		}
	}
}

// tick is the watcher's firing, on the owner goroutine. It returns the
// delay to its next firing, or 0 once no wall-clock job is left.
func (c *clock) tick(s *Scheduler) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.jobs == 0 {
		c.armed = false
		return 0
	}
	now := time.Now()
	wall := s.wallAt(now)
	step := wall.Sub(c.lastWall) - now.Sub(c.lastMono)
	c.lastWall, c.lastMono = wall, now
	if step > stepThreshold || step < -stepThreshold {
		s.st.clockSteps.Add(1)
		s.bg.Add(1)
		go s.rearmWall()
	}
	return time.Second
}

// rearmWall re-arms every wall-clock job from the current wall clock.
func (s *Scheduler) rearmWall() {
	defer s.bg.Done()
	s.jobs.all(func(j *job) {
		if j.plan != planWall {
			return
		}
		j.mu.Lock()
		if !j.done && !j.next.IsZero() {
			_ = s.arm(j, time.Now())
		}
		j.mu.Unlock()
	})
}
