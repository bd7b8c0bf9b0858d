package natsjobs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
)

// enqueueAs stores j the way named: "now" (ready), "later" (a schedule),
// "cron" (an activation every 2 s).
func enqueueAs(c *Client, how string, j Job) error {
	ctx := context.Background()
	switch how {
	case "now":
		return c.Enqueue(ctx, j)
	case "later":
		return c.EnqueueAfter(ctx, j, 1500*time.Millisecond)
	default:
		return c.EnqueueCron(ctx, j, "@every 2s", nil)
	}
}

// Each policy against a job that waits as a ready message, a schedule or
// a cron job: Replace stores the new payload, Keep reports ErrExists and
// Refuse ErrConflict, both leaving the old job, which then runs (once).
func TestUnique(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"now", "later", "cron"} {
		for _, u := range []Unique{Replace, Keep, Refuse} {
			t.Run(fmt.Sprintf("%s/%v", how, u), func(t *testing.T) {
				t.Parallel()
				c := open(t, Config{})
				if err := enqueueAs(c, how, Job{Queue: "q", ID: "a", Payload: []byte("old"), Unique: u}); err != nil {
					t.Fatalf("first enqueue: %v", err)
				}
				err := enqueueAs(c, how, Job{Queue: "q", ID: "a", Payload: []byte("new"), Unique: u})
				want, wantErr := "a new", error(nil)
				switch u {
				case Keep:
					want, wantErr = "a old", ErrExists
				case Refuse:
					want, wantErr = "a old", ErrConflict
				}
				if !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
					t.Fatalf("second enqueue = %v, want %v", err, wantErr)
				}
				runs := runsOf(t, c, WorkOptions{}, nil)
				if got := recv(t, runs, "run"); got != want {
					t.Errorf("ran %q, want %q", got, want)
				}
				if how == "cron" {
					return // its next activations run the same payload
				}
				if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "end"}); err != nil {
					t.Fatal(err)
				}
				if got := recv(t, runs, "run of end"); got != "end " {
					t.Errorf("ran %q, want only %q before end", got, "end ")
				}
			})
		}
	}
}

// A running job exists: Keep reports it, and once its success is stored
// the ID is free again.
func TestUniqueRunningAndDone(t *testing.T) {
	c := open(t, Config{})
	ctx := context.Background()
	started, release := make(chan struct{}, 1), make(chan struct{})
	hooks, finished := outcomes()
	runs := runsOf(t, c, WorkOptions{Hooks: hooks}, func(ctx context.Context, r Run) error {
		if string(r.Payload) == "1" {
			started <- struct{}{}
			<-release
		}
		return nil
	})
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "a", Payload: []byte("1"), Unique: Keep}); err != nil {
		t.Fatal(err)
	}
	recv(t, started, "run")
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "a", Payload: []byte("2"), Unique: Keep}); !errors.Is(err, ErrExists) {
		t.Errorf("Keep while running = %v, want ErrExists", err)
	}
	close(release)
	if got := recv(t, runs, "first run"); got != "a 1" {
		t.Fatalf("ran %q, want %q", got, "a 1")
	}
	// OnFinish: the server confirmed the acknowledgement, which removed
	// the job's message.
	if e := recv(t, finished, "outcome of the first run"); e.Outcome != jobs.Succeeded {
		t.Fatalf("outcome %v (%v), want Succeeded", e.Outcome, e.Err)
	}
	if st := statsNow(t, c); st != (Stats{}) {
		t.Fatalf("Stats = %+v, want none", st)
	}
	if err := c.Enqueue(ctx, Job{Queue: "q", ID: "a", Payload: []byte("3"), Unique: Refuse}); err != nil {
		t.Errorf("Refuse after the job ran = %v, want nil", err)
	}
	if got := recv(t, runs, "second run"); got != "a 3" {
		t.Errorf("ran %q, want %q", got, "a 3")
	}
}

// Concurrent enqueues of a new ID under Keep: exactly one stores it.
func TestUniqueConcurrent(t *testing.T) {
	c := open(t, Config{})
	for _, how := range []string{"now", "later"} {
		id := "c-" + how
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for i := range 16 {
			wg.Go(func() {
				errs <- enqueueAs(c, how, Job{Queue: "q", ID: id, Payload: fmt.Append(nil, i), Unique: Keep})
			})
		}
		wg.Wait()
		close(errs)
		stored := 0
		for err := range errs {
			switch {
			case err == nil:
				stored++
			case !errors.Is(err, ErrExists):
				t.Errorf("%s: %v, want nil or ErrExists", how, err)
			}
		}
		if stored != 1 {
			t.Errorf("%s: %d enqueues stored the job, want 1", how, stored)
		}
	}
}

// EnqueueBatch reports per job: the jobs whose IDs existed under Keep or
// Refuse, in a *BatchError at their index; the others are stored.
func TestUniqueBatch(t *testing.T) {
	t.Parallel()
	for _, at := range []time.Duration{0, 2 * time.Second} {
		t.Run(fmt.Sprint("at=", at), func(t *testing.T) {
			t.Parallel()
			c := open(t, Config{})
			ctx := context.Background()
			for _, id := range []string{"x", "y", "z"} {
				if err := c.Enqueue(ctx, Job{Queue: "q", ID: id, Payload: []byte("old")}); err != nil {
					t.Fatal(err)
				}
			}
			var when time.Time
			if at > 0 {
				when = time.Now().Add(at)
			}
			err := c.EnqueueBatch(ctx, when,
				Job{Queue: "q", ID: "x", Payload: []byte("new"), Unique: Keep},
				Job{Queue: "q", ID: "y", Payload: []byte("new"), Unique: Refuse},
				Job{Queue: "q", ID: "z", Payload: []byte("new")},
				Job{Queue: "q", ID: "w", Payload: []byte("new"), Unique: Refuse},
			)
			var be *BatchError
			if !errors.As(err, &be) || len(be.Errs) != 4 {
				t.Fatalf("EnqueueBatch = %v, want a *BatchError of 4", err)
			}
			if !errors.Is(be.Errs[0], ErrExists) || !errors.Is(be.Errs[1], ErrConflict) || be.Errs[2] != nil || be.Errs[3] != nil {
				t.Errorf("per job: %v, want ErrExists, ErrConflict, nil, nil", be.Errs)
			}
			if !errors.Is(err, ErrExists) || !errors.Is(err, ErrConflict) {
				t.Errorf("errors.Is(%v, ErrExists / ErrConflict) false, want true", err)
			}
			runs := runsOf(t, c, WorkOptions{Concurrency: 4}, nil)
			got := map[string]bool{}
			for range 4 {
				got[recv(t, runs, "run")] = true
			}
			for _, want := range []string{"x old", "y old", "z new", "w new"} {
				if !got[want] {
					t.Errorf("runs %v, want %q among them", got, want)
				}
			}
		})
	}
}

func TestUniqueInvalid(t *testing.T) {
	c := open(t, Config{})
	if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "a", Unique: 9}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Unique(9) = %v, want ErrInvalid", err)
	}
	if s := Unique(9).String(); s != "Unique(9)" {
		t.Errorf("String = %q, want Unique(9)", s)
	}
}
