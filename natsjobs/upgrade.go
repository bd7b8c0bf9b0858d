package natsjobs

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// upgrade moves what earlier versions stored in the queue's work stream,
// one subject per job state (natsjobs.<q>.s.<id>, natsjobs.<q>.r.<id>)
// and tombstones with an expiry (natsjobs.<q>.x.<id>.<gen>), to the
// subjects of their generation (natsjobs.go), so that enqueueing, Cancel
// and Get see them. Open runs it for each of Config.Queues; when nothing
// is left in the old layout it costs three reads that find nothing.
//
// Each message is stored again on its generation's subjects (a schedule
// keeps its time, a ready copy its time and failed attempts; one without
// a generation gets one made of its sequence, so that two processes
// upgrading at once store the same subject) unless that subject holds a
// message already, and then deleted. Tombstones go first, so that a late
// copy stays condemned, then schedules, then ready copies, among them any
// copy a schedule fired meanwhile. A copy a schedule fires between its
// move and its delete, or that a worker of this version starts while
// another process moves it, runs twice; a crash midway leaves the rest to
// the next Open. Processes of earlier versions must be stopped first: they
// would go on storing the old layout, and take new copies for jobs with a
// generation in their ID.
func (c *Client) upgrade(ctx context.Context, q string) error {
	stream := workStream(q)
	type old struct {
		m   *nats.Msg
		seq uint64
		at  time.Time
	}
	for _, filter := range []string{tombSubject(q, "*.*"), statePrefix(q, "s") + "*", statePrefix(q, "r") + "*"} {
		var msgs []old
		_, err := c.scan(ctx, stream, filter, 1, 0, scanBatch, func(m *nats.Msg, seq uint64, stored time.Time) bool {
			msgs = append(msgs, old{m, seq, stored})
			return true
		})
		if err != nil {
			return err
		}
		for _, o := range msgs {
			msg := movedMsg(q, o.m, o.seq, o.at)
			if msg.Subject != "" {
				err := c.publish(ctx, msg, "upgrade "+o.m.Subject)
				if err != nil && !wrongLastSeq(err) {
					return err
				}
			}
			if err := c.deleteMsg(ctx, q, o.seq); err != nil && !errors.Is(err, errTaken) {
				return err
			}
		}
	}
	return nil
}

// movedMsg returns the message that takes the place of m, stored in the
// old layout with sequence seq at time at: its subject is empty for a
// message of no known kind, which is only deleted.
func movedMsg(q string, m *nats.Msg, seq uint64, at time.Time) *nats.Msg {
	rest := strings.TrimPrefix(m.Subject, "natsjobs."+q+".")
	kind, id, _ := strings.Cut(rest, ".")
	msg := &nats.Msg{Data: m.Data, Header: nats.Header{}}
	if kind == "x" { // a tombstone: x.<id>.<gen>
		id, gen, _ := strings.Cut(id, ".")
		msg.Subject, msg.Data = tombSubject(q, gen), []byte(id)
		return msg // unconditional: storing it twice does no harm
	}
	for k, v := range m.Header {
		if !strings.HasPrefix(k, "Nats-") {
			msg.Header[k] = v
		}
	}
	gen := m.Header.Get(hdrGen)
	if gen == "" {
		gen = "u" + strconv.FormatUint(seq, 10)
	}
	switch kind {
	case "s":
		for k, v := range m.Header {
			if strings.HasPrefix(k, "Nats-Schedule") {
				msg.Header[k] = v
			}
		}
		msg.Header[hdrGen] = []string{gen}
		msg.Header[jetstream.ScheduleTargetHeader] = []string{readySubject(q, id, gen)}
		msg.Subject = schedSubject(q, id, gen)
	case "r":
		if m.Header.Get(hdrDue) == "" { // keep Run.Scheduled: when it was stored
			msg.Header[hdrDue] = []string{strconv.FormatInt(at.UnixNano(), 10)}
		}
		msg.Subject = readySubject(q, id, gen)
	default:
		return &nats.Msg{}
	}
	expect(msg, msg.Subject, 0)
	return msg
}
