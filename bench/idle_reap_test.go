package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"slices"
	"sync"
	"time"
)

// The reap check: connections that go idle after one echo must each be
// closed by the server (reapConfig), never before the timeout and soon
// after it.
//
// Every connection lives on its own: it is dialed, sends one message
// (start: the time just before the Write), receives the echo (echo: just
// after the read returns) and then waits for EOF (eof: just after the read
// returns). The server's last activity on it, the echo's Write, lies
// between start and echo, so:
//
//   - eof - start < timeout proves a reap before the timeout: "early";
//   - eof - echo > timeout + 2 × Resolution is later than the package
//     promises, give or take the delivery of the FIN and the waking of the
//     reading goroutine (which idletimeout does not count): "late".
//
// The reported time to EOF is eof - echo. The server also times each reap
// from its own side (serverStats.ReapNs: from the start of the last Write
// to the return of the Read that failed), which leaves out the FIN's trip
// and the client's wake-up: "srv-" metrics, and "srv-late" beyond
// timeout + 2 × Resolution. Connections are dialed by a few goroutines as
// fast as they go, so their idle starts are spread over the dialing time,
// and so are the reaps.

// reapDialers is how many goroutines open the reap check's connections.
const reapDialers = 8

// reapGuard bounds the wait for an EOF, so that a connection the server
// never reaps fails the round instead of hanging it.
const reapGuard = 30 * time.Second

// reapReport is the outcome of one reap round.
type reapReport struct {
	conns       int
	toEOF       []time.Duration // eof - echo, sorted
	early, late int
	toClose     []time.Duration // the server's ReapNs, sorted
	srvLate     int             // toClose beyond timeout + 2 × Resolution
	server      serverStats
}

// reapRound runs the reap check with n connections against a reap server
// in mode ("child" or "inproc").
func reapRound(mode string, n int) (*reapReport, error) {
	srv, err := startBackend(mode, reapImpl, n)
	if err != nil {
		return nil, err
	}
	samples, roundErr := reapClients(srv.Addr(), n)
	st, finErr := srv.Finish()
	if err := errors.Join(roundErr, finErr); err != nil {
		return nil, err
	}
	timeout, res := reapConfig.IdleTimeout, reapConfig.Resolution
	rep := &reapReport{conns: n, server: st, toEOF: make([]time.Duration, n)}
	for i, s := range samples {
		if s.eof.Sub(s.start) < timeout {
			rep.early++
		}
		if s.eof.Sub(s.echo) > timeout+2*res {
			rep.late++
		}
		rep.toEOF[i] = s.eof.Sub(s.echo)
	}
	slices.Sort(rep.toEOF)
	for _, ns := range st.ReapNs {
		d := time.Duration(ns)
		if d > timeout+2*res {
			rep.srvLate++
		}
		rep.toClose = append(rep.toClose, d)
	}
	slices.Sort(rep.toClose)
	return rep, nil
}

// reapSample is what a client saw on one connection.
type reapSample struct{ start, echo, eof time.Time }

// reapClients runs the client side of a reap round: n connections, each
// one message and then a wait for EOF. It returns once every connection
// has seen EOF, or with the errors of those that saw something else.
func reapClients(addr string, n int) ([]reapSample, error) {
	samples := make([]reapSample, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for d := range reapDialers {
		wg.Go(func() {
			for i := d; i < n; i += reapDialers {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					errs[i] = fmt.Errorf("dial: %w", err)
					continue
				}
				msg := make([]byte, echoMsgSize)
				s := &samples[i]
				s.start = time.Now()
				if _, err := c.Write(msg); err != nil {
					errs[i] = fmt.Errorf("write: %w", err)
					c.Close()
					continue
				}
				if _, err := io.ReadFull(c, msg); err != nil {
					errs[i] = fmt.Errorf("read echo: %w", err)
					c.Close()
					continue
				}
				s.echo = time.Now()
				wg.Go(func() {
					defer c.Close()
					errs[i] = waitEOF(c, s)
				})
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			errs[i] = fmt.Errorf("connection %d: %w", i, err)
		}
	}
	return samples, errors.Join(errs...)
}

// waitEOF reads until the server closes c and records when.
func waitEOF(c net.Conn, s *reapSample) error {
	c.SetReadDeadline(s.echo.Add(reapGuard))
	var buf [1]byte
	n, err := c.Read(buf[:])
	s.eof = time.Now()
	switch {
	case n > 0:
		return fmt.Errorf("got %d unexpected bytes, want EOF", n)
	case err == io.EOF:
		return nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("no EOF within %v: never reaped", reapGuard)
	}
	return fmt.Errorf("got %v, want EOF", err)
}

// quantile returns the q-quantile (0 ≤ q ≤ 1) of sorted by nearest rank:
// the smallest value at least a share q of the values do not exceed.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// metrics is the report as benchmark metrics.
func (r *reapReport) metrics() map[string]float64 {
	return map[string]float64{
		"conns":    float64(r.conns),
		"reaped":   float64(r.server.Idle.ReapedIdle),
		"early":    float64(r.early),
		"late":     float64(r.late),
		"min-ms":   toMS(quantile(r.toEOF, 0)),
		"p50-ms":   toMS(quantile(r.toEOF, 0.5)),
		"p99-ms":   toMS(quantile(r.toEOF, 0.99)),
		"max-ms":   toMS(quantile(r.toEOF, 1)),
		"idle-err": float64(r.server.IdleErrs),

		"srv-late":   float64(r.srvLate),
		"srv-p50-ms": toMS(quantile(r.toClose, 0.5)),
		"srv-p99-ms": toMS(quantile(r.toClose, 0.99)),
		"srv-max-ms": toMS(quantile(r.toClose, 1)),
	}
}
