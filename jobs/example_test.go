package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
)

func Example() {
	dead := make(chan jobs.DeadLetter, 1)
	s, err := jobs.New(jobs.Options{
		Defaults: jobs.JobOptions{
			Retry:      jobs.Retry{Attempts: 3, Base: 10 * time.Millisecond},
			DeadLetter: func(d jobs.DeadLetter) { dead <- d },
		},
	})
	if err != nil {
		panic(err)
	}
	defer s.Shutdown(context.Background())

	s.Add("charge:7", jobs.After(20*time.Millisecond), func(ctx context.Context, r jobs.Run) error {
		fmt.Println("attempt", r.Attempt)
		return errors.New("card declined")
	})
	d := <-dead
	fmt.Printf("dead letter: %s after %d attempts: %v\n", d.ID, d.Attempts, d.Err)
	// Output:
	// attempt 1
	// attempt 2
	// attempt 3
	// dead letter: charge:7 after 3 attempts: card declined
}

func ExampleScheduler_Cancel() {
	// OnFinish runs once the attempt is over and a one-shot job has left
	// the table, so Len after it is exact.
	finished := make(chan string, 2)
	s, err := jobs.New(jobs.Options{Hooks: jobs.Hooks{
		OnFinish: func(e jobs.Event) { finished <- e.ID },
	}})
	if err != nil {
		panic(err)
	}
	defer s.Shutdown(context.Background())

	ran := make(chan string, 2)
	for _, id := range []string{"order:1", "order:2"} {
		s.Add(id, jobs.After(50*time.Millisecond), func(ctx context.Context, r jobs.Run) error {
			ran <- r.ID + " cancelled: unpaid"
			return nil
		})
	}
	fmt.Println("paid, cancelled:", s.Cancel("order:2"))
	fmt.Println(<-ran)
	<-finished
	fmt.Println("pending:", s.Len())
	// Output:
	// paid, cancelled: true
	// order:1 cancelled: unpaid
	// pending: 0
}

func ExampleCron() {
	c, err := jobs.Cron("CRON_TZ=America/New_York 0 30 9 * * MON-FRI")
	if err != nil {
		panic(err)
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		panic(err)
	}
	// Friday 7 March 2025, 07:00 in New York; clocks go forward on the 9th.
	t := time.Date(2025, 3, 7, 12, 0, 0, 0, time.UTC)
	for range 3 {
		t = c.Next(t)
		fmt.Println(t.In(ny).Format("Mon Jan 2 15:04 MST"), "=", t.Format("15:04 MST"))
	}
	// Output:
	// Fri Mar 7 09:30 EST = 14:30 UTC
	// Mon Mar 10 09:30 EDT = 13:30 UTC
	// Tue Mar 11 09:30 EDT = 13:30 UTC
}
