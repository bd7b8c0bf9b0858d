package idletimeout

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// The instant a slow transfer is reaped, pinned in a synctest bubble. The
// wheel ticks every tRes from the Listener's start (bubble time 0) and
// publishes its clock on each tick. A transfer's first byte, read at t0,
// is recorded with the clock then published, so the transfer counts from
// the next tick (never before the byte, at most one tick after it); its
// limit is a deadline of the connection's timer, which comes up on the
// first tick at or after it.

// headConfig: 100 B/s after a 2s grace; the idle timeout (5s) is longer
// than any pause of the tricklers below.
var headConfig = Config{IdleTimeout: 5 * time.Second, MinReadRate: 100, RateGrace: 2 * time.Second, Resolution: tRes}

// TestReadRateHeadReapedAtDeadline: under ConnState a request head is
// owed in full, so silence inside it counts. A slowloris (20 bytes, then
// a header line every 1.5s, below the idle timeout) whose first byte comes
// 30ms after a tick is reaped at exactly the tick after its first byte +
// RateGrace: 2.07s after that byte, within the documented grace + 2 ×
// Resolution, although each line restarts the idle timeout.
func TestReadRateHeadReapedAtDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, headConfig)
		defer l.Close()
		server, client := pair(t, l, pl)
		ConnState(server, http.StateNew)
		time.Sleep(30 * time.Millisecond)
		first := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, err := client.Write([]byte("GET / HTTP/1.1\r\nA: b\r\n")); err != nil {
				return
			}
			for {
				time.Sleep(1500 * time.Millisecond)
				if _, err := client.Write([]byte("X-a: b\r\n")); err != nil {
					return
				}
			}
		}()
		defer func() { client.Close(); <-done }()
		r, took := reapedBy(t, server, first)
		if want := headConfig.RateGrace + tRes - 30*time.Millisecond; r != ReasonReadRate || took != want {
			t.Errorf("reaped for %v %v after the first byte, want read rate after exactly %v", r, took, want)
		}
	})
}

// TestReadRateTrickleReapedAtGraceByte: without ConnState a transfer is
// measured to its last byte (a client waiting for an answer owes
// nothing), so a trickler (a byte every 400ms from 30ms after a tick) is
// judged when a byte comes RateGrace after its first: the transfer counts
// from the 0.1s tick, and the byte at 2.03s, stamped 2.0s, came before
// the 2.1s publication, so it may be RateGrace in (the latest bound of
// its time decides the grace) and is slow over the 1.9s it surely spans:
// reaped at 2.1s, 2.07s after the first byte. Judging that byte by its
// stamp alone, the next byte decided, 2.47s after the first (the raw TCP
// tricklers' 99% took 6.31s with a 5s grace).
func TestReadRateTrickleReapedAtGraceByte(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, headConfig)
		defer l.Close()
		server, client := pair(t, l, pl)
		time.Sleep(30 * time.Millisecond)
		first := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				if _, err := client.Write([]byte{'x'}); err != nil {
					return
				}
				time.Sleep(400 * time.Millisecond)
			}
		}()
		defer func() { client.Close(); <-done }()
		r, took := reapedBy(t, server, first)
		if want := headConfig.RateGrace + tRes - 30*time.Millisecond; r != ReasonReadRate || took != want {
			t.Errorf("reaped for %v %v after the first byte, want read rate after exactly %v", r, took, want)
		}
	})
}

// TestReadRateWaitingClientNeverJudged: without ConnState, a client that
// sent a short request (20 bytes) and waits 10 × RateGrace for its answer
// (a blocking command) is not judged: its transfer ended with its last
// byte.
func TestReadRateWaitingClientNeverJudged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := headConfig
		cfg.IdleTimeout = time.Minute
		l, pl := newPipeServer(t, cfg)
		defer l.Close()
		server, client := pair(t, l, pl)
		drain(server)
		if _, err := client.Write([]byte("BLPOP queue 30\r\n\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * cfg.RateGrace)
		synctest.Wait()
		if st := l.Stats(); st.Closed != 0 {
			t.Errorf("Stats %+v: a client waiting for its answer was judged", st)
		}
		client.Close()
	})
}

