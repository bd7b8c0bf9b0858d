package natsjobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Withdrawing a job: the one routine that stores a job's message under its
// Unique policy (Enqueue, EnqueueAt, EnqueueBatch, EnqueueCron), and Cancel.
//
// Every message of a job carries a generation, a random name given when
// the job is enqueued and kept by every message that carries the job on
// from it (the copy the server fires, a cron job's next activation, a
// retry's schedule, a copy given back), as the last token of its subject;
// a schedule carries it in a header too (Ttlkit-Gen), and so does the
// copy it fires. The server builds a fired copy from the schedule and
// stores it a moment later, even when the schedule was withdrawn in
// between; so whoever withdraws a schedule first stores the generation's
// tombstone (natsjobs.<q>.x.<gen>), and a run of a fired copy starts only
// if the copy is stored and its generation has no tombstone (Client.stored,
// one request). The late copy lands on its own generation's subject: it
// purges no schedule but its own (gone) and replaces no other copy, so a
// job enqueued again meanwhile is untouched. A tombstone stays until a
// worker's sweep (sweep) removes it, at least tombstoneAge after it was
// stored, together with the late copy, if any.

// tombstoneAge is how old a tombstone must be before a sweep removes it:
// a copy fired from a withdrawn schedule lands within one server step
// (microseconds on one server, one proposal in a cluster) of the
// withdrawal, and a minute leaves room for a stalled server and clock
// steps. A variable for tests.
var tombstoneAge = time.Minute

// store stores msg, j's message built by prepare or cronMsg, under
// j.Unique. The first request is conditional on the ID holding no message
// (expectFirst), so that a new ID costs one request; Replace then goes on
// with replace.
func (c *Client) store(ctx context.Context, j Job, msg *nats.Msg, what string) error {
	expectFirst(msg, j)
	err := c.publish(ctx, msg, what)
	if !wrongLastSeq(err) {
		return err
	}
	if j.Unique != Replace {
		return existsErr(j)
	}
	return c.replace(ctx, j, msg, what)
}

// expectFirst makes msg of j conditional, in the same step as its store,
// on the ID holding no message: no schedule nor ready copy of any
// generation (a wildcard over its subjects). Under Keep and Refuse that
// is the check; under Replace, a refusal leads to replace.
func expectFirst(msg *nats.Msg, j Job) {
	expect(msg, jobSubjects(j.Queue, j.ID), 0)
}

// expect makes msg conditional on the last message stored on subject
// (which may be a wildcard) having sequence seq, 0 for none.
func expect(msg *nats.Msg, subject string, seq uint64) {
	msg.Header[jetstream.ExpectedLastSubjSeqHeader] = []string{strconv.FormatUint(seq, 10)}
	msg.Header[jetstream.ExpectedLastSubjSeqSubjHeader] = []string{subject}
}

