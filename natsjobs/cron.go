package natsjobs

import (
	"context"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/ttlkit/ttlkit/jobs/cron"
)

// EnqueueCron stores j as a repeating job on a cron spec, replacing any
// job with the same Queue and ID. The server fires it (JetStream message
// schedules), so it runs once per activation however many workers and
// clients there are, and keeps firing while no client is connected; an
// activation missed while the server was down runs once when it returns.
//
// spec is checked with jobs/cron first: five fields (minute first), six
// (seconds first), a descriptor (@hourly, @daily, ...) or "@every d" with
// d ≥ 1s. loc is the time zone of the fields (nil: UTC, or the spec's own
// CRON_TZ= prefix); it must be a named IANA zone, not time.Local, since
// the server evaluates it. The server computes the activations; a fixed
// time that a daylight-saving change skips or repeats follows its rules.
//
// An activation that comes while the previous one still waits for a
// worker replaces it (missed activations collapse into one); one that
// comes while the previous one runs starts alongside it. A failed run is
// retried by the server's redelivery (the retry policy's delay, at most
// AckWait) and never postpones the next activation.
func (c *Client) EnqueueCron(ctx context.Context, j Job, spec string, loc *time.Location) error {
	msg, err := c.jobMsg(j)
	if err != nil {
		return err
	}
	pattern, zone, err := serverCron(spec, loc)
	if err != nil {
		return err
	}
	if err := c.ready(); err != nil {
		return err
	}
	msg.Subject = schedSubject(j.Queue, j.ID)
	msg.Header.Set(jetstream.ScheduleHeader, pattern)
	msg.Header.Set(jetstream.ScheduleTargetHeader, readySubject(j.Queue, j.ID))
	if zone != "" {
		msg.Header.Set(jetstream.ScheduleTimeZoneHeader, zone)
	}
	msg.Header.Set(hdrCron, spec)
	return c.publish(ctx, msg, "cron "+j.ID)
}

// serverCron validates spec with jobs/cron and returns it in the form the
// server takes (six fields, seconds first, or a descriptor) with the zone
// name for its time zone header ("" for UTC or @every).
func serverCron(spec string, loc *time.Location) (pattern, zone string, err error) {
	sched, err := cron.ParseInLocation(spec, loc)
	if err != nil {
		return "", "", invalidf("%v", err)
	}
	body := strings.TrimSpace(spec)
	if strings.HasPrefix(body, "CRON_TZ=") || strings.HasPrefix(body, "TZ=") {
		_, body, _ = strings.Cut(body, " ")
		body = strings.TrimSpace(body)
	}
	if l := sched.Location(); l != nil && l != time.UTC && l.String() != "UTC" {
		if l == time.Local || l.String() == "Local" {
			return "", "", invalidf("cron %q: time.Local cannot be sent to the server; name the zone (time.LoadLocation)", spec)
		}
		zone = l.String()
	}
	if strings.HasPrefix(body, "@") {
		if strings.HasPrefix(body, "@every") && zone != "" {
			zone = "" // intervals have no time zone; the server rejects one
		}
		return body, zone, nil
	}
	fields := strings.Fields(body)
	if len(fields) == 5 {
		fields = append([]string{"0"}, fields...)
	}
	return strings.Join(fields, " "), zone, nil
}
