package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
)

// Status is an order's state.
type Status int

const (
	Unpaid Status = iota + 1
	Paid
	Cancelled
)

func (s Status) String() string {
	switch s {
	case Unpaid:
		return "unpaid"
	case Paid:
		return "paid"
	case Cancelled:
		return "cancelled"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// ErrNotPayable is returned by Pay for an order that is not unpaid.
var ErrNotPayable = errors.New("order not payable")

// Store holds orders and cancels those left unpaid for Timeout: each
// placed order has one job, "unpaid:ID", on the scheduler, that Pay
// cancels. A million open orders are a million pending jobs of about 160
// bytes each on one timing wheel, not a million goroutines or timers, and
// no database polling.
//
// Pay and the timeout decide under the store's lock, so an order is paid
// or cancelled, never both, however close the payment comes to the
// deadline. Releasing the stock of a cancelled order is the job's
// fallible part: it is retried with backoff and, if it keeps failing,
// reported to the dead-letter callback.
type Store struct {
	Timeout time.Duration
	// Release returns a cancelled order's stock to the inventory.
	Release func(ctx context.Context, id string) error
	// Retry is the policy for Release failures (Attempts, Base, ...).
	Retry jobs.Retry
	// Note reports what happens to orders.
	Note func(format string, args ...any)

	jobs   *jobs.Scheduler
	mu     sync.Mutex
	orders map[string]Status
}

// Open starts the store's scheduler.
func (st *Store) Open() error {
	s, err := jobs.New(jobs.Options{
		Defaults: jobs.JobOptions{
			Retry:   st.Retry,
			Timeout: 10 * time.Second, // per attempt of Release
			DeadLetter: func(d jobs.DeadLetter) {
				st.Note("alert  %-7s stock not released after %d attempts: %v", d.Name, d.Attempts, d.Err)
			},
		},
	})
	if err != nil {
		return err
	}
	st.jobs, st.orders = s, map[string]Status{}
	return nil
}

// Close stops the scheduler, letting running cancellations finish.
func (st *Store) Close(ctx context.Context) error { return st.jobs.Shutdown(ctx) }

// Place records an unpaid order and arms its timeout.
func (st *Store) Place(id string) error {
	st.mu.Lock()
	st.orders[id] = Unpaid
	st.mu.Unlock()
	return st.jobs.Add("unpaid:"+id, jobs.After(st.Timeout), st.cancelUnpaid(id), jobs.JobOptions{Name: id})
}

// Pay marks an unpaid order paid and drops its timeout. It returns
// ErrNotPayable for an order already paid or cancelled.
func (st *Store) Pay(id string) error {
	st.mu.Lock()
	if st.orders[id] != Unpaid {
		st.mu.Unlock()
		return ErrNotPayable
	}
	st.orders[id] = Paid
	st.mu.Unlock()
	st.jobs.Cancel("unpaid:" + id)
	return nil
}

// Status returns an order's state, 0 for an unknown order.
func (st *Store) Status(id string) Status {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.orders[id]
}

// Pending returns how many timeouts are armed.
func (st *Store) Pending() int { return st.jobs.Len() }

// cancelUnpaid is the timeout of order id: cancel it unless it was paid,
// then release its stock (retried until it succeeds).
func (st *Store) cancelUnpaid(id string) jobs.Func {
	return func(ctx context.Context, r jobs.Run) error {
		st.mu.Lock()
		status := st.orders[id]
		if status == Unpaid {
			st.orders[id] = Cancelled
		}
		st.mu.Unlock()
		switch {
		case status == Paid:
			return nil // paid just before the deadline: Pay's Cancel came too late to stop this run
		case r.Attempt == 1:
			st.Note("cancel %-7s unpaid after %v", id, st.Timeout)
		}
		if err := st.Release(ctx, id); err != nil {
			st.Note("retry  %-7s stock release failed (attempt %d): %v", id, r.Attempt, err)
			return err
		}
		st.Note("stock  %-7s released (attempt %d)", id, r.Attempt)
		return nil
	}
}
