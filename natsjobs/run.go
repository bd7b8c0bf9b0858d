package natsjobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/ttlkit/ttlkit/jobs"
	"github.com/ttlkit/ttlkit/timingwheel"
)

// run runs one delivery and reports its outcome to the server.
func (w *worker) run(d *delivery) {
	m := d.msg
	meta, err := m.Metadata()
	if err != nil {
		m.Term() // not a JetStream delivery: cannot happen on this consumer
		return
	}
	hdr := m.Header
	prior, _ := strconv.Atoi(hdr.Get(hdrAttempts))
	id, _ := idGen(m.Subject, statePrefix(w.queue, "r"))
	r := Run{
		Run: jobs.Run{
			ID:        id,
			Attempt:   prior + int(meta.NumDelivered),
			Scheduled: d.due,
			Started:   time.Now(),
		},
		Queue:   w.queue,
		Payload: m.Data,
		Header:  userHeader(hdr),
		timeout: jobTimeout(hdr),
		gen:     hdr.Get(hdrGen),
	}
	if r.Scheduled.IsZero() {
		r.Scheduled = meta.Timestamp
	}
	if h := testHookRun; h != nil {
		h(r.ID)
	}
	ctx, cancel := context.WithTimeout(w.ctx, w.c.cfg.Timeout)
	defer cancel()
	seq := meta.Sequence.Stream
	// Cancel is final: a delivery whose message was withdrawn (cancelled,
	// replaced, or settled by another run), or whose generation was
	// cancelled, does not start, however long it waited here.
	if ok, dead, err := w.c.stored(ctx, w.queue, r, seq); err != nil || !ok {
		if err != nil {
			m.NakWithDelay(scheduleLead) // not known: ask again later
			return
		}
		if dead {
			m.Ack() // a copy of a cancelled generation, still stored: remove it
		}
		// Otherwise no answer to the server: if the message is gone,
		// it forgets the delivery after AckWait; if "gone" was wrong (a
		// server shutting down answers "no message found" for any
		// message, and fails any write's expected sequence), it
		// delivers the job again. An acknowledgement would remove it
		// for good.
		if h := testHookWithdrawn; h != nil {
			h(r.ID)
		}
		return
	}
	if spec := hdr.Get(hdrCron); spec != "" {
		// A cron activation stores its successor first; one that is
		// no longer the job's current activation does not run.
		current, err := w.rearm(ctx, r, spec, m.Subject, seq)
		if err != nil {
			m.NakWithDelay(scheduleLead) // try again, the chain must not break
			return
		}
		if !current {
			// No answer: see above.
			if h := testHookWithdrawn; h != nil {
				h(r.ID)
			}
			return
		}
	}
	r.Started = time.Now()
	ev := jobs.Event{Run: r.Run, Lateness: max(r.Started.Sub(r.Scheduled), 0)}
	if r.Attempt > w.opts.Retry.Attempts {
		// Delivered again after its last attempt without an outcome:
		// its worker died meanwhile (or, in an outage, gave it back by a nak).
		ev.Outcome, ev.Err = jobs.Failed, fmt.Errorf("natsjobs: delivered %d times without an outcome", meta.NumDelivered)
		if w.bury(ctx, r.job(), seq, r.Attempt-1, ev.Err) == nil && m.AckSync(nats.Context(ctx)) == nil {
			hook(w.opts.Hooks.OnFinish, ev)
		}
		return
	}

	cancel() // the handler may run longer than Config.Timeout

	hook(w.opts.Hooks.OnStart, ev)
	stopped, err := w.call(d, r)
	w.free(d) // the next delivery comes while this outcome is stored
	ev.Err = err
	ev.Duration = time.Since(r.Started)
	settled, ok := w.settle(d)
	if !ok {
		return // abandoned by Work's shutdown, which gave it back
	}
	defer settled()
	if stopped && ev.Err != nil {
		w.giveBack(d) // cancelled by Work's shutdown: not an attempt
		return
	}
	ctx, cancel = context.WithTimeout(w.ctx, w.c.cfg.Timeout)
	defer cancel()
	var confirmed error
	switch {
	case ev.Err == nil:
		ev.Outcome = jobs.Succeeded
		if meta.NumDelivered > 1 || time.Since(d.received) > w.c.cfg.AckWait/2 {
			confirmed = w.succeedOnce(ctx, m, seq)
		} else {
			confirmed = m.AckSync(nats.Context(ctx))
		}
	case !retryable(&w.opts.Retry, ev.Err) || r.Attempt >= w.opts.Retry.Attempts:
		ev.Outcome = jobs.Failed
		if gone, err := w.withdrawn(ctx, r, seq); err != nil {
			confirmed = err
		} else if gone {
			ev.Outcome = jobs.Canceled
		} else if confirmed = w.bury(ctx, r.job(), seq, r.Attempt, ev.Err); confirmed == nil {
			confirmed = m.AckSync(nats.Context(ctx))
		}
	default:
		ev.Outcome = jobs.Retrying
		var gone bool
		if gone, confirmed = w.retry(ctx, r, m, seq, ev.Err); gone {
			ev.Outcome = jobs.Canceled
		}
	}
	if confirmed == nil {
		hook(w.opts.Hooks.OnFinish, ev)
	}
}

