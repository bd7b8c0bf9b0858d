package natsjobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Job is one unit of work. Queue and ID identify it: enqueueing the same
// ID in the same queue again replaces the job (its payload, headers and
// time) instead of adding a second one, unless Unique says otherwise.
type Job struct {
	// Queue is one of Config.Queues.
	Queue string
	// ID is the job's name within its queue, up to 200 bytes, with no
	// white space, control characters, '.', '*' or '>' (it becomes a
	// subject token): "order-1234", "user_7:reminder".
	ID string
	// Payload is handed to the handler unchanged. Payload and headers
	// together must fit in the server's max payload (1 MiB by default).
	Payload []byte
	// Header holds string metadata for the handler. Keys starting with
	// "Nats-" or "Ttlkit-" are reserved.
	Header map[string]string
	// Timeout bounds each attempt of this job, overriding
	// WorkOptions.Timeout: the handler's ctx is cancelled Timeout after
	// the attempt starts, and an attempt that then returns an error
	// fails (and is retried) like any other. Zero means the Work call's;
	// negative is an error.
	Timeout time.Duration
	// Unique is what enqueueing does when the queue holds a job with
	// this ID already. Zero is Replace.
	Unique Unique

	gen string // the schedule's generation a retry or re-arm keeps (replace.go); "" for a new one
}

// Unique is what an enqueue does when the queue already holds a job with
// the same ID: one waiting for its time or a worker, running, or waiting
// for a retry (a cron job exists from EnqueueCron to its Cancel). The
// check and the store are one step on the server: of concurrent enqueues
// of a new ID under Keep or Refuse, exactly one stores the job.
type Unique uint8

const (
	// Replace (the default) replaces the job's payload, headers, time or
	// schedule; a run in progress goes on, but its outcome is neither
	// retried nor dead-lettered (the copy it ran was withdrawn).
	Replace Unique = iota
	// Keep keeps the existing job and stores nothing; the call reports it
	// with an error wrapping ErrExists (not a failure: the job is there).
	Keep
	// Refuse stores nothing and fails with an error wrapping ErrConflict.
	Refuse
)

func (u Unique) String() string {
	switch u {
	case Replace:
		return "Replace"
	case Keep:
		return "Keep"
	case Refuse:
		return "Refuse"
	}
	return "Unique(" + strconv.Itoa(int(u)) + ")"
}

// existsErr is the error of an enqueue of j refused because its ID
// exists, under j.Unique (Keep or Refuse).
func existsErr(j Job) error {
	if j.Unique == Keep {
		return fmt.Errorf("%w: job %s in queue %s (kept)", ErrExists, j.ID, j.Queue)
	}
	return fmt.Errorf("%w: job %s in queue %s", ErrConflict, j.ID, j.Queue)
}

// Headers this package adds to a job's messages.
const (
	hdrDue      = "Ttlkit-Due"      // Unix nanoseconds: the worker holds the delivery until then
	hdrAttempts = "Ttlkit-Attempts" // failed attempts before this message (retries)
	hdrError    = "Ttlkit-Error"    // dead letters: the last error
	hdrFailed   = "Ttlkit-Failed"   // dead letters: Unix nanoseconds of the last failure
	hdrCron     = "Ttlkit-Cron"     // cron jobs: the spec, so retries wait on the server
	hdrTimeout  = "Ttlkit-Timeout"  // Job.Timeout in nanoseconds
	hdrGen      = "Ttlkit-Gen"      // the job's generation (replace.go)
)

// The server's error codes for a bad schedule pattern and time zone.
const (
	codePatternInvalid  jetstream.ErrorCode = 10189
	codeTimeZoneInvalid jetstream.ErrorCode = 10223
)

// scheduleLead is how long before its time a delayed job is handed from the
// server's schedule to the workers, which hold it locally until due: the
// server's timer only fires to within a few hundred milliseconds, and
// holding a delivery longer than this would eat into AckWait and
// MaxAckPending.
const scheduleLead = time.Second

// Enqueue stores j to run as soon as a worker is free, replacing any
// pending job with the same Queue and ID (a run already in progress is
// not interrupted), or as j.Unique says. It returns once the server has
// stored the job; with Keep or Refuse, an error wrapping ErrExists or
// ErrConflict when the ID exists.
func (c *Client) Enqueue(ctx context.Context, j Job) error {
	return c.enqueue(ctx, j, time.Time{})
}

