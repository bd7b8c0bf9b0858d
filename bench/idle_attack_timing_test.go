package bench

import (
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/ttlkit/ttlkit/idletimeout"
)

// reapClock records, server-side, when each connection of an idletimeout
// Listener was reaped: the time the first Read, Write or ReadFrom on it
// failed with an error wrapping idletimeout.ErrIdle, measured from the
// start of what the limit judged: the first byte read for the read rate,
// the first byte written for the write rate, the accept otherwise. The server is always in a Read or Write on an HTTP
// or line-protocol connection (net/http reads in the background while it
// handles a request), so that failure comes at the close. What the
// attacker sees is later: slowhttptest notices a close only at its next
// send.
type reapClock struct {
	mu   sync.Mutex
	took map[idletimeout.Reason][]time.Duration
}

func newReapClock() *reapClock { return &reapClock{took: map[idletimeout.Reason][]time.Duration{}} }

// listener wraps l so that its connections are timed.
func (rc *reapClock) listener(l *idletimeout.Listener) net.Listener { return timedListener{l, rc} }

// p99 returns the 99th percentile of the reap times for reason r (all
// reasons if r is 0), in seconds, and how many there were.
func (rc *reapClock) p99(r idletimeout.Reason) (float64, int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var all []time.Duration
	for reason, d := range rc.took {
		if r == 0 || reason == r {
			all = append(all, d...)
		}
	}
	if len(all) == 0 {
		return 0, 0
	}
	slices.Sort(all)
	return all[(len(all)*99+99)/100-1].Seconds(), len(all)
}

type timedListener struct {
	*idletimeout.Listener
	rc *reapClock
}

func (l timedListener) Accept() (net.Conn, error) {
	c, err := l.AcceptConn()
	if err != nil {
		return nil, err
	}
	return &timedConn{Conn: c, rc: l.rc, accepted: time.Now()}, nil
}

// timedConn is an *idletimeout.Conn that notes when it was reaped. Its
// NetConn method lets idletimeout.ConnState find the *Conn, and its
// ReadFrom keeps the wrapped Conn's zero-copy path for net/http.
type timedConn struct {
	*idletimeout.Conn
	rc       *reapClock
	accepted time.Time
	once     sync.Once

	mu                   sync.Mutex
	firstRead, firstSent time.Time
}

func (c *timedConn) NetConn() net.Conn { return c.Conn }

func (c *timedConn) note(err error) error {
	var ie *idletimeout.IdleError
	if err != nil && errors.As(err, &ie) {
		c.once.Do(func() {
			from := c.accepted
			c.mu.Lock()
			switch {
			case ie.Reason == idletimeout.ReasonReadRate && !c.firstRead.IsZero():
				from = c.firstRead
			case ie.Reason == idletimeout.ReasonWriteRate && !c.firstSent.IsZero():
				from = c.firstSent
			}
			c.mu.Unlock()
			d := time.Since(from)
			c.rc.mu.Lock()
			c.rc.took[ie.Reason] = append(c.rc.took[ie.Reason], d)
			c.rc.mu.Unlock()
		})
	}
	return err
}

// first sets *t to now if it is zero: the first byte in a direction.
func (c *timedConn) first(t *time.Time, n int64) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	if t.IsZero() {
		*t = time.Now()
	}
	c.mu.Unlock()
}

func (c *timedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.first(&c.firstRead, int64(n))
	return n, c.note(err)
}

func (c *timedConn) Write(b []byte) (int, error) {
	c.first(&c.firstSent, int64(len(b)))
	n, err := c.Conn.Write(b)
	return n, c.note(err)
}

func (c *timedConn) ReadFrom(r io.Reader) (int64, error) {
	c.first(&c.firstSent, 1)
	n, err := c.Conn.ReadFrom(r)
	return n, c.note(err)
}
