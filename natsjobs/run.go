package natsjobs

import (
	"context"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// run runs one delivery and reports its outcome to the server.
func (w *worker) run(d *delivery) {
	m := d.msg
	meta, err := m.Metadata()
	if err != nil {
		m.Term() // not a JetStream delivery: cannot happen on this consumer
		return
	}
	hdr := m.Headers()
	prior, _ := strconv.Atoi(hdr.Get(hdrAttempts))
	r := Run{
		Queue:     w.queue,
		ID:        idOf(m.Subject(), readySubject(w.queue, "")),
		Payload:   m.Data(),
		Header:    userHeader(hdr),
		Attempt:   prior + int(meta.NumDelivered),
		Scheduled: d.due,
		Started:   time.Now(),
	}
	if r.Scheduled.IsZero() {
		r.Scheduled = meta.Timestamp
	}
	ctx, cancel := context.WithTimeout(w.ctx, w.c.cfg.Timeout)
	defer cancel()
	seq := meta.Sequence.Stream
	if max := w.opts.Retry.MaxAttempts; r.Attempt > max {
		// Delivered again after its last attempt without an outcome:
		// the worker died or Work stopped meanwhile.
		err := fmt.Errorf("natsjobs: delivered %d times without an outcome", meta.NumDelivered)
		ok := w.bury(ctx, r.job(), seq, r.Attempt-1, err) == nil && m.DoubleAck(ctx) == nil
		w.finished(Finish{Run: r, Err: err, Outcome: Dead, Confirmed: ok})
		return
	}

	err = w.call(r, m)
	f := Finish{Run: r, Err: err, Duration: time.Since(r.Started)}
	switch {
	case err == nil:
		f.Outcome = Succeeded
		f.Confirmed = m.DoubleAck(ctx) == nil
	case isPermanent(err) || r.Attempt >= w.opts.Retry.MaxAttempts:
		f.Outcome = Dead
		f.Confirmed = w.bury(ctx, r.job(), seq, r.Attempt, err) == nil && m.DoubleAck(ctx) == nil
	default:
		f.Outcome = Retrying
		f.Confirmed = w.retry(ctx, r, m) == nil
	}
	w.finished(f)
}

// call runs the handler, telling the server every AckWait/3 that the
// delivery is still in progress, and turns a panic into an error.
func (w *worker) call(r Run, m jetstream.Msg) (err error) {
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(w.c.cfg.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				m.InProgress()
			case <-done:
				return
			}
		}
	}()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("natsjobs: handler panic: %v\n%s", p, debug.Stack())
		}
	}()
	return w.fn(w.ctx, r)
}

// retry arranges the next attempt after the policy's delay. A short delay
// (or any delay of a cron job, whose schedule subject is taken) is the
// server's redelivery; a longer one becomes a schedule carrying the count
// of failed attempts, and the delivery is acknowledged once that is
// stored, so no worker and no pending slot is held while it waits.
func (w *worker) retry(ctx context.Context, r Run, m jetstream.Msg) error {
	delay := w.opts.Retry.delay(r.Attempt)
	if delay <= scheduleLead || m.Headers().Get(hdrCron) != "" {
		return m.NakWithDelay(min(delay, w.c.cfg.AckWait))
	}
	if err := w.c.enqueue(ctx, r.job(), time.Now().Add(delay), r.Attempt, false); err != nil {
		m.NakWithDelay(delay)
		return err
	}
	return m.DoubleAck(ctx)
}

func (w *worker) finished(f Finish) {
	if h := w.opts.Hooks.OnFinish; h != nil {
		h(f)
	}
}

func (r *Run) job() Job {
	return Job{Queue: r.Queue, ID: r.ID, Payload: r.Payload, Header: r.Header}
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