// EnqueueAt stores j to run at t, never earlier, replacing any pending job
// with the same Queue and ID (or as j.Unique says, see Enqueue). A t
// before the current time is an error (ErrInvalid): use Enqueue for "now".
func (c *Client) EnqueueAt(ctx context.Context, j Job, t time.Time) error {
	if t.IsZero() {
		return invalidf("EnqueueAt: zero time")
	}
	if time.Until(t) < 0 {
		return invalidf("EnqueueAt %s: time in the past", t.Format(time.RFC3339Nano))
	}
	return c.enqueue(ctx, j, t)
}

// EnqueueAfter is EnqueueAt(now + d). d == 0 is Enqueue; d < 0 is an error.
func (c *Client) EnqueueAfter(ctx context.Context, j Job, d time.Duration) error {
	if d < 0 {
		return invalidf("EnqueueAfter: negative delay %v", d)
	}
	if d == 0 {
		return c.enqueue(ctx, j, time.Time{})
	}
	return c.enqueue(ctx, j, time.Now().Add(d))
}

// enqueue publishes j due at t (zero: now). A job due within scheduleLead
// goes straight to a ready subject; a later one becomes a server-side
// schedule that fires scheduleLead early.
func (c *Client) enqueue(ctx context.Context, j Job, t time.Time) error {
	msg, err := c.prepare(j, t, 0)
	if err != nil {
		return err
	}
	if err := c.ready(); err != nil {
		return err
	}
	return c.store(ctx, j, msg, "enqueue "+j.ID)
}

// prepare validates j and builds its message for time t (see enqueue),
// after attempts failed ones (retries), on the subjects of j's generation
// (j.gen, or a new one): a ready copy, or for a later t a schedule.
func (c *Client) prepare(j Job, t time.Time, attempts int) (*nats.Msg, error) {
	msg, err := c.jobMsg(j)
	if err != nil {
		return nil, err
	}
	// The keys are in canonical form already: set them directly rather
	// than through Header.Set, which canonicalizes every key.
	if attempts > 0 {
		msg.Header[hdrAttempts] = []string{strconv.Itoa(attempts)}
	}
	if !t.IsZero() {
		msg.Header[hdrDue] = []string{strconv.FormatInt(t.UnixNano(), 10)}
	}
	gen := j.gen
	if gen == "" {
		gen = nuid.Next()
	}
	if t.IsZero() || time.Until(t) <= scheduleLead {
		// Due now: no Ttlkit-Gen header, since no schedule of it can be
		// withdrawn while it fires (see Client.stored).
		msg.Subject = readySubject(j.Queue, j.ID, gen)
		return msg, nil
	}
	msg.Subject = schedSubject(j.Queue, j.ID, gen)
	msg.Header[hdrGen] = []string{gen}
	msg.Header[jetstream.ScheduleHeader] = []string{"@at " + t.Add(-scheduleLead).UTC().Format(time.RFC3339Nano)}
	msg.Header[jetstream.ScheduleTargetHeader] = []string{readySubject(j.Queue, j.ID, gen)}
	return msg, nil
}

// jobMsg validates j and builds its message (subject left for the caller).
func (c *Client) jobMsg(j Job) (*nats.Msg, error) {
	if err := c.checkQueue(j.Queue); err != nil {
		return nil, err
	}
	if err := checkID(j.ID); err != nil {
		return nil, err
	}
	if j.Timeout < 0 {
		return nil, invalidf("job %s: negative Timeout %v", j.ID, j.Timeout)
	}
	if j.Unique > Refuse {
		return nil, invalidf("job %s: %v", j.ID, j.Unique)
	}
	// Room for the headers prepare adds.
	msg := &nats.Msg{Data: j.Payload, Header: make(nats.Header, len(j.Header)+5)}
	if j.Timeout > 0 {
		msg.Header[hdrTimeout] = []string{strconv.FormatInt(int64(j.Timeout), 10)}
	}
	size := len(j.Payload)
	for k, v := range j.Header {
		if k == "" || strings.HasPrefix(k, "Nats-") || strings.HasPrefix(k, "Ttlkit-") {
			return nil, invalidf("job %s: header %q is reserved or empty", j.ID, k)
		}
		msg.Header.Set(k, v)
		size += len(k) + len(v) + 4
	}
	// Leave room for the headers added here and by the server.
	if max := c.nc.MaxPayload() - 512; int64(size) > max {
		return nil, invalidf("job %s: payload and headers are %d bytes, over the server's limit of %d", j.ID, size, max)
	}
	return msg, nil
}

