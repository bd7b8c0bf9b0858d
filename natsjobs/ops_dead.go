package natsjobs

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Select picks dead letters for RedriveDead and DeleteDead: exactly one
// of its fields is set.
type Select struct {
	IDs    []string // these IDs (an ID without a dead letter is skipped)
	Prefix string   // the IDs that start with Prefix
	All    bool     // every dead letter of the queue
}

func (s Select) validate() error {
	set := 0
	if len(s.IDs) > 0 {
		set++
		for _, id := range s.IDs {
			if err := checkID(id); err != nil {
				return err
			}
		}
	}
	if s.Prefix != "" {
		set++
	}
	if s.All {
		set++
	}
	if set != 1 {
		return invalidf("Select: set exactly one of IDs, Prefix and All")
	}
	return nil
}

// RedriveDead enqueues the selected dead letters again, as Redrive does
// each (to run now, with a fresh count of attempts, replacing a pending
// job of the same ID), and returns how many. With Prefix or All it works
// through the dead letters stored when it started, a batch at a time, so
// a job that dies again meanwhile is not redriven twice. After an error,
// the jobs counted were redriven and the rest are still dead.
func (c *Client) RedriveDead(ctx context.Context, queue string, sel Select) (int, error) {
	return c.eachDead(ctx, queue, sel, func(ctx context.Context, s jetstream.Stream, dl DeadLetter, seq uint64) (bool, error) {
		if err := c.Enqueue(ctx, dl.Job); err != nil {
			return false, err
		}
		// Remove exactly the letter that was re-enqueued: a newer one
		// that arrived meanwhile stays.
		return true, c.deleteDeadMsg(ctx, s, seq)
	})
}

// DeleteDead removes the selected dead letters and returns how many.
func (c *Client) DeleteDead(ctx context.Context, queue string, sel Select) (int, error) {
	if err := sel.validate(); err != nil {
		return 0, err
	}
	if sel.All {
		if err := c.checkQueue(queue); err != nil {
			return 0, err
		}
		if err := c.ready(); err != nil {
			return 0, err
		}
		if _, err := c.workers(ctx, queue); err != nil {
			return 0, err
		}
		n, err := c.purgeStream(ctx, deadStream(queue), "", 0)
		return int(n), err
	}
	return c.eachDead(ctx, queue, sel, func(ctx context.Context, s jetstream.Stream, _ DeadLetter, seq uint64) (bool, error) {
		return true, c.deleteDeadMsg(ctx, s, seq)
	})
}

// deleteDeadMsg removes a dead letter by sequence; one already gone
// counts as removed.
func (c *Client) deleteDeadMsg(ctx context.Context, s jetstream.Stream, seq uint64) error {
	tctx, cancel := c.timeout(ctx)
	defer cancel()
	err := s.DeleteMsg(tctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) || errIs(err, jetstream.JSErrCodeMessageNotFound) {
		return nil
	}
	return c.apiErr("delete dead letter", err)
}

// deadBatch is how many dead letters eachDead holds at a time.
const deadBatch = 256

// eachDead calls fn with every selected dead letter of the queue stored
// when it starts, and counts the calls that report true.
func (c *Client) eachDead(ctx context.Context, queue string, sel Select, fn func(context.Context, jetstream.Stream, DeadLetter, uint64) (bool, error)) (int, error) {
	if err := c.checkQueue(queue); err != nil {
		return 0, err
	}
	if err := sel.validate(); err != nil {
		return 0, err
	}
	if err := c.ready(); err != nil {
		return 0, err
	}
	if _, err := c.workers(ctx, queue); err != nil {
		return 0, err
	}
	tctx, cancel := c.timeout(ctx)
	s, err := c.js.Stream(tctx, deadStream(queue))
	cancel()
	if err != nil {
		return 0, c.apiErr("dead letters", err)
	}
	n := 0
	if len(sel.IDs) > 0 {
		for _, id := range sel.IDs {
			m, err := c.lastFor(ctx, deadStream(queue), deadSubject(queue, id))
			if err != nil {
				return n, err
			}
			if m == nil {
				continue
			}
			j := directInfo(queue, id, Dead, m)
			ok, err := fn(ctx, s, deadLetterOf(j), j.Seq)
			if ok {
				n++
			}
			if err != nil {
				return n, err
			}
		}
		return n, nil
	}
	upTo := s.CachedInfo().State.LastSeq
	if upTo == 0 {
		return 0, nil
	}
	filter := deadSubject(queue, ">")
	prefix := deadSubject(queue, sel.Prefix)
	type letter struct {
		dl  DeadLetter
		seq uint64
	}
	batch := make([]letter, 0, deadBatch)
	for from := uint64(1); ; {
		batch = batch[:0]
		more, err := c.scan(ctx, deadStream(queue), filter, from, upTo, deadBatch, func(m *nats.Msg, seq uint64, stored time.Time) bool {
			from = seq + 1
			if strings.HasPrefix(m.Subject, prefix) {
				j := jobInfo(queue, m.Subject[len(filter)-1:], Dead, seq, stored, m.Header, m.Data)
				batch = append(batch, letter{deadLetterOf(j), seq})
			}
			return len(batch) < deadBatch
		})
		if err != nil {
			return n, err
		}
		for _, l := range batch {
			ok, err := fn(ctx, s, l.dl, l.seq)
			if ok {
				n++
			}
			if err != nil {
				return n, err
			}
		}
		if !more {
			return n, nil
		}
	}
}

func deadLetterOf(j JobInfo) DeadLetter {
	return DeadLetter{Job: j.Job, Attempts: j.Attempts, Err: j.LastError, Failed: j.Failed}
}
