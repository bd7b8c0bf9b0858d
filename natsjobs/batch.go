package natsjobs

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// batchWindow is how many requests EnqueueBatch keeps in flight.
const batchWindow = 1000

// EnqueueBatch stores jobs that are due together, at at (zero: now), as
// Enqueue or EnqueueAt would store each of them, but with up to a thousand
// requests in flight instead of one: several times the rate of single
// calls. Every job is validated before any is sent. It returns nil once
// the server stored them all. Jobs refused under their Unique policy
// (Keep, Refuse) are reported in a *BatchError, the others are stored.
// After another error some may be stored and others not, and calling it
// again with the same jobs is safe (enqueueing is idempotent by ID).
func (c *Client) EnqueueBatch(ctx context.Context, at time.Time, batch ...Job) error {
	if !at.IsZero() && time.Until(at) < 0 {
		return invalidf("EnqueueBatch %s: time in the past", at.Format(time.RFC3339Nano))
	}
	msgs := make([]*nats.Msg, len(batch))
	for i, j := range batch {
		var err error
		if msgs[i], err = c.prepare(j, at, 0); err != nil {
			return err
		}
	}
	if err := c.ready(); err != nil {
		return err
	}
	for i, m := range msgs {
		expectFirst(m, batch[i])
	}
	refused, err := c.publishAll(ctx, msgs)
	if err != nil {
		return err
	}
	var be *BatchError
	replace := refused[:0]
	for _, i := range refused {
		if batch[i].Unique == Replace {
			replace = append(replace, i)
			continue
		}
		if be == nil {
			be = &BatchError{Errs: make([]error, len(batch))}
		}
		be.Errs[i] = existsErr(batch[i])
	}
	if err := c.replaceAll(ctx, batch, msgs, replace); err != nil {
		return err
	}
	if be != nil {
		return be
	}
	return nil
}

// BatchError reports the jobs of an EnqueueBatch that were not stored
// because their ID existed (Job.Unique Keep or Refuse): Errs[i] is batch[i]'s
// error, wrapping ErrExists or ErrConflict, and nil for a stored job.
// errors.Is(err, ErrExists) holds if it does for any job.
type BatchError struct {
	Errs []error
}

func (e *BatchError) Error() string {
	n, first := 0, error(nil)
	for _, err := range e.Errs {
		if err != nil {
			if n++; first == nil {
				first = err
			}
		}
	}
	return fmt.Sprintf("natsjobs: enqueue batch: %d of %d jobs not stored (first: %v)", n, len(e.Errs), first)
}

// Unwrap returns the jobs' errors, without the nils.
func (e *BatchError) Unwrap() []error {
	var out []error
	for _, err := range e.Errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// replaceAll replaces the jobs at indexes refused (see replace), up to
// replaceWindow at a time.
func (c *Client) replaceAll(ctx context.Context, batch []Job, msgs []*nats.Msg, refused []int) error {
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	sem := make(chan struct{}, replaceWindow)
	for _, i := range refused {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := c.replace(ctx, batch[i], msgs[i], "enqueue batch: "+batch[i].ID); err != nil {
				once.Do(func() { first = err })
			}
		}()
	}
	wg.Wait()
	return first
}

// replaceWindow is how many jobs replaceAll replaces at a time.
const replaceWindow = 64

// publishAll stores msgs with up to batchWindow requests in flight. It
// returns the indexes of the messages refused because of expectFirst, and
// the first other error.
func (c *Client) publishAll(ctx context.Context, msgs []*nats.Msg) (refused []int, err error) {
	futures := make([]jetstream.PubAckFuture, 0, batchWindow)
	sent := 0 // index in msgs of futures[0]
	// Each window of requests, not the whole batch, gets Config.Timeout.
	flush := func() error {
		defer func() {
			sent += len(futures)
			futures = futures[:0]
		}()
		ctx, cancel := c.timeout(ctx)
		defer cancel()
		for k, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				if !wrongLastSeq(err) {
					return c.apiErr("enqueue batch", err)
				}
				refused = append(refused, sent+k)
			case <-ctx.Done():
				return c.apiErr("enqueue batch", ctx.Err())
			}
		}
		return nil
	}
	for _, m := range msgs {
		f, err := c.js.PublishMsgAsync(m)
		if err != nil {
			return nil, c.apiErr("enqueue batch", err)
		}
		if futures = append(futures, f); len(futures) == batchWindow {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return refused, nil
}
