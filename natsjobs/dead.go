package natsjobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DeadLetter is a job that failed for the last time, as stored in its
// queue's dead letters: at most one per Queue and ID (a later failure of
// the same ID replaces it).
type DeadLetter struct {
	Job      Job
	Attempts int       // runs started, including crashed ones
	Err      string    // the last error's text
	Failed   time.Time // when it was dead-lettered
}

// bury stores j as a dead letter. The message ID names the delivery, so a
// second attempt to bury the same message (a worker that died between
// storing and acknowledging, then the next delivery's worker) is dropped
// by the server and WorkOptions.DeadLetter runs once.
func (w *worker) bury(ctx context.Context, j Job, seq uint64, attempts int, cause error) error {
	text := strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, cause.Error())
	if len(text) > 2048 {
		text = text[:2048]
	}
	now := time.Now()
	msg := &nats.Msg{Subject: deadSubject(j.Queue, j.ID), Data: j.Payload, Header: nats.Header{}}
	for k, v := range j.Header {
		msg.Header.Set(k, v)
	}
	msg.Header.Set(hdrAttempts, strconv.Itoa(attempts))
	if j.Timeout > 0 {
		msg.Header.Set(hdrTimeout, strconv.FormatInt(int64(j.Timeout), 10))
	}
	msg.Header.Set(hdrError, text)
	msg.Header.Set(hdrFailed, strconv.FormatInt(now.UnixNano(), 10))
	ack, err := w.c.js.PublishMsg(ctx, msg, jetstream.WithMsgID(j.ID+"/"+strconv.FormatUint(seq, 10)))
	if err != nil {
		return w.c.apiErr("dead letter "+j.ID, err)
	}
	if h := w.opts.DeadLetter; h != nil && !ack.Duplicate {
		h(DeadLetter{Job: j, Attempts: attempts, Err: text, Failed: now})
	}
	return nil
}

// buryLeftovers empties what an earlier version left: its advisory stream
// holds the server's notices of deliveries that reached the consumer's
// MaxDeliver then. The server delivers such a message no more, so each is
// buried here (as run buries one delivered beyond its attempts) and
// deleted from the work stream; then the advisory stream is deleted. Work
// calls it before it pulls, so nothing waits on it later.
func (w *worker) buryLeftovers(ctx context.Context) error {
	adv, err := w.c.js.Stream(ctx, advStream(w.queue))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return w.c.apiErr("stream "+advStream(w.queue), err)
	}
	work, err := w.c.js.Stream(ctx, workStream(w.queue))
	if err != nil {
		return w.c.apiErr("stream "+workStream(w.queue), err)
	}
	st := adv.CachedInfo().State
	for seq := st.FirstSeq; st.Msgs > 0 && seq <= st.LastSeq; seq++ {
		m, err := adv.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return w.c.apiErr("advisory", err)
		}
		var a struct {
			StreamSeq  uint64 `json:"stream_seq"`
			Deliveries int    `json:"deliveries"`
		}
		if json.Unmarshal(m.Data, &a) != nil || a.StreamSeq == 0 {
			continue
		}
		raw, err := work.GetMsg(ctx, a.StreamSeq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // acknowledged or replaced meanwhile
		}
		if err != nil {
			return w.c.apiErr("advisory", err)
		}
		prefix := statePrefix(w.queue, "r")
		if !strings.HasPrefix(raw.Subject, prefix) {
			continue
		}
		prior, _ := strconv.Atoi(raw.Header.Get(hdrAttempts))
		id, _ := idGen(raw.Subject, prefix)
		j := Job{Queue: w.queue, ID: id, Payload: raw.Data, Header: userHeader(raw.Header), Timeout: jobTimeout(raw.Header)}
		cause := fmt.Errorf("natsjobs: delivered %d times without an outcome", a.Deliveries)
		if err := w.bury(ctx, j, a.StreamSeq, prior+a.Deliveries, cause); err != nil {
			return err
		}
		if err := w.c.deleteMsg(ctx, w.queue, a.StreamSeq); err != nil && !errors.Is(err, errTaken) {
			return err
		}
	}
	if err := w.c.js.DeleteStream(ctx, advStream(w.queue)); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return w.c.apiErr("delete stream "+advStream(w.queue), err)
	}
	return nil
}

// DeadLetters returns the queue's dead letters, oldest first.
func (c *Client) DeadLetters(ctx context.Context, queue string) ([]DeadLetter, error) {
	if err := c.checkQueue(queue); err != nil {
		return nil, err
	}
	if err := c.ready(); err != nil {
		return nil, err
	}
	ctx, cancel := c.timeout(ctx)
	defer cancel()
	s, err := c.js.Stream(ctx, deadStream(queue))
	if err != nil {
		return nil, c.apiErr("dead letters", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, c.apiErr("dead letters", err)
	}
	if info.State.Msgs == 0 {
		return nil, nil
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return nil, c.apiErr("dead letters", err)
	}
	var out []DeadLetter
	prefix := deadSubject(queue, "")
	for {
		m, err := cons.Next(jetstream.FetchContext(ctx))
		if err != nil {
			return out, c.apiErr("dead letters", err)
		}
		meta, err := m.Metadata()
		if err != nil {
			return out, c.apiErr("dead letters", err)
		}
		out = append(out, deadLetter(queue, idOf(m.Subject(), prefix), m.Data(), m.Headers()))
		if meta.NumPending == 0 || meta.Sequence.Stream >= info.State.LastSeq {
			return out, nil
		}
	}
}

func deadLetter(queue, id string, data []byte, h nats.Header) DeadLetter {
	attempts, _ := strconv.Atoi(h.Get(hdrAttempts))
	ns, _ := strconv.ParseInt(h.Get(hdrFailed), 10, 64)
	return DeadLetter{
		Job:      Job{Queue: queue, ID: id, Payload: data, Header: userHeader(h), Timeout: jobTimeout(h)},
		Attempts: attempts,
		Err:      h.Get(hdrError),
		Failed:   time.Unix(0, ns),
	}
}

// Redrive enqueues the dead job with this ID again, to run now with a
// fresh count of attempts, and removes its dead letter. It returns
// ErrNotFound if the queue holds no dead letter for id.
func (c *Client) Redrive(ctx context.Context, queue, id string) error {
	if err := c.checkQueue(queue); err != nil {
		return err
	}
	if err := checkID(id); err != nil {
		return err
	}
	if err := c.ready(); err != nil {
		return err
	}
	ctx, cancel := c.timeout(ctx)
	defer cancel()
	s, err := c.js.Stream(ctx, deadStream(queue))
	if err != nil {
		return c.apiErr("redrive", err)
	}
	raw, err := s.GetLastMsgForSubject(ctx, deadSubject(queue, id))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("%w: no dead letter %s in queue %s", ErrNotFound, id, queue)
	}
	if err != nil {
		return c.apiErr("redrive", err)
	}
	dl := deadLetter(queue, id, raw.Data, raw.Header)
	if err := c.Enqueue(ctx, dl.Job); err != nil {
		return err
	}
	// Remove exactly the letter that was re-enqueued: a newer one that
	// arrived meanwhile stays.
	return c.apiErr("redrive", s.DeleteMsg(ctx, raw.Sequence))
}