// TestReadRateKeepAliveBetweenRequestsNotJudged: under ConnState, a
// keep-alive client whose request (36 bytes, below what RateGrace at the
// rate asks) was read, paused, answered and resumed between two looks of
// the timer, and who then waits 10 × RateGrace (under the idle timeout),
// is not judged: that request's bytes ended with its answer, and silence
// counts only inside a head.
func TestReadRateKeepAliveBetweenRequestsNotJudged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := headConfig
		cfg.IdleTimeout = time.Minute
		l, pl := newPipeServer(t, cfg)
		defer l.Close()
		server, client := pair(t, l, pl)
		ConnState(server, http.StateNew)
		drain(client)
		time.Sleep(cfg.RateGrace/4 + tRes/2) // just after a look
		req := "GET /small HTTP/1.1\r\nHost: bench\r\n\r\n"
		go client.Write([]byte(req))
		if _, err := io.ReadFull(server, make([]byte, len(req))); err != nil {
			t.Fatal(err)
		}
		ConnState(server, http.StateActive)
		server.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		ConnState(server, http.StateIdle)
		time.Sleep(10 * cfg.RateGrace)
		synctest.Wait()
		if st := l.Stats(); st.Closed != 0 {
			t.Errorf("Stats %+v: a keep-alive client between requests was judged", st)
		}
		client.Close()
	})
}

// TestWriteRateAnswerReapedFromFirstByte: under ConnState, a request read
// and its answer's first byte written in the same tick (as net/http does)
// leave a read stamp and a write record the clock cannot order; the byte
// counts can: no byte was read after the answer began, so the write
// transfer counts from the tick after its first byte, not from the
// timer's next look (up to RateGrace / 4 later). A reader taking 4 bytes
// every 200ms (20 B/s, below 100 B/s) whose request comes 130ms in, just after a
// look, is reaped at the tick after its answer's first byte + RateGrace:
// 2.07s after that byte.
func TestWriteRateAnswerReapedFromFirstByte(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{IdleTimeout: 5 * time.Second, MinWriteRate: 100, RateGrace: 2 * time.Second, Resolution: tRes}
		l, pl := newPipeServer(t, cfg)
		defer l.Close()
		server, client := pair(t, l, pl)
		ConnState(server, http.StateNew)
		time.Sleep(cfg.RateGrace/4 + 130*time.Millisecond) // just after the first look
		req := "GET / HTTP/1.1\r\n\r\n"
		go client.Write([]byte(req))
		if _, err := io.ReadFull(server, make([]byte, len(req))); err != nil {
			t.Fatal(err)
		}
		ConnState(server, http.StateActive)
		first := time.Now()
		done := make(chan struct{})
		go func() { // the client reads 4 bytes every 200ms
			defer close(done)
			buf := make([]byte, 4)
			for {
				if _, err := io.ReadFull(client, buf); err != nil {
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
		}()
		var err error
		for err == nil {
			_, err = server.Write([]byte("0123"))
		}
		took := time.Since(first)
		client.Close()
		<-done
		var ie *IdleError
		if want := cfg.RateGrace + tRes - 30*time.Millisecond; !errors.As(err, &ie) || ie.Reason != ReasonWriteRate || took != want {
			t.Errorf("Write failed with %v %v after the first byte, want the write rate after exactly %v", err, took, want)
		}
	})
}

// lateOwner makes l's owner store every publication of the activity
// clock 10ms after reading the clock for it, as on a busy machine: the
// bound of a first byte then lies 10ms past a tick.
func lateOwner(l *Listener) { l.tr.afterStore = func() { time.Sleep(10 * time.Millisecond) } }