// succeedOnce stores the success of a delivery that another worker may
// have run as well: a redelivery, whose earlier holder may still be
// running it, or a delivery held longer than AckWait/2, which the server
// may have given to another worker meanwhile (its claim lapsed: the
// keeper's signals were lost in a cluster's leader change, or the process
// stalled). The server confirms the acknowledgement of every delivery of a
// message, the stale one's too, so two such runs would both be confirmed.
// Instead, the first to delete the message from the work stream, by
// sequence, stores the outcome; the other one finds it gone and is not
// confirmed (errTaken), like a run whose job was cancelled meanwhile. Both
// then acknowledge, and wait for it, so that the server's pending entry is
// cleared (Stats) by the time OnFinish runs; the outcome does not depend
// on that answer. (A delivery acked within AckWait/2 of its receipt, and
// not a redelivery, was held by no one else: it keeps the single round
// trip of a double acknowledgement.)
func (w *worker) succeedOnce(ctx context.Context, m *nats.Msg, seq uint64) error {
	err := w.c.deleteMsg(ctx, w.queue, seq)
	if err != nil && !errors.Is(err, errTaken) {
		return err // no acknowledgement: redelivered if it is still stored
	}
	m.AckSync(nats.Context(ctx))
	return err
}

// errTaken is succeedOnce's answer when the message was gone: another run
// of the job stored its outcome, or it was cancelled or replaced.
var errTaken = errors.New("natsjobs: outcome stored by another run")

// call runs the handler with its ctx and turns a panic into an error;
// stopped reports that Work's shutdown cancelled the ctx. (The keeper,
// not call, tells the server the delivery is in progress.)
func (w *worker) call(d *delivery, r Run) (stopped bool, err error) {
	ctx, cancel := context.WithCancelCause(w.ctx)
	defer cancel(nil)
	w.mu.Lock()
	d.cancel = cancel
	if w.cancelling {
		cancel(ErrShutdown)
	}
	w.mu.Unlock()
	run := ctx
	if t := cmp.Or(r.timeout, w.opts.Timeout); t > 0 {
		var stop context.CancelFunc
		run, stop = context.WithTimeout(ctx, t)
		defer stop()
	}
	defer func() {
		if p := recover(); p != nil {
			err = &timingwheel.PanicError{Value: p, Stack: debug.Stack()}
		}
		stopped = context.Cause(ctx) == ErrShutdown
	}()
	return false, w.fn(run, r)
}

// jobTimeout reads Job.Timeout from a job's headers (zero if absent).
func jobTimeout(h nats.Header) time.Duration {
	ns, _ := strconv.ParseInt(h.Get(hdrTimeout), 10, 64)
	return time.Duration(max(ns, 0))
}

// giveBack returns deliveries to the queue without using up an attempt
// (a Nak would: the server counts deliveries, and the next run's Attempt
// with them). Each is stored again as a fresh copy of its message, with
// the count of failed attempts before this one and its time, on condition
// that the message is still the job's ready message (a job cancelled or
// replaced meanwhile stays so); the server then drops the old message
// (one per subject) and the delivery is acknowledged. A copy that cannot
// be stored within Config.Timeout is given back by a Nak instead.
func (w *worker) giveBack(ds ...*delivery) {
	type pending struct {
		d *delivery
		f jetstream.PubAckFuture
	}
	var sent []pending
	for _, d := range ds {
		msg, seq, ok := w.freshCopy(d.msg)
		if !ok {
			d.msg.Nak()
			w.done(d)
			continue
		}
		f, err := w.c.js.PublishMsgAsync(msg, jetstream.WithExpectLastSequenceForSubject(seq, msg.Subject))
		if err != nil {
			d.msg.Nak()
			w.done(d)
			continue
		}
		sent = append(sent, pending{d, f})
	}
	t := time.NewTimer(w.c.cfg.Timeout)
	defer t.Stop()
	for _, p := range sent {
		select {
		case <-p.f.Ok():
			p.d.msg.Ack()
		case err := <-p.f.Err():
			if wrongLastSeq(err) {
				p.d.msg.Ack() // withdrawn meanwhile
			} else {
				p.d.msg.Nak()
			}
		case <-t.C:
			p.d.msg.Nak()
		}
		w.done(p.d)
	}
}

