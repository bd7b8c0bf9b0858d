package natsjobs

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/ttlkit/ttlkit/jobs/cron"
)

// EnqueueCron stores j as a repeating job on a cron spec, replacing any
// job with the same Queue and ID (or as j.Unique says, see Enqueue). Its activations are the times package
// jobs/cron computes for spec in loc, daylight-saving rules included: a
// fixed time that a change skips does not run that day, one that it
// repeats runs once (at its first occurrence), and wildcard or stepped
// fields fire at every real instant that matches.
//
// spec is checked with jobs/cron: five fields (minute first), six
// (seconds first), a descriptor (@hourly, @daily, ...) or "@every d" with
// d ≥ 1s. loc is the time zone of the fields (nil: UTC, or the spec's own
// CRON_TZ= prefix); it must be a named IANA zone, not time.Local, since
// every worker, wherever it runs, computes the activations in it.
//
// The server fires each activation (a one-shot message schedule), so it
// runs once however many workers and clients there are, with no leader
// election; the worker that receives an activation stores the next one
// before it calls the handler. Activations missed while no worker ran
// (or the server was down) collapse into one run, of the first missed
// activation; the next one is then the first still to come. A failed run
// is retried by the server's redelivery (the retry policy's delay, at
// most AckWait) and never postpones the next activation. An activation
// that falls due while the previous one still waits for a worker
// replaces it.
func (c *Client) EnqueueCron(ctx context.Context, j Job, spec string, loc *time.Location) error {
	if _, err := c.jobMsg(j); err != nil {
		return err
	}
	sched, stored, err := cronSpec(spec, loc)
	if err != nil {
		return err
	}
	if err := c.ready(); err != nil {
		return err
	}
	now := time.Now()
	msg, err := c.cronMsg(j, stored, sched.Next(now), now)
	if err != nil {
		return err
	}
	// A waiting activation of the job's previous spec is withdrawn (a run
	// of it in progress then cannot store its successor, see rearm), and
	// the first activation stored only if none fired meanwhile: otherwise
	// that one's run could replace the new schedule with the old spec's.
	return c.store(ctx, j, msg, "cron "+j.ID)
}

// cronSpec validates spec with jobs/cron and returns its schedule with
// the text workers parse again: spec with its zone as a CRON_TZ prefix.
func cronSpec(spec string, loc *time.Location) (*cron.Schedule, string, error) {
	if loc == nil {
		loc = time.UTC
	}
	if loc == time.Local || loc.String() == "Local" {
		return nil, "", invalidf("cron %q: time.Local differs between machines; name the zone (time.LoadLocation)", spec)
	}
	sched, err := cron.ParseInLocation(spec, loc)
	if err != nil {
		return nil, "", invalidf("%v", err)
	}
	body := strings.TrimSpace(spec)
	if strings.HasPrefix(body, "CRON_TZ=") || strings.HasPrefix(body, "TZ=") {
		_, body, _ = strings.Cut(body, " ")
		body = strings.TrimSpace(body)
	}
	return sched, "CRON_TZ=" + sched.Location().String() + " " + body, nil
}

// cronMsg builds the one-shot schedule of j's activation at t, whose
// previous activation (or enqueueing) was at prev. The server hands it
// to the workers a little early, as for delayed jobs, but at most half
// the gap, so that an activation does not replace its predecessor while
// that one runs.
func (c *Client) cronMsg(j Job, spec string, t, prev time.Time) (*nats.Msg, error) {
	msg, err := c.jobMsg(j)
	if err != nil {
		return nil, err
	}
	lead := min(scheduleLead, t.Sub(prev)/2)
	gen := j.gen
	if gen == "" {
		gen = nuid.Next()
	}
	msg.Subject = schedSubject(j.Queue, j.ID, gen)
	msg.Header[hdrGen] = []string{gen}
	msg.Header.Set(jetstream.ScheduleHeader, "@at "+t.Add(-lead).UTC().Format(time.RFC3339Nano))
	msg.Header.Set(jetstream.ScheduleTargetHeader, readySubject(j.Queue, j.ID, gen))
	msg.Header.Set(hdrDue, strconv.FormatInt(t.UnixNano(), 10))
	msg.Header.Set(hdrCron, spec)
	return msg, nil
}

// rearm stores the activation after the delivered one (r, stream sequence
// seq on subject, spec from its header), before the handler runs, so that
// the chain of activations outlives a crash of this worker: the delivery
// then comes back and rearm runs again. The store is conditional on the
// delivery still being stored on its subject, which makes it idempotent:
// once the next activation fired, it replaced that message (one per
// subject: the activations of a cron job share its generation), and a
// cancelled or re-enqueued job withdrew it. current is false then, and
// the delivery must not run.
func (w *worker) rearm(ctx context.Context, r Run, spec, subject string, seq uint64) (current bool, err error) {
	sched, err := w.c.schedule(spec)
	if err != nil {
		return true, nil // not stored by EnqueueCron: run it, once
	}
	now := time.Now()
	msg, err := w.c.cronMsg(r.job(), spec, nextActivation(sched, r.Scheduled, now), now)
	if err != nil {
		return false, err
	}
	_, err = w.c.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequenceForSubject(seq, subject))
	if wrongLastSeq(err) {
		return false, nil
	}
	if err != nil {
		return false, w.c.apiErr("cron "+r.ID+": next activation", err)
	}
	return true, nil
}

// nextActivation is the activation to store after the one scheduled at
// sched, delivered at now: the next one by the schedule, or, when some
// went by while it waited (no worker, an outage), the first still to
// come.
func nextActivation(s *cron.Schedule, scheduled, now time.Time) time.Time {
	if scheduled.After(now) {
		now = scheduled
	}
	return s.Next(now)
}

// schedule parses a stored spec, once per spec and Client.
func (c *Client) schedule(spec string) (*cron.Schedule, error) {
	if s, ok := c.schedules.Load(spec); ok {
		return s.(*cron.Schedule), nil
	}
	s, err := cron.Parse(spec)
	if err != nil {
		return nil, errors.Join(ErrInvalid, err)
	}
	c.schedules.Store(spec, s)
	return s, nil
}
