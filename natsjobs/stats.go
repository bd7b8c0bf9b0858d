package natsjobs

import (
	"context"
)

// Stats counts a queue's jobs, as the server sees them at one moment. The
// first four are disjoint: their sum is the number of live jobs.
//
// Deprecated: Use QueueStats, whose counts are named by State as List,
// Get, the natsjobs command and the console name them. Stats' words differ:
// its Pending is State Scheduled (QueueStats.Scheduled), its Due is State
// Pending (QueueStats.Pending), and its Running plus Retrying is State
// Running (QueueStats.Running, of which QueueStats.Retrying).
type Stats struct {
	// Pending jobs wait on the server for their time: delayed jobs, cron
	// jobs between activations, and retries waiting more than a second.
	// (State Scheduled; QueueStats.Scheduled.)
	Pending int
	// Due jobs are ready and not yet handed to a worker. (State Pending;
	// QueueStats.Pending.)
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

// Stats returns the queue's counts, from requests to the server read one
// after the other: a job that moves from one state to another meanwhile
// may be counted in neither or in both. A job whose Enqueue has returned
// is counted (Due is counted as QueueStats.Pending is).
//
// Deprecated: Use QueueStats (see Stats for how the names map).
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
	cons, err := c.js.Consumer(ctx, workStream(queue), workerConsumer)
	if err != nil {
		return st, c.apiErr("stats", err)
	}
	w := cons.CachedInfo()
	due, _, err := c.pending(ctx, queue, w)
	if err != nil {
		return Stats{}, err
	}
	work, err := c.js.Stream(ctx, workStream(queue))
	if err != nil {
		return st, c.apiErr("stats", err)
	}
	dead, err := c.js.Stream(ctx, deadStream(queue))
	if err != nil {
		return st, c.apiErr("stats", err)
	}
	// The server keeps counting a message as redelivered after it was
	// deleted by hand (a dead-lettered crash loop): count only as many
	// retries as there are deliveries in progress.
	st.Retrying = min(w.NumRedelivered, w.NumAckPending)
	st.Running = w.NumAckPending - st.Retrying
	st.Due = due
	// The work stream holds each live job once: as a schedule, or as a
	// ready message (due, or delivered and not yet acknowledged).
	tombs, err := c.tombstones(ctx, queue)
	if err != nil {
		return Stats{}, err
	}
	st.Pending = max(int(work.CachedInfo().State.Msgs)-tombs-st.Due-w.NumAckPending, 0)
	st.Dead = int(dead.CachedInfo().State.Msgs)
	return st, nil
}