// wrongLastSeq reports the server's refusal of a publish whose expected
// last sequence on a subject did not hold.
func wrongLastSeq(err error) bool {
	return errIs(err, jetstream.JSErrCodeStreamWrongLastSequence) || errIs(err, jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// replace stores msg of j (see store) over what the ID holds: it withdraws
// the ID's messages as Cancel does, then publishes msg on condition that
// the ID holds none. Refused, it starts over: a ready copy or schedule
// stored meanwhile (a concurrent enqueue, a cron activation firing or
// re-arming) is withdrawn by the next round instead of staying beside
// msg. Concurrent enqueues of an ID thus leave one of them stored, as if
// they had run one after the other.
func (c *Client) replace(ctx context.Context, j Job, msg *nats.Msg, what string) error {
	var waited time.Duration // while the server was busy with the ID
	for tries := 0; tries < replaceTries; {
		if _, err := c.withdraw(ctx, j.Queue, j.ID, false, what); err != nil {
			return err
		}
		expect(msg, jobSubjects(j.Queue, j.ID), 0)
		err := c.publish(ctx, msg, what)
		switch {
		case busy(err):
			if err := c.waitBusy(ctx, &waited, what, err); err != nil {
				return err
			}
		case wrongLastSeq(err):
			tries++
		default:
			return err
		}
	}
	return fmt.Errorf("natsjobs: %s: the job kept changing while it was replaced", what)
}

// busy reports the server's refusal of a condition on a subject that a
// write not yet applied touches: a replicated stream refuses it (after an
// election, until the quorum caught up). Nothing changed; ask again.
func busy(err error) bool {
	return errIs(err, jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// waitBusy waits before asking again after busy(cause), up to
// Config.Timeout in all (*waited), then fails with ErrUnavailable.
func (c *Client) waitBusy(ctx context.Context, waited *time.Duration, what string, cause error) error {
	if *waited >= c.cfg.Timeout {
		return fmt.Errorf("%w: %s: a write of the job is not settled: %w", ErrUnavailable, what, cause)
	}
	d := min(max(*waited, 5*time.Millisecond), 100*time.Millisecond) // doubling
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return c.apiErr(what, ctx.Err())
	}
	*waited += d
	return nil
}

// replaceTries bounds replace's and Cancel's rounds: each needs a message
// of the ID stored by someone else in the moment between two requests.
const replaceTries = 10

// testHookPurged, if set, is called when replace has withdrawn what the ID
// held and before it publishes j's message, and after Cancel's first purge.
var testHookPurged func(j Job)

// Cancel removes the job with this Queue and ID: its schedule, its due
// copy, its pending retries; for a cron job, its next activation and the
// current one, so that it fires no more. It reports whether anything was
// removed. Once it returned, no removed copy starts: not one a worker
// already received and holds until due, nor one a runner is about to
// start, nor one the server fired from the schedule as Cancel removed it
// (each run first checks with the server that its copy is still stored
// and its generation not cancelled). A run already started finishes, but
// is neither retried nor dead-lettered if it fails, and a cron activation
// that started does not store the next one; Cancel does not wait for it.
func (c *Client) Cancel(ctx context.Context, queue, id string) (bool, error) {
	if err := c.checkQueue(queue); err != nil {
		return false, err
	}
	if err := checkID(id); err != nil {
		return false, err
	}
	if err := c.ready(); err != nil {
		return false, err
	}
	n, err := c.withdraw(ctx, queue, id, true, "cancel "+id)
	return n > 0, err
}

// withdraw removes the ID's messages and returns how many: its ready
// copies, and its schedule after its generation's tombstone. With final
// (Cancel), it ends only when no message of the ID is left; otherwise
// (replace) the caller's conditional publish checks that.
func (c *Client) withdraw(ctx context.Context, queue, id string, final bool, what string) (uint64, error) {
	sched, ready := statePrefix(queue, "s")+id+".*", statePrefix(queue, "r")+id+".*"
	var removed uint64
	var waited time.Duration // while the server was busy with the ID
	for tries := 0; tries < replaceTries; {
		// The schedule is read while the ready copies are purged (one
		// round trip): whichever the server serves first, the tombstone
		// below is stored only if the ID holds nothing newer than the
		// schedule read, and without a schedule the read is repeated
		// after the purge. A cron activation re-arms, and a failed run
		// stores its retry's schedule, only while its copy is stored.
		var s *nats.Msg
		n, err := both(func() (err error) {
			s, err = c.leaderLast(ctx, queue, sched)
			return err
		}, func() (uint64, error) {
			return c.purge(ctx, queue, ready, 0)
		})
		if err != nil {
			return removed, err
		}
		removed += n
		if h := testHookPurged; h != nil {
			h(Job{Queue: queue, ID: id})
		}
		if s == nil {
			if !final {
				return removed, nil
			}
			// No schedule, unless a re-arm or retry stored one before
			// the purge: then again.
			if s, err = c.leaderLast(ctx, queue, sched); err != nil || s == nil {
				return removed, err
			}
			tries++
			continue
		}
		// Tombstone the schedule's generation on condition that the ID
		// holds nothing newer: no copy it fired, no schedule replacing
		// it. Then any copy it fires late is condemned, and the
		// schedule read is the newest the purge below removes.
		switch err := c.tombstone(ctx, queue, id, msgSeq(s), s); {
		case busy(err):
			if err := c.waitBusy(ctx, &waited, what, err); err != nil {
				return removed, err
			}
			continue
		case wrongLastSeq(err):
			tries++
			continue
		case err != nil:
			return removed, err
		}
		// The schedule read, and together with it (one round trip) a
		// copy it fired since the tombstone: condemned, it need not wait
		// for a worker to drop it.
		var m uint64
		n, err = both(func() (err error) {
			m, err = c.purge(ctx, queue, ready, 0)
			return err
		}, func() (uint64, error) {
			return c.purge(ctx, queue, sched, msgSeq(s)+1)
		})
		return removed + n + m, err
	}
	return removed, fmt.Errorf("natsjobs: %s: the job kept changing", what)
}

// both runs f on a goroutine of its own and g on the caller's, so that
// their requests travel together, and returns g's count with g's error,
// else f's.
func both(f func() error, g func() (uint64, error)) (uint64, error) {
	ferr := make(chan error, 1)
	go func() { ferr <- f() }()
	n, err := g()
	if e := <-ferr; err == nil {
		err = e
	}
	return n, err
}

// tombstone stores the tombstone of schedule s's generation (none without
// one) on condition that the last message of the ID has sequence seq. Its
// payload is the ID, for the sweep.
func (c *Client) tombstone(ctx context.Context, queue, id string, seq uint64, s *nats.Msg) error {
	gen := s.Header.Get(hdrGen)
	if gen == "" {
		return nil
	}
	t := &nats.Msg{Subject: tombSubject(queue, gen), Data: []byte(id), Header: nats.Header{}}
	expect(t, jobSubjects(queue, id), seq)
	return c.publish(ctx, t, "cancel "+id)
}

// leaderLast returns the last message on subject in the queue's work
// stream, nil if none, read from the stream's leader (a follower could
// answer from before a write this call must see).
func (c *Client) leaderLast(ctx context.Context, queue, subject string) (*nats.Msg, error) {
	if c.cfg.Replicas == 1 {
		return c.lastFor(ctx, workStream(queue), subject)
	}
	return c.leaderGet(ctx, workStream(queue), func(ctx context.Context, s jetstream.Stream) (*jetstream.RawStreamMsg, error) {
		return s.GetLastMsgForSubject(ctx, subject)
	})
}

// msgSeq is the stream sequence of a message read by leaderLast, 0 for nil.
func msgSeq(m *nats.Msg) uint64 {
	if m == nil {
		return 0
	}
	seq, _ := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	return seq
}

// purge removes the messages on subject from the queue's work stream, those
// with a sequence below before only if before > 0, and returns how many.
func (c *Client) purge(ctx context.Context, queue, subject string, before uint64) (uint64, error) {
	return c.purgeStream(ctx, workStream(queue), subject, before)
}

// stored reports whether the copy of run r with stream sequence seq may
// start: ok when the queue's work stream still holds it and its
// generation has no tombstone; dead when the generation has one (the copy
// may still be stored: the caller removes it). The message of a job stays
// stored from its enqueueing to its outcome (the work stream drops it on
// the acknowledgement); Cancel and an enqueue that replaces the job purge
// it, another run's stored outcome deletes it, a withdrawn schedule's
// generation is tombstoned before any copy it fires late is stored, and
// the sweep purges such a copy before it removes the tombstone. The
// server applies these in order, so once one of them returned, stored
// answers false. One read by sequence from the stream's leader (with one
// replica, its only server, which answers a direct read inline), and for
// a copy fired from a schedule (it has a Ttlkit-Gen header) the
// tombstone's read at the same time.
func (c *Client) stored(ctx context.Context, queue string, r Run, seq uint64) (ok, dead bool, err error) {
	ctx, cancel := c.timeout(ctx)
	defer cancel()
	req := strconv.AppendUint([]byte(`{"no_hdr":true,"seq":`), seq, 10)
	if r.gen == "" {
		ok, err = c.has(ctx, queue, append(req, '}'))
		return ok, false, err
	}
	type result struct {
		found bool
		err   error
	}
	tomb := make(chan result, 1)
	go func() {
		req := appendJSON([]byte(`{"no_hdr":true,"last_by_subj":`), tombSubject(queue, r.gen))
		found, err := c.has(ctx, queue, append(req, '}'))
		tomb <- result{found, err}
	}()
	ok, err = c.has(ctx, queue, append(req, '}'))
	t := <-tomb
	if t.err != nil {
		return false, false, t.err
	}
	if t.found {
		return false, true, nil
	}
	return ok, false, err
}

// has reports whether the work stream's leader finds a message for the
// message-get request req: a direct read with one replica (the stream's
// only copy answers inline, rather than queued for the API's workers);
// with more, the leader's API, since a follower could answer from before
// a purge.
func (c *Client) has(ctx context.Context, queue string, req []byte) (bool, error) {
	if c.cfg.Replicas == 1 {
		resp, err := c.nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET."+workStream(queue), req)
		if err != nil {
			return false, c.apiErr("check "+string(req), err)
		}
		switch status := resp.Header.Get("Status"); status {
		case "":
			return true, nil
		case "404":
			return false, nil
		default:
			return false, fmt.Errorf("natsjobs: check %s: status %s %s", req, status, resp.Header.Get("Description"))
		}
	}
	resp, err := c.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+workStream(queue), req)
	if err != nil {
		return false, c.apiErr("check "+string(req), err)
	}
	// The answer is the message, subject and base64 data and headers,
	// or an error: no other `"error":` can appear in it.
	if !bytes.Contains(resp.Data, []byte(`"error":`)) {
		return true, nil
	}
	var r struct {
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &r); err != nil || r.Error == nil {
		return false, fmt.Errorf("natsjobs: check %s: %q", req, resp.Data)
	}
	if r.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
		return false, nil
	}
	return false, c.apiErr("check "+string(req), r.Error)
}

// appendJSON appends s as a JSON string: a subject has no control
// characters (checkID), so only quotes and backslashes need escaping.
func appendJSON(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

// tombstones counts the messages of the queue's work stream that are not
// jobs, its tombstones and its head marker (the stream's message count less
// them is its jobs'): one batched direct read of the first, which carries
// how many follow.
func (c *Client) tombstones(ctx context.Context, queue string) (int, error) {
	filter := "natsjobs." + queue + ".x.>" // tombSubject and headSubject
	req, _ := json.Marshal(directGet{Seq: 1, NextFor: filter, Batch: 1})
	m, err := c.direct(ctx, "$JS.API.DIRECT.GET."+workStream(queue), req)
	if errors.Is(err, errNoDirect) {
		tctx, cancel := c.timeout(ctx)
		defer cancel()
		s, err := c.js.Stream(tctx, workStream(queue))
		if err != nil {
			return 0, c.apiErr("stats", err)
		}
		info, err := s.Info(tctx, jetstream.WithSubjectFilter(filter))
		if err != nil {
			return 0, c.apiErr("stats", err)
		}
		n := 0
		for _, k := range info.State.Subjects {
			n += int(k)
		}
		return n, nil
	}
	if err != nil || m == nil {
		return 0, err
	}
	n, _ := strconv.Atoi(m.Header.Get(numPendingHeader))
	return n + 1, nil
}
