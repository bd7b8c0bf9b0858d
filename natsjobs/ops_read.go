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

// scan reads the messages of stream whose subjects match filter, from
// sequence from on, in sequence order, with batched direct reads of up
// to batch messages (and scanBytes), or one direct read per message for
// a batch of 1, and calls fn with each (its subject, headers,
// data, sequence and store time) until fn returns false, a message is
// after upTo (0: no bound) or none is left. more reports that fn stopped
// the scan with messages left after the last one it saw. Each batch gets
// Config.Timeout of its own, so a long scan is not cut short.
func (c *Client) scan(ctx context.Context, stream, filter string, from, upTo uint64, batch int, fn func(m *nats.Msg, seq uint64, stored time.Time) bool) (more bool, err error) {
	if batch == 1 {
		return c.scanEach(ctx, stream, filter, from, upTo, fn)
	}
	inbox := c.nc.NewInbox()
	sub, err := c.nc.SubscribeSync(inbox)
	if err != nil {
		return false, c.apiErr("read "+stream, err)
	}
	defer sub.Unsubscribe()
	for {
		if upTo > 0 && from > upTo {
			return false, nil
		}
		req, _ := json.Marshal(directGet{Seq: from, NextFor: filter, Batch: batch, MaxBytes: scanBytes})
		if err := c.nc.PublishRequest("$JS.API.DIRECT.GET."+stream, inbox, req); err != nil {
			return false, c.apiErr("read "+stream, err)
		}
		next, stopped, more, err := c.readBatch(ctx, sub, stream, upTo, fn)
		if errors.Is(err, errNoDirect) {
			return c.scanOneByOne(ctx, stream, filter, from, upTo, fn)
		}
		if err != nil || stopped {
			return more, err
		}
		if next == 0 {
			return false, nil
		}
		from = next
	}
}

// readBatch reads one batch of scan's answers. It returns the sequence
// to read from next (0: none left), or stopped when fn stopped the scan
// (or upTo was passed), with more as scan's; the batch's rest is dropped.
func (c *Client) readBatch(ctx context.Context, sub *nats.Subscription, stream string, upTo uint64, fn func(*nats.Msg, uint64, time.Time) bool) (next uint64, stopped, more bool, err error) {
	ctx, cancel := c.timeout(ctx)
	defer cancel()
	var last uint64
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if errors.Is(err, nats.ErrNoResponders) {
			return 0, false, false, errNoDirect
		}
		if err != nil {
			return 0, false, false, c.apiErr("read "+stream, err)
		}
		switch m.Header.Get("Status") {
		case "":
		case "204": // end of batch
			if m.Header.Get(numPendingHeader) == "0" || last == 0 {
				return 0, false, false, nil
			}
			return last + 1, false, false, nil
		case "404": // nothing at or after the start
			return 0, false, false, nil
		case "503": // no responders: the stream does not allow direct reads
			return 0, false, false, errNoDirect
		default:
			return 0, false, false, fmt.Errorf("natsjobs: read %s: %s %s", stream, m.Header.Get("Status"), m.Header.Get("Description"))
		}
		seq, _ := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
		if upTo > 0 && seq > upTo {
			return 0, true, false, nil
		}
		last = seq
		if h := testHookScanned; h != nil {
			h()
		}
		stored, _ := time.Parse(time.RFC3339Nano, m.Header.Get(jetstream.TimeStampHeaer))
		m.Subject = m.Header.Get(jetstream.SubjectHeader)
		if !fn(m, seq, stored) {
			// The server counts the matching messages after each one.
			return 0, true, m.Header.Get(numPendingHeader) != "0" && seq != upTo, nil
		}
	}
}

// testHookScanned, if set, is called for each message scan reads.
var testHookScanned func()

// numPendingHeader carries, on a batched direct read's answers, how many
// messages on the filter follow.
const numPendingHeader = "Nats-Num-Pending"

// lastFor returns the message stored last on subject (which may be a
// wildcard) in stream by a direct read, or nil when there is none.
func (c *Client) lastFor(ctx context.Context, stream, subject string) (*nats.Msg, error) {
	var m *nats.Msg
	var err error
	if strings.ContainsAny(subject, "*>") {
		// A wildcard cannot be in the request's subject: it goes in the body.
		req := appendJSON([]byte(`{"last_by_subj":`), subject)
		m, err = c.direct(ctx, "$JS.API.DIRECT.GET."+stream, append(req, '}'))
	} else {
		m, err = c.direct(ctx, "$JS.API.DIRECT.GET."+stream+"."+subject, nil)
	}
	if errors.Is(err, errNoDirect) {
		return c.leaderGet(ctx, stream, func(ctx context.Context, s jetstream.Stream) (*jetstream.RawStreamMsg, error) {
			return s.GetLastMsgForSubject(ctx, subject)
		})
	}
	return m, err
}

// firstFrom returns the first message on filter in stream at or after
// sequence from, or nil when there is none.
func (c *Client) firstFrom(ctx context.Context, stream, filter string, from uint64) (*nats.Msg, error) {
	req, _ := json.Marshal(directGet{Seq: from, NextFor: filter})
	m, err := c.direct(ctx, "$JS.API.DIRECT.GET."+stream, req)
	if errors.Is(err, errNoDirect) {
		return c.leaderGet(ctx, stream, func(ctx context.Context, s jetstream.Stream) (*jetstream.RawStreamMsg, error) {
			return s.GetMsg(ctx, from, jetstream.WithGetMsgSubject(filter))
		})
	}
	return m, err
}

