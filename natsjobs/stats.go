package natsjobs

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
)

// Stats counts a queue's jobs, as the server sees them at one moment. The
// first four are disjoint: their sum is the number of live jobs.
type Stats struct {
	// Pending jobs wait on the server for their time: delayed jobs, cron
	// jobs between activations, and retries waiting more than a second.
	Pending int
	// Due jobs are ready and not yet handed to a worker.
	Due int
	// Running jobs are on their first delivery to a worker, not finished
	// (including up to a second of waiting in the worker's wheel).
	Running int
	// Retrying jobs were delivered more than once and are not finished:
	// running again, or waiting out a retry delay of up to a second, or
	// waiting for AckWait to expire after their worker died.
	Retrying int
	// Dead jobs are in the dead letters (see DeadLetters).
	Dead int
}

// Stats returns the queue's counts. It costs three requests to the server,
// read one after the other: a job that moves from one state to another
// meanwhile may be counted in neither or in both.
func (c *Client) Stats(ctx context.Context, queue string) (Stats, error) {
	if err := c.checkQueue(queue); err != nil {
		return Stats{}, err
	}
	if err := c.ready(); err != nil {
		return Stats{}, err
	}
	ctx, cancel := c.timeout(ctx)
	defer cancel()
	var st Stats
	pending, err := c.consumerInfo(ctx, queue, pendingConsumer)
	if err != nil {
		return st, err
	}
	work, err := c.consumerInfo(ctx, queue, workerConsumer)
	if err != nil {
		return st, err
	}
	s, err := c.js.Stream(ctx, deadStream(queue))
	if err != nil {
		return st, c.apiErr("stats", err)
	}
	st.Pending = int(pending.NumPending)
	st.Due = int(work.NumPending)
	// The server keeps counting a message as redelivered after it was
	// deleted by hand (a dead-lettered crash loop): count only as many
	// retries as there are deliveries in progress.
	st.Retrying = min(work.NumRedelivered, work.NumAckPending)
	st.Running = work.NumAckPending - st.Retrying
	st.Dead = int(s.CachedInfo().State.Msgs)
	return st, nil
}

func (c *Client) consumerInfo(ctx context.Context, queue, name string) (*jetstream.ConsumerInfo, error) {
	cons, err := c.js.Consumer(ctx, workStream(queue), name)
	if err != nil {
		return nil, c.apiErr("stats", err)
	}
	return cons.CachedInfo(), nil
}