// freshCopy builds the message that gives m back: its subject, payload,
// the job's headers and this package's, with the server's (Nats-...)
// left out, since those of a schedule would withdraw the job's next
// one. It returns m's stream sequence too.
func (w *worker) freshCopy(m *nats.Msg) (*nats.Msg, uint64, bool) {
	meta, err := m.Metadata()
	if err != nil {
		return nil, 0, false
	}
	h := m.Header
	msg := &nats.Msg{Subject: m.Subject, Data: m.Data, Header: make(nats.Header, len(h))}
	for k, v := range h {
		if !strings.HasPrefix(k, "Nats-") {
			msg.Header[k] = v
		}
	}
	prior, _ := strconv.Atoi(h.Get(hdrAttempts))
	if failed := prior + int(meta.NumDelivered) - 1; failed > 0 {
		msg.Header[hdrAttempts] = []string{strconv.Itoa(failed)}
	} else {
		delete(msg.Header, hdrAttempts)
	}
	if h.Get(hdrDue) == "" { // keep Run.Scheduled: when it was stored
		msg.Header[hdrDue] = []string{strconv.FormatInt(meta.Timestamp.UnixNano(), 10)}
	}
	return msg, meta.Sequence.Stream, true
}

// retry arranges the next attempt after the policy's delay. A short delay
// (or any delay of a cron job, whose schedule subject is taken) is the
// server's redelivery; a longer one becomes a schedule carrying the count
// of failed attempts, and the delivery is acknowledged once that is
// stored, so no worker and no pending slot is held while it waits. The
// schedule is stored only if the delivery is still the job's ready
// message: gone reports a job cancelled or replaced while it ran, which
// is not retried.
func (w *worker) retry(ctx context.Context, r Run, m *nats.Msg, seq uint64, cause error) (gone bool, err error) {
	delay := backoff(&w.opts.Retry, r.Attempt)
	if delay <= scheduleLead || m.Header.Get(hdrCron) != "" {
		// A nak of a withdrawn message is a no-op: no retry either.
		return false, m.NakWithDelay(min(delay, w.c.cfg.AckWait))
	}
	msg, err := w.c.prepare(r.job(), time.Now().Add(delay), r.Attempt)
	if err != nil {
		return false, err
	}
	msg.Header[hdrError] = []string{errorText(cause)} // for Get and List
	_, err = w.c.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequenceForSubject(seq, m.Subject))
	if wrongLastSeq(err) {
		m.Ack()
		return true, nil
	}
	if err != nil {
		m.NakWithDelay(delay)
		return false, w.c.apiErr("retry "+r.ID, err)
	}
	return false, m.AckSync(nats.Context(ctx))
}

// withdrawn reports whether the delivery's message left the work stream
// (the job was cancelled or replaced) while it ran.
func (w *worker) withdrawn(ctx context.Context, r Run, seq uint64) (bool, error) {
	ok, _, err := w.c.stored(ctx, w.queue, r, seq)
	return !ok && err == nil, err
}

// Test hooks, called with the job's ID by run: testHookRun when a runner
// takes a delivery, testHookWithdrawn when a
// delivery does not start because its message was withdrawn.
var testHookRun, testHookWithdrawn func(id string)

// hook calls a user hook, if set, and recovers its panic: a hook must not
// take the worker down with it.
func hook(h func(jobs.Event), ev jobs.Event) {
	if h == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			slog.Error("natsjobs: hook panicked", "job", ev.ID, "panic", p)
		}
	}()
	h(ev)
}

func (r *Run) job() Job {
	return Job{Queue: r.Queue, ID: r.ID, Payload: r.Payload, Header: r.Header, Timeout: r.timeout, gen: r.gen}
}

// userHeader returns the job's own headers, without the reserved ones.
func userHeader(h nats.Header) map[string]string {
	var out map[string]string
	for k, v := range h {
		if strings.HasPrefix(k, "Nats-") || strings.HasPrefix(k, "Ttlkit-") || len(v) == 0 {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(h))
		}
		out[k] = v[0]
	}
	return out
}