// errNoDirect reports a stream that does not allow direct reads (made by
// an older natsjobs, or with Replicas > 1 where the runs' own checks must
// read from the leader): reads then go to the leader's API, one message
// per request.
var errNoDirect = errors.New("natsjobs: no direct reads")

// leaderGet reads one message of stream through the leader's API and
// returns it as a direct read would (sequence, time and subject in the
// headers), or nil when there is none.
func (c *Client) leaderGet(ctx context.Context, stream string, get func(context.Context, jetstream.Stream) (*jetstream.RawStreamMsg, error)) (*nats.Msg, error) {
	ctx, cancel := c.timeout(ctx)
	defer cancel()
	s, err := c.js.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, c.apiErr("read "+stream, err)
	}
	raw, err := get(ctx, s)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, c.apiErr("read "+stream, err)
	}
	return asDirect(raw), nil
}

func asDirect(raw *jetstream.RawStreamMsg) *nats.Msg {
	h := nats.Header{}
	for k, v := range raw.Header {
		h[k] = v
	}
	h.Set(jetstream.SequenceHeader, strconv.FormatUint(raw.Sequence, 10))
	h.Set(jetstream.TimeStampHeaer, raw.Time.UTC().Format(time.RFC3339Nano))
	h.Set(jetstream.SubjectHeader, raw.Subject)
	return &nats.Msg{Subject: raw.Subject, Header: h, Data: raw.Data}
}

// scanOneByOne is scan for a stream without direct reads: one request to
// the leader per message, so that memory stays bounded all the same.
// more is true whenever fn stops the scan.
func (c *Client) scanOneByOne(ctx context.Context, stream, filter string, from, upTo uint64, fn func(*nats.Msg, uint64, time.Time) bool) (more bool, err error) {
	tctx, cancel := c.timeout(ctx)
	s, err := c.js.Stream(tctx, stream)
	cancel()
	if err != nil {
		return false, c.apiErr("read "+stream, err)
	}
	for {
		if upTo > 0 && from > upTo {
			return false, nil
		}
		tctx, cancel := c.timeout(ctx)
		raw, err := s.GetMsg(tctx, from, jetstream.WithGetMsgSubject(filter))
		cancel()
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return false, nil
		}
		if err != nil {
			return false, c.apiErr("read "+stream, err)
		}
		if upTo > 0 && raw.Sequence > upTo {
			return false, nil
		}
		if h := testHookScanned; h != nil {
			h()
		}
		if !fn(asDirect(raw), raw.Sequence, raw.Time) {
			return raw.Sequence != upTo, nil
		}
		from = raw.Sequence + 1
	}
}

// direct sends one direct read and returns its message, nil when there
// is none, or errNoDirect.
func (c *Client) direct(ctx context.Context, subject string, req []byte) (*nats.Msg, error) {
	ctx, cancel := c.timeout(ctx)
	defer cancel()
	m, err := c.nc.RequestWithContext(ctx, subject, req)
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, errNoDirect
	}
	if err != nil {
		return nil, c.apiErr("read", err)
	}
	switch m.Header.Get("Status") {
	case "":
		return m, nil
	case "404":
		return nil, nil
	}
	return nil, fmt.Errorf("natsjobs: read: %s %s", m.Header.Get("Status"), m.Header.Get("Description"))
}

// scanEach is scan with one direct read per message. A batched read
// costs the server a count of the messages matching filter after the
// start (it sends the count along), which walks every subject the filter
// matches: time in proportion to the queue's size. Single reads do not,
// so a page that keeps every message it reads (no prefix) costs about
// the same whatever the size of the queue (BenchmarkListPage, a page of
// 50 out of 100,000 jobs: 5 to 10 ms one read per job, 20 to 50 ms
// batched, on a loaded machine). more is found by reading one message
// past the last one fn took.
func (c *Client) scanEach(ctx context.Context, stream, filter string, from, upTo uint64, fn func(*nats.Msg, uint64, time.Time) bool) (more bool, err error) {
	for {
		if upTo > 0 && from > upTo {
			return false, nil
		}
		m, err := c.firstFrom(ctx, stream, filter, from)
		if err != nil || m == nil {
			return false, err
		}
		seq, _ := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
		if upTo > 0 && seq > upTo {
			return false, nil
		}
		if h := testHookScanned; h != nil {
			h()
		}
		stored, _ := time.Parse(time.RFC3339Nano, m.Header.Get(jetstream.TimeStampHeaer))
		m.Subject = m.Header.Get(jetstream.SubjectHeader)
		if !fn(m, seq, stored) {
			if seq == upTo {
				return false, nil
			}
			next, err := c.firstFrom(ctx, stream, filter, seq+1)
			if err != nil {
				return false, err
			}
			if next == nil {
				return false, nil
			}
			nseq, _ := strconv.ParseUint(next.Header.Get(jetstream.SequenceHeader), 10, 64)
			return upTo == 0 || nseq <= upTo, nil
		}
		from = seq + 1
	}
}
