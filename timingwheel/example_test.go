package timingwheel_test

import (
	"fmt"
	"slices"
	"time"

	"github.com/ttlkit/ttlkit/timingwheel"
)

// The examples drive their wheels with WithTicker, so that they advance by
// exactly one interval per tick sent and print the same every run.

func ExampleNew() {
	ticks := make(chan time.Time)
	fired := make(chan string)
	tw, err := timingwheel.New(10*time.Millisecond, 8, func(key string, value int) {
		fired <- fmt.Sprintf("%s=%d", key, value)
	}, timingwheel.WithTicker(ticks), timingwheel.WithConcurrency(1))
	if err != nil {
		panic(err)
	}
	defer tw.Stop()

	tw.SetTimer("a", 1, 20*time.Millisecond) // due on the 2nd tick
	tw.SetTimer("b", 2, 30*time.Millisecond) // the 3rd
	tw.SetTimer("c", 3, 30*time.Millisecond)
	tw.MoveTimer("a", 45*time.Millisecond) // now the 5th: ceil(45/10)
	tw.RemoveTimer("c")                    // never fires
	fmt.Println("pending:", tw.Len())

	for tick := 1; tick <= 5; tick++ {
		ticks <- time.Time{}
	}
	fmt.Println(<-fired)
	fmt.Println(<-fired)
	fmt.Println("pending:", tw.Len())
	// Output:
	// pending: 2
	// b=2
	// a=1
	// pending: 0
}

func ExampleTimingWheel_Drain() {
	tw, err := timingwheel.New(time.Second, 60, func(key string, value int) {
		fmt.Println("fired", key) // not reached: nothing is due for a minute
	})
	if err != nil {
		panic(err)
	}
	defer tw.Stop()

	tw.SetTimer("x", 1, time.Minute)
	tw.SetTimer("y", 2, time.Hour)
	tw.SetTimer("z", 3, 30*24*time.Hour) // many rotations away: drained too

	var got []string
	tw.Drain(func(key string, value int) {
		got = append(got, fmt.Sprintf("%s=%d", key, value))
	})
	slices.Sort(got) // Drain's order is unspecified
	fmt.Println(got, "pending:", tw.Len())
	// Output: [x=1 y=2 z=3] pending: 0
}

// session embeds its Timer: the Scheduler needs no key index and
// scheduling allocates nothing.
type session struct {
	name  string
	beats int
	timer timingwheel.Timer[*session]
}

func ExampleScheduler() {
	ticks := make(chan time.Time)
	events := make(chan string, 8)
	s, err := timingwheel.NewScheduler(time.Second, 16,
		func(t *timingwheel.Timer[*session], now time.Time) time.Duration {
			sess := t.Value
			sess.beats++
			events <- fmt.Sprintf("%s: beat %d", sess.name, sess.beats)
			if sess.beats < 3 {
				return 2 * time.Second // re-arm, without a trip through the channel
			}
			return 0
		}, timingwheel.WithTicker(ticks))
	if err != nil {
		panic(err)
	}
	defer s.Stop()

	a := &session{name: "a"}
	a.timer.Value = a
	b := &session{name: "b"}
	b.timer.Value = b
	s.Schedule(&a.timer, time.Second)   // fires on ticks 1, 3 and 5
	s.Schedule(&b.timer, 4*time.Second) // would fire on tick 4...
	s.Cancel(&b.timer)                  // ...but is cancelled

	for tick := 1; tick <= 6; tick++ {
		ticks <- time.Time{}
	}
	for range 3 {
		fmt.Println(<-events)
	}
	fmt.Println("scheduled:", s.Len())
	// Output:
	// a: beat 1
	// a: beat 2
	// a: beat 3
	// scheduled: 0
}

// A store sharded by key whose shards are guarded by the Scheduler's
// Queues: an entry is stored and its timer armed in one lock hold, and
// the fire callback removes the entry under the same lock.
func ExampleQueue() {
	ticks := make(chan time.Time)
	var s *timingwheel.Scheduler[string]
	shards := make([]map[string]*timingwheel.Timer[string], 4)
	shardOf := func(key string) int { return len(key) % len(shards) } // any hash will do
	expired := make(chan string, 4)
	s, err := timingwheel.NewScheduler(time.Second, 16,
		func(t *timingwheel.Timer[string], now time.Time) time.Duration {
			i := shardOf(t.Value)
			q := s.Queue(i)
			q.Lock()
			delete(shards[i], t.Value)
			q.Unlock()
			expired <- t.Value
			return 0
		}, timingwheel.WithTicker(ticks), timingwheel.WithQueues(len(shards)))
	if err != nil {
		panic(err)
	}
	defer s.Stop()

	put := func(key string, ttl time.Duration) {
		i := shardOf(key)
		q := s.Queue(i)
		q.Lock()
		defer q.Unlock() // wakes the owner if the new deadline asks for it
		if shards[i] == nil {
			shards[i] = map[string]*timingwheel.Timer[string]{}
		}
		t := shards[i][key]
		if t == nil {
			t = &timingwheel.Timer[string]{Value: key}
			shards[i][key] = t
		}
		if err := q.ScheduleAtLocked(t, time.Now().Add(ttl)); err != nil {
			panic(err)
		}
	}
	put("session-a", 2*time.Second)
	put("b", time.Second)

	for range 3 {
		ticks <- time.Time{}
	}
	fmt.Println(<-expired)
	fmt.Println(<-expired)
	// Output:
	// b
	// session-a
}
