package jobs

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestWallRearmExact: a wall-clock job fired at a tick whose wall reading
// was taken some time (lag) after the wheel's time is re-armed for its
// next occurrence exactly. Re-armed lag early, as it was, the jobs fired
// late in a long tick (10k cron jobs at once) came due before their next
// second, were found not due, and fired a second time on the owner.
func TestWallRearmExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := newScheduler(t, Options{})
		defer shutdown(t, s)
		every, err := Cron("* * * * * *")
		if err != nil {
			t.Fatal(err)
		}
		mustAdd(t, s, "j", every, noop)
		time.Sleep(300 * time.Millisecond) // mid-second, before the first run
		synctest.Wait()
		j := s.jobs.get("j")
		j.mu.Lock()
		j.next = time.Now().Truncate(time.Second) // due
		j.mu.Unlock()
		const lag = 5 * time.Millisecond
		tick := time.Now().Add(-lag) // the wheel's time
		d := s.fireJob(j, tick)
		want := time.Now().Truncate(time.Second).Add(time.Second)
		if got := tick.Add(d); !got.Equal(want) {
			t.Fatalf("re-armed for %v, want %v (the next second)", got, want)
		}
	})
}
