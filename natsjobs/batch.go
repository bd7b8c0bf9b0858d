package natsjobs

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
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
	later := false
	for i, j := range batch {
		var err error
		if msgs[i], later, err = c.prepare(j, at, 0); err != nil {
			return err
		}
	}
	if err := c.ready(); err != nil {
		return err
	}
	for i, m := range msgs {
		if batch[i].Unique != Replace {
			expectNone(m, batch[i])
		} else if later {
			expectNoReady(m, batch[i])
		}
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
	if err := c.replaceRefused(ctx, batch, msgs, replace); err != nil {
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

// replaceRefused stores the schedules of the jobs at refused, which the
// server refused because their IDs had a ready message: it withdraws those
// and stores the schedules on the same condition again, as EnqueueAt does
// (replaceReady), until none is refused.
func (c *Client) replaceRefused(ctx context.Context, batch []Job, msgs []*nats.Msg, refused []int) error {
	var err error
	for range replaceTries {
		if err != nil || len(refused) == 0 {
			return err
		}
		again := make([]Job, len(refused))
		againMsgs := make([]*nats.Msg, len(refused))
		for k, i := range refused {
			again[k], againMsgs[k] = batch[i], msgs[i]
		}
		batch, msgs = again, againMsgs
		if err := c.purgeMany(ctx, batch); err != nil {
			return err
		}
		if h := testHookPurged; h != nil {
			for _, j := range batch {
				h(j)
			}
		}
		refused, err = c.publishAll(ctx, msgs)
	}
	if err != nil || len(refused) == 0 {
		return err
	}
	return fmt.Errorf("natsjobs: enqueue batch: ready copies of %d jobs (%s first) kept being stored while they were replaced", len(refused), batch[refused[0]].ID)
}

// publishAll stores msgs with up to batchWindow requests in flight. It
// returns the indexes of the messages refused because of expectNoReady,
// and the first other error.
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
				if !hasReady(err) {
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

// purgeMany purges the ready subject of every job, pipelined: requests go
// out with replies to one inbox, up to batchWindow at a time.
func (c *Client) purgeMany(ctx context.Context, batch []Job) error {
	inbox := c.nc.NewRespInbox()
	replies := make(chan *nats.Msg, batchWindow)
	sub, err := c.nc.ChanSubscribe(inbox+".*", replies)
	if err != nil {
		return c.apiErr("purge", err)
	}
	defer sub.Unsubscribe()
	inFlight := 0
	wait := func() error {
		ctx, cancel := c.timeout(ctx)
		defer cancel()
		for ; inFlight > 0; inFlight-- {
			select {
			case m := <-replies:
				var r struct {
					Error *struct {
						Description string `json:"description"`
					} `json:"error"`
				}
				if err := json.Unmarshal(m.Data, &r); err != nil {
					return fmt.Errorf("natsjobs: purge: %w", err)
				}
				if r.Error != nil {
					return fmt.Errorf("natsjobs: purge: %s", r.Error.Description)
				}
			case <-ctx.Done():
				return c.apiErr("purge", ctx.Err())
			}
		}
		return nil
	}
	for i, j := range batch {
		req, _ := json.Marshal(struct {
			Filter string `json:"filter"`
		}{readySubject(j.Queue, j.ID)})
		if err := c.nc.PublishRequest("$JS.API.STREAM.PURGE."+workStream(j.Queue), inbox+"."+strconv.Itoa(i), req); err != nil {
			return c.apiErr("purge", err)
		}
		if inFlight++; inFlight == batchWindow {
			if err := wait(); err != nil {
				return err
			}
		}
	}
	return wait()
}