func checkID(id string) error {
	if id == "" {
		return invalidf("empty job ID")
	}
	if len(id) > 200 {
		return invalidf("job ID %.20q...: longer than 200 bytes", id)
	}
	for _, r := range id {
		if r == '.' || r == '*' || r == '>' || unicode.IsSpace(r) || unicode.IsControl(r) {
			return invalidf("job ID %q: '.', '*', '>', spaces and control characters are not allowed", id)
		}
	}
	return nil
}

// publish stores msg in its stream and returns once the server confirmed
// it (or refused it, or the call timed out).
func (c *Client) publish(ctx context.Context, msg *nats.Msg, what string, opts ...jetstream.PublishOpt) error {
	if len(opts) > 0 {
		_, err := c.js.PublishMsg(ctx, msg, opts...)
		return c.apiErr(what, err)
	}
	// The common case, without jetstream.PublishMsg's context wrapping and
	// reflective decoding of a successful acknowledgement.
	var resp *nats.Msg
	var err error
	if ctx.Done() == nil {
		resp, err = c.nc.RequestMsg(msg, c.cfg.Timeout) // a pooled timer, no context
	} else {
		tctx, cancel := c.timeout(ctx)
		resp, err = c.nc.RequestMsgWithContext(tctx, msg)
		cancel()
	}
	if errors.Is(err, nats.ErrNoResponders) {
		// No stream leader (an election in a cluster): jetstream's
		// publish waits and retries.
		_, err = c.js.PublishMsg(ctx, msg)
		return c.apiErr(what, err)
	}
	if err != nil {
		return c.apiErr(what, err)
	}
	return c.apiErr(what, pubAckErr(resp.Data))
}

// pubAckErr returns nil for the server's acknowledgement of a stored
// message, {"stream":...,"seq":...}, and the server's error otherwise.
func pubAckErr(data []byte) error {
	if bytes.HasPrefix(data, []byte(`{"stream":`)) && !bytes.Contains(data, []byte(`"error"`)) {
		return nil
	}
	var ack struct {
		Stream string              `json:"stream"`
		Error  *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(data, &ack); err != nil {
		return fmt.Errorf("%w: %q", jetstream.ErrInvalidJSAck, data)
	}
	if ack.Error != nil {
		return ack.Error
	}
	if ack.Stream == "" {
		return fmt.Errorf("%w: %q", jetstream.ErrInvalidJSAck, data)
	}
	return nil
}

// apiErr maps the server's schedule validation errors to ErrInvalid.
func (c *Client) apiErr(what string, err error) error {
	if err == nil {
		return nil
	}
	if errIs(err, codePatternInvalid) || errIs(err, codeTimeZoneInvalid) {
		return invalidf("%s: %v", what, err)
	}
	if !c.nc.IsConnected() {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, err)
	}
	return wrap(what, err)
}

// deleteMsg removes the message with stream sequence seq from the
// queue's work stream; it returns errTaken when no such message is stored.
// The server applies deletes in order (on every replica), so of two
// deletes of one message exactly one succeeds.
func (c *Client) deleteMsg(ctx context.Context, queue string, seq uint64) error {
	req, _ := json.Marshal(struct {
		Seq     uint64 `json:"seq"`
		NoErase bool   `json:"no_erase"`
	}{seq, true})
	ctx, cancel := c.timeout(ctx)
	defer cancel()
	resp, err := c.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.DELETE."+workStream(queue), req)
	if err != nil {
		return c.apiErr("delete "+strconv.FormatUint(seq, 10), err)
	}
	var r struct {
		Success bool                `json:"success"`
		Error   *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return fmt.Errorf("natsjobs: delete %d: %w", seq, err)
	}
	switch {
	case r.Error == nil && r.Success:
		return nil
	case r.Error == nil:
		return fmt.Errorf("natsjobs: delete %d: %q", seq, resp.Data)
	case r.Error.ErrorCode == codeSequenceNotFound ||
		r.Error.ErrorCode == codeMsgDeleteFailed && (r.Error.Description == "no message found" || r.Error.Description == "deleted message"):
		return errTaken
	}
	return c.apiErr("delete "+strconv.FormatUint(seq, 10), r.Error)
}

// The server's error codes for a delete of a missing message.
const (
	codeSequenceNotFound jetstream.ErrorCode = 10043
	codeMsgDeleteFailed  jetstream.ErrorCode = 10057 // "no message found", "deleted message", others
)

func (c *Client) timeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.cfg.Timeout)
}
