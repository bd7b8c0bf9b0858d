package natsjobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// State is where a job is in its life, as the operations API (List, Get,
// QueueStats) reports it. The zero State is invalid.
type State int

const (
	// Scheduled jobs wait on the server for their time: delayed jobs,
	// cron jobs between activations, retries waiting more than a second.
	// (The deprecated Stats calls them Pending.)
	Scheduled State = iota + 1
	// Pending jobs are due and wait for a free worker, or for their
	// queue to be resumed. (The deprecated Stats calls them Due.)
	Pending
	// Running jobs were handed to a worker and have no outcome yet:
	// running, held by the worker until due (up to a second), waiting out
	// a retry delay of up to a second, or given back for redelivery after
	// their worker stopped or died.
	Running
	// Dead jobs are in the queue's dead letters.
	Dead
)

var stateNames = [...]string{Scheduled: "scheduled", Pending: "pending", Running: "running", Dead: "dead"}

// String returns "scheduled", "pending", "running" or "dead", and
// "State(n)" for an invalid State.
func (s State) String() string {
	if s >= Scheduled && s <= Dead {
		return stateNames[s]
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// ParseState is the inverse of State.String. It fails with ErrInvalid for
// any other text.
func ParseState(s string) (State, error) {
	for st := Scheduled; st <= Dead; st++ {
		if stateNames[st] == s {
			return st, nil
		}
	}
	return 0, invalidf("state %q: want scheduled, pending, running or dead", s)
}

// MarshalText implements encoding.TextMarshaler (JSON shows the name).
func (s State) MarshalText() ([]byte, error) {
	if s < Scheduled || s > Dead {
		return nil, invalidf("state %d", int(s))
	}
	return []byte(s.String()), nil
}

// JobInfo is one job as an operator sees it: the job itself and where it
// stands.
type JobInfo struct {
	Job
	State State
	// Attempts counts the failed attempts stored with the job: those
	// before a retry that waits on the server, or, for a dead letter,
	// every run started. A delivery in progress is not counted.
	Attempts int
	// LastError is the text of the last failed attempt's error, when it
	// was stored: dead letters, and retries waiting more than a second.
	LastError string
	// NextRun is when the job runs: its time (Scheduled), when it fell
	// due (Pending), or, for a cron job, its next activation. Zero for a
	// dead letter and for a running job that is not a cron job.
	NextRun time.Time
	// Cron is the spec of a cron job (with its CRON_TZ= prefix), or empty.
	Cron string
	// Stored is when the server stored this copy of the job: the
	// enqueue, the schedule's firing, the retry, the dead letter.
	Stored time.Time
	// Failed is when a dead letter was stored; zero otherwise.
	Failed time.Time
	// Seq is the copy's sequence number in its stream (List's order).
	Seq uint64
}

// ListOptions selects a page of List. State is required.
type ListOptions struct {
	State State
	// Prefix keeps the jobs whose ID starts with it; empty keeps all.
	// The server cannot filter on part of a subject token, so a prefix
	// is matched here, reading the state's jobs a batch at a time.
	Prefix string
	// After is the cursor: Page.Next of the previous page, or 0 for the
	// first one.
	After uint64
	// Limit is the most jobs on a page, 1 to 1000. Zero means 50.
	Limit int
}

// Page is one page of List.
type Page struct {
	Jobs []JobInfo
	// Next is the cursor of the following page (ListOptions.After), or 0
	// when this page is the last. A page may end exactly where the jobs
	// do: the following page is then empty, with Next 0.
	Next uint64
}

// List returns a page of the queue's jobs in the given state, in the
// order they were stored (which for Scheduled is not the order of their
// times). Pages are read from the server a batch at a time (batched
// direct reads of the stream, from the cursor on), so that listing holds
// one page in memory however many jobs the queue has. A page costs
// Limit+2 requests (one read per job, each of constant cost), or with a
// Prefix, one per 256 jobs read, matching or not, whose cost on the
// server grows with the queue's size. The split between Pending and Running comes
// from the server's delivery cursor at the start of the call; a job that
// moves meanwhile may appear on two pages or on none. A job due within a
// second may show as Scheduled, Pending or Running as it changes hands.
func (c *Client) List(ctx context.Context, queue string, o ListOptions) (Page, error) {
	if err := c.checkQueue(queue); err != nil {
		return Page{}, err
	}
	if o.State < Scheduled || o.State > Dead {
		return Page{}, invalidf("List: no State")
	}
	if o.Limit < 0 || o.Limit > 1000 {
		return Page{}, invalidf("List: Limit %d out of range 0..1000", o.Limit)
	}
	if o.Limit == 0 {
		o.Limit = 50
	}
	if err := c.ready(); err != nil {
		return Page{}, err
	}
	info, err := c.workers(ctx, queue)
	if err != nil {
		return Page{}, err
	}
	stream, filter := workStream(queue), statePrefix(queue, "s")+">"
	from, upTo := o.After+1, uint64(0)
	switch o.State {
	case Pending:
		filter = statePrefix(queue, "r") + ">"
		from = max(from, info.Delivered.Stream+1)
	case Running:
		filter = statePrefix(queue, "r") + ">"
		from, upTo = max(from, info.AckFloor.Stream+1), info.Delivered.Stream
		if from > upTo {
			return Page{}, nil
		}
	case Dead:
		stream, filter = deadStream(queue), deadSubject(queue, ">")
	}
	prefix := filter[:len(filter)-1] + o.Prefix
	var page Page
	// Without a prefix every message read is on the page: read them one
	// at a time (see scanEach); with one, in batches.
	batch := scanBatch
	if o.Prefix == "" {
		batch = 1
	}
	more, err := c.scan(ctx, stream, filter, from, upTo, batch, func(m *nats.Msg, seq uint64, stored time.Time) bool {
		if !strings.HasPrefix(m.Subject, prefix) {
			return true
		}
		id := m.Subject[len(filter)-1:]
		if o.State != Dead {
			id, _ = idGen(m.Subject, filter[:len(filter)-1])
		}
		page.Jobs = append(page.Jobs, jobInfo(queue, id, o.State, seq, stored, m.Header, m.Data))
		return len(page.Jobs) < o.Limit
	})
	if err != nil {
		return Page{}, err
	}
	if more && len(page.Jobs) > 0 {
		page.Next = page.Jobs[len(page.Jobs)-1].Seq
	}
	if h := testHookListed; h != nil {
		h(len(page.Jobs))
	}
	return page, nil
}

// testHookListed, if set, is called with the size of each page List returns.
var testHookListed func(n int)

// Get returns the job with this Queue and ID: its live copy (Running or
// Pending, else Scheduled) or, if it has none, its dead letter. A running
// cron job reports its next activation as NextRun. It fails with
// ErrNotFound when the queue has neither.
func (c *Client) Get(ctx context.Context, queue, id string) (JobInfo, error) {
	if err := c.checkQueue(queue); err != nil {
		return JobInfo{}, err
	}
	if err := checkID(id); err != nil {
		return JobInfo{}, err
	}
	if err := c.ready(); err != nil {
		return JobInfo{}, err
	}
	info, err := c.workers(ctx, queue)
	if err != nil {
		return JobInfo{}, err
	}
	ready, err := c.lastFor(ctx, workStream(queue), statePrefix(queue, "r")+id+".*")
	if err != nil {
		return JobInfo{}, err
	}
	sched, err := c.lastFor(ctx, workStream(queue), statePrefix(queue, "s")+id+".*")
	if err != nil {
		return JobInfo{}, err
	}
	var next *JobInfo
	if sched != nil {
		j := directInfo(queue, id, Scheduled, sched)
		next = &j
	}
	if ready != nil {
		j := directInfo(queue, id, Pending, ready)
		if j.Seq <= info.Delivered.Stream {
			j.State, j.NextRun = Running, time.Time{}
			if due := dueOf(ready.Header); due.After(time.Now()) {
				j.NextRun = due // held by a worker until then
			}
		}
		if next != nil && j.NextRun.IsZero() {
			j.NextRun = next.NextRun // a cron job's next activation
		}
		return j, nil
	}
	if next != nil {
		return *next, nil
	}
	dead, err := c.lastFor(ctx, deadStream(queue), deadSubject(queue, id))
	if err != nil {
		return JobInfo{}, err
	}
	if dead == nil {
		return JobInfo{}, fmt.Errorf("%w: no job %s in queue %s", ErrNotFound, id, queue)
	}
	return directInfo(queue, id, Dead, dead), nil
}

// directInfo builds the JobInfo of a message from a direct read.
func directInfo(queue, id string, st State, m *nats.Msg) JobInfo {
	seq, _ := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	stored, _ := time.Parse(time.RFC3339Nano, m.Header.Get(jetstream.TimeStampHeaer))
	return jobInfo(queue, id, st, seq, stored, m.Header, m.Data)
}

func jobInfo(queue, id string, st State, seq uint64, stored time.Time, h nats.Header, data []byte) JobInfo {
	attempts, _ := strconv.Atoi(h.Get(hdrAttempts))
	j := JobInfo{
		Job:       Job{Queue: queue, ID: id, Payload: data, Header: userHeader(h)},
		State:     st,
		Attempts:  attempts,
		LastError: h.Get(hdrError),
		Cron:      h.Get(hdrCron),
		Stored:    stored,
		Seq:       seq,
	}
	switch st {
	case Scheduled:
		j.NextRun = dueOf(h)
	case Pending:
		if j.NextRun = dueOf(h); j.NextRun.IsZero() {
			j.NextRun = stored
		}
	case Running:
		if due := dueOf(h); due.After(time.Now()) {
			j.NextRun = due
		}
	case Dead:
		if ns, err := strconv.ParseInt(h.Get(hdrFailed), 10, 64); err == nil {
			j.Failed = time.Unix(0, ns)
		}
	}
	return j
}

// dueOf returns a message's due time, or zero when it has none (an
// Enqueue for now).
func dueOf(h nats.Header) time.Time {
	ns, err := strconv.ParseInt(h.Get(hdrDue), 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// workers returns the info of the queue's workers' consumer, or
// ErrNotFound when the queue does not exist on the server.
func (c *Client) workers(ctx context.Context, queue string) (*jetstream.ConsumerInfo, error) {
	ctx, cancel := c.timeout(ctx)
	defer cancel()
	cons, err := c.js.Consumer(ctx, workStream(queue), workerConsumer)
	if errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("%w: no queue %s on the server", ErrNotFound, queue)
	}
	if err != nil {
		return nil, c.apiErr("queue "+queue, err)
	}
	return cons.CachedInfo(), nil
}

// A batched direct read asks for at most scanBatch messages and
// scanBytes bytes (the server sends at least one message).
const (
	scanBatch = 256
	scanBytes = 4 << 20
)

// directGet is the server's request for direct reads (JSApiMsgGetRequest).
type directGet struct {
	Seq      uint64 `json:"seq,omitempty"`
	NextFor  string `json:"next_by_subj,omitempty"`
	Batch    int    `json:"batch,omitempty"`
	MaxBytes int    `json:"max_bytes,omitempty"`
}

// errorText is the one-line, bounded text of a job's error as stored in
// its headers.
func errorText(err error) string {
	text := strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, err.Error())
	if len(text) > 2048 {
		text = text[:2048]
	}
	return text
}