// TestWriteRateLateOwnerReapedOnTheTick: a slow reader's answer, as in
// TestWriteRateAnswerReapedFromFirstByte, with the owner storing each
// publication 10ms late (the first byte's bound is 0.71s, not the 0.7s
// tick). Its grace is counted in ticks, from the 0.7s tick, so it is
// reaped on the 2.7s tick, 2.07s after its first byte, not on the next
// one (2.17s): slowhttptest's slow read took 99% at 5.68s with a 5s
// grace and a 312.5ms Resolution, every reap judged grace + 1 tick after
// its bound.
func TestWriteRateLateOwnerReapedOnTheTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{IdleTimeout: 5 * time.Second, MinWriteRate: 100, RateGrace: 2 * time.Second, Resolution: tRes}
		l, pl := newPipeServer(t, cfg)
		defer l.Close()
		lateOwner(l)
		server, client := pair(t, l, pl)
		ConnState(server, http.StateNew)
		time.Sleep(cfg.RateGrace/4 + 130*time.Millisecond)
		req := "GET / HTTP/1.1\r\n\r\n"
		go client.Write([]byte(req))
		if _, err := io.ReadFull(server, make([]byte, len(req))); err != nil {
			t.Fatal(err)
		}
		ConnState(server, http.StateActive)
		first := time.Now()
		done := make(chan struct{})
		go func() { // the client reads 4 bytes every 200ms
			defer close(done)
			buf := make([]byte, 4)
			for {
				if _, err := io.ReadFull(client, buf); err != nil {
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
		}()
		var err error
		for err == nil {
			_, err = server.Write([]byte("0123"))
		}
		took := time.Since(first)
		client.Close()
		<-done
		var ie *IdleError
		if want := cfg.RateGrace + tRes - 30*time.Millisecond; !errors.As(err, &ie) || ie.Reason != ReasonWriteRate || took != want {
			t.Errorf("Write failed with %v %v after the first byte, want the write rate after exactly %v", err, took, want)
		}
	})
}

// TestReadRateHeadLateOwnerReapedOnTheTick: the slowloris of
// TestReadRateHeadReapedAtDeadline with the owner storing each
// publication 10ms late is still reaped on the tick after its first
// byte + RateGrace, 2.07s after that byte (2.17s when the grace counted
// from the first byte's late bound).
func TestReadRateHeadLateOwnerReapedOnTheTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, headConfig)
		defer l.Close()
		lateOwner(l)
		server, client := pair(t, l, pl)
		ConnState(server, http.StateNew)
		time.Sleep(30 * time.Millisecond)
		first := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, err := client.Write([]byte("GET / HTTP/1.1\r\nA: b\r\n")); err != nil {
				return
			}
			for {
				time.Sleep(1500 * time.Millisecond)
				if _, err := client.Write([]byte("X-a: b\r\n")); err != nil {
					return
				}
			}
		}()
		defer func() { client.Close(); <-done }()
		r, took := reapedBy(t, server, first)
		if want := headConfig.RateGrace + tRes - 30*time.Millisecond; r != ReasonReadRate || took != want {
			t.Errorf("reaped for %v %v after the first byte, want read rate after exactly %v", r, took, want)
		}
	})
}

// TestReadRateTrickleAfterAnswerCountsFromFirstByte: on a raw connection
// a client sends a line 30ms after the timer's look at 0.5s, the server
// answers it in the same tick, and the client then trickles a byte every
// 400ms. The answer's first byte ends the read transfer, so the first
// trickled byte begins one with its own record, and the write count
// (unchanged since) says it followed the answer, although both are
// stamped in the same tick: it counts from the 0.6s tick and is reaped at
// 2.6s, 2.07s after that byte. Without that record the transfer counted
// from the look that saw it (1.0s), up to RateGrace / 4 later: 2.47s.
func TestReadRateTrickleAfterAnswerCountsFromFirstByte(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, headConfig)
		defer l.Close()
		server, client := pair(t, l, pl)
		errc := make(chan error, 1)
		go func() { // the server answers each line
			br := bufio.NewReader(server)
			for {
				line, err := br.ReadSlice('\n')
				if err == nil {
					_, err = server.Write(line)
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}()
		time.Sleep(headConfig.RateGrace/4 + 30*time.Millisecond)
		if _, err := client.Write([]byte("PING\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(client, make([]byte, 5)); err != nil {
			t.Fatal(err)
		}
		first := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				if _, err := client.Write([]byte{'x'}); err != nil {
					return
				}
				time.Sleep(400 * time.Millisecond)
			}
		}()
		err := <-errc
		took := time.Since(first)
		client.Close()
		<-done
		var ie *IdleError
		if want := headConfig.RateGrace + tRes - 30*time.Millisecond; !errors.As(err, &ie) || ie.Reason != ReasonReadRate || took != want {
			t.Errorf("server Read failed with %v %v after the first trickled byte, want the read rate after exactly %v", err, took, want)
		}
	})
}
