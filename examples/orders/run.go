package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
)

// story is the payment window of the story the demo tells; the stamps of
// its lines are in story time, whatever the real window.
const story = 15 * time.Minute

// run narrates a day in the life of three orders, with timeout as the
// payment window; the stamps are story time, timeout standing for the
// story's 15 minutes (the test uses 15 real minutes in a synctest bubble,
// go run a shorter window by default). The inventory service fails the
// first release of A-1003.
func run(out io.Writer, timeout time.Duration) error {
	n := &narrator{out: out, start: time.Now(), unit: timeout / 15}
	var once sync.Once
	st := &Store{
		Timeout: timeout,
		Note:    n.say,
		// Up to 4 attempts, the first retry 2 story seconds after a failure.
		Retry: jobs.Retry{Attempts: 4, Base: timeout / 450},
		Release: func(ctx context.Context, id string) error {
			fail := false
			if id == "A-1003" {
				once.Do(func() { fail = true })
			}
			if fail {
				return errors.New("inventory service unavailable")
			}
			return nil
		},
	}
	if err := st.Open(); err != nil {
		return err
	}
	if timeout == story {
		n.say("orders: an unpaid order is cancelled %v after it is placed (stamps: real time)", timeout)
	} else {
		// Say so: the stamps count story minutes, while durations in the
		// lines (the window, "unpaid after") are real time.
		n.say("orders: stamps in story time: the story's %v play in %v of real time (-window %v for real time)", story, timeout, story)
		n.say("orders: an unpaid order is cancelled %v (%v of story time) after it is placed", timeout, story)
	}
	for _, step := range []struct {
		at     int // in fifteenths of the timeout
		act    string
		orders []string
	}{
		{0, "place", []string{"A-1001", "A-1002"}},
		{5, "place", []string{"A-1003"}},
		{7, "pay", []string{"A-1001"}},
		{16, "pay", []string{"A-1002"}},
	} {
		n.at(step.at)
		for _, id := range step.orders {
			switch step.act {
			case "place":
				if err := st.Place(id); err != nil {
					return err
				}
				n.say("place  %-7s timeouts armed: %d", id, st.Pending())
			case "pay":
				if err := st.Pay(id); err != nil {
					n.say("pay    %-7s refused: %v (%v)", id, err, st.Status(id))
				} else {
					n.say("pay    %-7s paid, its timeout cancelled", id)
				}
			}
		}
	}
	n.at(25)
	if err := st.Close(context.Background()); err != nil {
		return err
	}
	var final []string
	for _, id := range []string{"A-1001", "A-1002", "A-1003"} {
		final = append(final, fmt.Sprintf("%s %v", id, st.Status(id)))
	}
	n.say("done   %s; timeouts armed: %d", strings.Join(final, ", "), st.Pending())
	return nil
}

// narrator writes lines stamped with the time since the demo began, in
// minutes and seconds of the 15-minute story (unit is one story minute),
// rounded to the nearest story second.
type narrator struct {
	mu    sync.Mutex
	out   io.Writer
	start time.Time
	unit  time.Duration
}

func (n *narrator) say(format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	secs := (time.Since(n.start)*60 + n.unit/2) / n.unit
	fmt.Fprintf(n.out, "%3dm%02ds  %s\n", secs/60, secs%60, fmt.Sprintf(format, args...))
}

// at waits until step units after the start.
func (n *narrator) at(step int) {
	time.Sleep(time.Until(n.start.Add(time.Duration(step) * n.unit)))
}
