package natsjobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Queues returns the names of the queues the server has (made by any
// Client), sorted.
func (c *Client) Queues(ctx context.Context) ([]string, error) {
	if err := c.ready(); err != nil {
		return nil, err
	}
	ctx, cancel := c.timeout(ctx)
	defer cancel()
	// Work streams, and only those, take the subjects natsjobs.<q>.s.>.
	names := c.js.StreamNames(ctx, jetstream.WithStreamListSubject(statePrefix("*", "s")+">"))
	var out []string
	for name := range names.Name() {
		if q, ok := strings.CutPrefix(name, "natsjobs_"); ok && checkQueueName(q) == nil {
			out = append(out, q)
		}
	}
	if err := names.Err(); err != nil {
		return nil, c.apiErr("queues", err)
	}
	slices.Sort(out)
	return out, nil
}

// pauseFor is how long Pause pauses: in effect, until Resume.
const pauseFor = 100 * 365 * 24 * time.Hour

// Pause stops the queue's workers, in every process, from taking jobs
// until Resume: the server stops handing out deliveries (the queue's
// consumer is paused), so nothing is lost and the pause outlives
// restarts of workers and of the server. Jobs keep falling due and wait
// as Pending; enqueueing goes on. Runs in progress finish, and so do the
// deliveries a worker had already taken: those due (at most its
// Concurrency) and those it holds until due within the next second.
// Pausing a paused queue does nothing. (A Work call that starts later
// updates the consumer's configuration: the server keeps its pause.)
func (c *Client) Pause(ctx context.Context, queue string) error {
	return c.pause(ctx, queue, true)
}

// Resume lets the queue's workers take jobs again after Pause. Resuming
// a queue that is not paused does nothing.
func (c *Client) Resume(ctx context.Context, queue string) error {
	return c.pause(ctx, queue, false)
}

func (c *Client) pause(ctx context.Context, queue string, on bool) error {
	if err := c.checkQueue(queue); err != nil {
		return err
	}
	if err := c.ready(); err != nil {
		return err
	}
	if _, err := c.workers(ctx, queue); err != nil {
		return err
	}
	ctx, cancel := c.timeout(ctx)
	defer cancel()
	var err error
	if on {
		_, err = c.js.PauseConsumer(ctx, workStream(queue), workerConsumer, time.Now().Add(pauseFor))
	} else {
		_, err = c.js.ResumeConsumer(ctx, workStream(queue), workerConsumer)
	}
	return c.apiErr("pause "+queue, err)
}

// Purge removes every job of the queue that is not dead: scheduled,
// pending, running, with its retries and cron schedules. Runs in progress
// finish, but are neither retried nor dead-lettered. It returns how many
// jobs (stored copies: a running cron job counts twice) were removed, and
// an error if the purge or the storing of the queue's head marker after
// it failed.
func (c *Client) Purge(ctx context.Context, queue string) (int, error) {
	if err := c.checkQueue(queue); err != nil {
		return 0, err
	}
	if err := c.ready(); err != nil {
		return 0, err
	}
	if _, err := c.workers(ctx, queue); err != nil {
		return 0, err
	}
	// The count leaves out the tombstones and the head marker, counted first.
	tombs, err := c.tombstones(ctx, queue)
	if err != nil {
		return 0, err
	}
	n, err := c.purgeStream(ctx, workStream(queue), "", 0)
	if err == nil {
		err = c.storeHead(ctx, queue) // purged with the rest (head.go)
	}
	return max(int(n)-tombs, 0), err
}

// purgeStream removes the messages on filter (empty: all) from stream,
// those with a sequence below before only if before > 0, and returns how
// many.
func (c *Client) purgeStream(ctx context.Context, stream, filter string, before uint64) (uint64, error) {
	req, _ := json.Marshal(struct {
		Filter string `json:"filter,omitempty"`
		Seq    uint64 `json:"seq,omitempty"`
	}{filter, before})
	what := "purge " + stream
	if filter != "" {
		what += " " + filter
	}
	ctx, cancel := c.timeout(ctx)
	defer cancel()
	resp, err := c.nc.RequestWithContext(ctx, "$JS.API.STREAM.PURGE."+stream, req)
	if err != nil {
		return 0, c.apiErr(what, err)
	}
	var r struct {
		Purged uint64              `json:"purged"`
		Error  *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return 0, fmt.Errorf("natsjobs: %s: %w", what, err)
	}
	if r.Error != nil {
		return 0, c.apiErr(what, r.Error)
	}
	return r.Purged, nil
}

// QueueStats describes a queue at one moment: its counts by State, and
// running totals from which Rates derives rates.
type QueueStats struct {
	Queue  string
	Paused bool
	// Jobs by State (disjoint: their sum is the number of live jobs and
	// dead letters), from requests to the server read one after the
	// other: a job moving meanwhile may be counted twice or not at all.
	// A job whose Enqueue returned before QueueStats was called is
	// counted, in its State: Pending is the stream's own count of ready
	// messages the workers have not taken, not the consumer's, which the
	// server updates only after acknowledging a write
	// (TestQueueStatsCountsEnqueuedJob). With Replicas > 1 the count may
	// come from a follower, which can trail the leader by a moment.
	Scheduled, Pending, Running, Dead int
	// Retrying counts the Running jobs delivered more than once.
	Retrying int
	// OldestPending is when the longest-waiting Pending job fell due (or
	// was stored, if later); zero when none is pending.
	OldestPending time.Time
	// Stored counts the job copies the queue's stream ever stored:
	// enqueues, firings of delayed jobs and cron activations, retries
	// waiting more than a second.
	Stored uint64
	// Started counts the deliveries to workers since the queue's consumer
	// was created: attempts started, crashed ones included.
	Started uint64
	// Buried counts the dead letters ever stored.
	Buried uint64
	// At is when the counts were read.
	At time.Time
}

// Rates are per-second rates between two QueueStats of a queue.
type Rates struct {
	Stored, Started, Buried float64
}

// Rates returns the rates of s's totals since prev, an earlier QueueStats
// of the same queue: zero when prev is not earlier, and zero for a total
// that went down (its stream or consumer was made again).
func (s QueueStats) Rates(prev QueueStats) Rates {
	secs := s.At.Sub(prev.At).Seconds()
	if secs <= 0 || prev.At.IsZero() {
		return Rates{}
	}
	rate := func(now, then uint64) float64 {
		if now < then {
			return 0
		}
		return float64(now-then) / secs
	}
	return Rates{
		Stored:  rate(s.Stored, prev.Stored),
		Started: rate(s.Started, prev.Started),
		Buried:  rate(s.Buried, prev.Buried),
	}
}

// QueueStats returns the queue's counts and totals: five requests to the
// server (the consumer, the pending jobs' count with the oldest of them,
// the two streams, the tombstones), whatever the queue's size; the server
// counts the pending jobs in time that grows with their number, as for a
// batched List. It fails with ErrNotFound for a queue the server does not
// have.
func (c *Client) QueueStats(ctx context.Context, queue string) (QueueStats, error) {
	if err := c.checkQueue(queue); err != nil {
		return QueueStats{}, err
	}
	if err := c.ready(); err != nil {
		return QueueStats{}, err
	}
	w, err := c.workers(ctx, queue)
	if err != nil {
		return QueueStats{}, err
	}
	// Counted before the streams are read, so that a job stored between
	// the two reads shows as Scheduled rather than making Scheduled short.
	pending, oldest, err := c.pending(ctx, queue, w)
	if err != nil {
		return QueueStats{}, err
	}
	tctx, cancel := c.timeout(ctx)
	defer cancel()
	work, err := c.js.Stream(tctx, workStream(queue))
	if err != nil {
		return QueueStats{}, c.apiErr("stats", err)
	}
	dead, err := c.js.Stream(tctx, deadStream(queue))
	if err != nil {
		return QueueStats{}, c.apiErr("stats", err)
	}
	st := QueueStats{Queue: queue, Paused: w.Paused, At: time.Now()}
	// The server keeps counting a message as redelivered after it was
	// deleted by hand (a dead-lettered crash loop): count only as many
	// retries as there are deliveries in progress.
	st.Retrying = min(w.NumRedelivered, w.NumAckPending)
	st.Running = w.NumAckPending
	st.Pending = pending
	ws := work.CachedInfo().State
	tombs, err := c.tombstones(ctx, queue)
	if err != nil {
		return QueueStats{}, err
	}
	st.Scheduled = max(int(ws.Msgs)-tombs-st.Pending-st.Running, 0)
	st.Dead = int(dead.CachedInfo().State.Msgs)
	st.Stored = ws.LastSeq
	st.Started = w.Delivered.Consumer
	st.Buried = dead.CachedInfo().State.LastSeq
	if oldest != nil {
		j := directInfo(queue, "", Pending, oldest)
		st.OldestPending = j.NextRun
		if j.Stored.After(st.OldestPending) {
			st.OldestPending = j.Stored
		}
	}
	return st, nil
}

// pending counts the queue's ready messages that the workers' consumer w
// has not delivered (those after its delivered stream sequence) and
// returns the first of them (nil when none), from one batched direct
// read: the server counts them in the stream's store, where a write is
// before it is acknowledged. The consumer's own NumPending is raised by
// the server after the acknowledgement (on another goroutine), so it can
// miss a job whose Enqueue has returned; it is the answer only for a
// stream that takes no direct reads.
func (c *Client) pending(ctx context.Context, queue string, w *jetstream.ConsumerInfo) (int, *nats.Msg, error) {
	filter, from := statePrefix(queue, "r")+">", w.Delivered.Stream+1
	req, _ := json.Marshal(directGet{Seq: from, NextFor: filter, Batch: 1})
	m, err := c.direct(ctx, "$JS.API.DIRECT.GET."+workStream(queue), req)
	if errors.Is(err, errNoDirect) {
		if w.NumPending == 0 {
			return 0, nil, nil
		}
		m, err = c.firstFrom(ctx, workStream(queue), filter, from)
		return int(w.NumPending), m, err
	}
	if err != nil || m == nil {
		return 0, nil, err
	}
	// The count is of the messages after the one sent.
	n, err := strconv.Atoi(m.Header.Get(numPendingHeader))
	if err != nil {
		return 0, nil, fmt.Errorf("natsjobs: stats %s: bad %s header %q", queue, numPendingHeader, m.Header.Get(numPendingHeader))
	}
	return n + 1, m, nil
}
