package idletimeout

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// One test per documented edge case of FirstByteTimeout, the minimum
// rates and MaxAge, each in a synctest bubble over net.Pipe, so the times
// are exact: a limit is never early, and is late by at most the bound the
// documentation states.

// reapedBy waits for c (the server end) to be closed, reading from it, and
// returns the *IdleError's reason and how long after start it came.
func reapedBy(t *testing.T, c net.Conn, start time.Time) (Reason, time.Duration) {
	t.Helper()
	err, took := waitReaped(c, start)
	var ie *IdleError
	if !errors.As(err, &ie) {
		t.Fatalf("Read after the reap: %v, want an *IdleError", err)
	}
	return ie.Reason, took
}

// TestFirstByteSilentClientReaped: a client that sends nothing is reaped
// FirstByteTimeout after it connected, although the IdleTimeout is longer
// and the server keeps writing (a banner, pings): a Write does not count.
func TestFirstByteSilentClientReaped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const fb = 2 * time.Second
		l, pl := newPipeServer(t, Config{IdleTimeout: time.Minute, FirstByteTimeout: fb, Resolution: tRes})
		defer l.Close()
		start := time.Now()
		server, client := pair(t, l, pl)
		drain(client)
		done := make(chan struct{})
		defer func() { <-done }()
		go func() { // the server greets every 500ms
			defer close(done)
			for {
				if _, err := server.Write([]byte("hello\n")); err != nil {
					return
				}
				time.Sleep(500 * time.Millisecond)
			}
		}()
		r, took := reapedBy(t, server, start)
		if r != ReasonFirstByte || took < fb || took > fb+2*tRes {
			t.Errorf("reaped for %v after %v, want first byte within [%v, %v]", r, took, fb, fb+2*tRes)
		}
		if st := l.Stats(); st.ReapedFirstByte != 1 || st.Closed != 1 {
			t.Errorf("Stats %+v, want ReapedFirstByte 1", st)
		}
	})
}

// TestFirstByteCalledOffByOneByte: one byte read before the deadline ends
// the first-byte limit for good; the idle timeout takes over.
func TestFirstByteCalledOffByOneByte(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const fb = 2 * time.Second
		l, pl := newPipeServer(t, Config{IdleTimeout: 5 * time.Second, FirstByteTimeout: fb, Resolution: tRes})
		defer l.Close()
		server, client := pair(t, l, pl)
		time.Sleep(fb - tRes)
		go client.Write([]byte{'x'})
		var b [1]byte
		if _, err := server.Read(b[:]); err != nil {
			t.Fatal(err)
		}
		last := time.Now()
		r, took := reapedBy(t, server, last)
		if r != ReasonIdle || took < 5*time.Second {
			t.Errorf("reaped for %v %v after the byte, want idle after at least 5s", r, took)
		}
	})
}

// rateConfig reaps reads slower than 100 B/s after a 2s grace; the idle
// timeout (1s) is longer than any pause of the tricklers below.
var rateConfig = Config{IdleTimeout: time.Second, MinReadRate: 100, MinWriteRate: 100, RateGrace: 2 * time.Second, Resolution: tRes}

// rateBound is the latest a slow transfer may be reaped after it began:
// RateGrace + RateGrace/4 + 2 × Resolution.
const rateBound = 2*time.Second + 500*time.Millisecond + 2*tRes

// TestReadRateTrickleReaped: a client trickling a request, one byte every
// 400ms (2.5 B/s) — never idle, so the idle timeout never fires — is
// reaped for its read rate, not before RateGrace and at most rateBound
// after its first byte. It is reaped while paused too (a request in
// progress), as net/http pauses after a request's headers.
func TestReadRateTrickleReaped(t *testing.T) {
	for _, paused := range []bool{false, true} {
		name := "tracked"
		if paused {
			name = "paused"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l, pl := newPipeServer(t, rateConfig)
				defer l.Close()
				server, client := pair(t, l, pl)
				if paused {
					server.Pause()
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
				defer func() { client.Close(); <-done }()
				r, took := reapedBy(t, server, first)
				if r != ReasonReadRate || took < rateConfig.RateGrace || took > rateBound {
					t.Errorf("reaped for %v after %v, want read rate within [%v, %v]", r, took, rateConfig.RateGrace, rateBound)
				}
				if st := l.Stats(); st.ReapedReadRate != 1 {
					t.Errorf("Stats %+v, want ReapedReadRate 1", st)
				}
			})
		})
	}
}

// TestReadRateHonestClientNeverCut: a client sending 150 B/s, above the
// 100 B/s minimum, in 30-byte pieces every 200ms, for 20 × RateGrace, is
// never cut.
func TestReadRateHonestClientNeverCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, rateConfig)
		defer l.Close()
		server, client := pair(t, l, pl)
		drain(server)
		for range 200 {
			if _, err := client.Write(make([]byte, 30)); err != nil {
				t.Fatalf("write: %v (Stats %+v)", err, l.Stats())
			}
			time.Sleep(200 * time.Millisecond)
		}
		if st := l.Stats(); st.Closed != 0 {
			t.Errorf("Stats %+v: an honest client above the rate was cut", st)
		}
		client.Close()
	})
}

// TestReadRateAnsweredRequestsNotJudged: a line-protocol client sending a
// 10-byte request every 900ms (11 B/s, below the rate) and getting an
// answer to each is never cut: an answer ends the read transfer, so
// pauses between requests are not counted against the client.
func TestReadRateAnsweredRequestsNotJudged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, rateConfig)
		defer l.Close()
		server, client := pair(t, l, pl)
		go func() { // echo server: one answer per request
			buf := make([]byte, 10)
			for {
				if _, err := io.ReadFull(server, buf); err != nil {
					return
				}
				if _, err := server.Write(buf); err != nil {
					return
				}
			}
		}()
		buf := make([]byte, 10)
		for i := range 40 {
			if _, err := client.Write([]byte("PING 1234\n")); err != nil {
				t.Fatalf("request %d: %v (Stats %+v)", i, err, l.Stats())
			}
			if _, err := io.ReadFull(client, buf); err != nil {
				t.Fatalf("answer %d: %v (Stats %+v)", i, err, l.Stats())
			}
			time.Sleep(900 * time.Millisecond)
		}
		if st := l.Stats(); st.Closed != 0 {
			t.Errorf("Stats %+v: a client whose requests were answered was cut", st)
		}
		client.Close()
	})
}

// TestRateIdleConnLeftToIdleTimeout: a connection that moves nothing is
// no slow transfer: it is reaped by IdleTimeout, not by a rate.
func TestRateIdleConnLeftToIdleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, rateConfig)
		defer l.Close()
		start := time.Now()
		server, _ := pair(t, l, pl)
		if r, _ := reapedBy(t, server, start); r != ReasonIdle {
			t.Errorf("an idle connection was reaped for %v, want idle", r)
		}
	})
}

// TestRateSlowHandlerNotJudged: a paused connection (a request being
// handled) whose request has arrived and which moves nothing for 5 ×
// RateGrace is not judged: nothing is transferring.
func TestRateSlowHandlerNotJudged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, rateConfig)
		defer l.Close()
		server, client := pair(t, l, pl)
		go client.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
		buf := make([]byte, 18)
		if _, err := io.ReadFull(server, buf); err != nil {
			t.Fatal(err)
		}
		server.Pause()
		time.Sleep(5 * rateConfig.RateGrace)
		synctest.Wait()
		if st := l.Stats(); st.Closed != 0 {
			t.Errorf("Stats %+v: a quiet request in progress was judged", st)
		}
		server.Resume()
		client.Close()
	})
}

// maxAgeConfig ends connections after 10s (+ up to 1s of jitter).
var maxAgeConfig = Config{MaxAge: 10 * time.Second, Resolution: tRes}

// TestMaxAgeQuietConnClosed: a connection not paused is closed once it is
// MaxAge old, plus its jitter of at most a tenth, however busy: never
// before MaxAge, at most MaxAge × 1.1 + 2 × Resolution.
func TestMaxAgeQuietConnClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, maxAgeConfig)
		defer l.Close()
		start := time.Now()
		server, client := pair(t, l, pl)
		done := make(chan struct{})
		defer func() { client.Close(); <-done }()
		go func() { // busy: a byte every 100ms
			defer close(done)
			for {
				if _, err := client.Write([]byte{'x'}); err != nil {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
		r, took := reapedBy(t, server, start)
		hi := maxAgeConfig.MaxAge*11/10 + 2*tRes
		if r != ReasonMaxAge || took < maxAgeConfig.MaxAge || took > hi {
			t.Errorf("closed for %v after %v, want max age within [%v, %v]", r, took, maxAgeConfig.MaxAge, hi)
		}
		if st := l.Stats(); st.ReapedMaxAge != 1 {
			t.Errorf("Stats %+v, want ReapedMaxAge 1", st)
		}
	})
}

// TestMaxAgeWaitsForRequest: a connection paused (a request in progress)
// when it comes of age is left alone until Resume (the response is done),
// after which it is closed on the next tick (not at once: HTTP/2 reports
// the end of a stream before flushing it, TestHTTP2MaxAgeWaitsForStreams).
func TestMaxAgeWaitsForRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, maxAgeConfig)
		defer l.Close()
		server, _ := pair(t, l, pl)
		server.Pause()
		time.Sleep(3 * maxAgeConfig.MaxAge)
		synctest.Wait()
		if st := l.Stats(); st.Closed != 0 {
			t.Fatalf("Stats %+v: closed during its request", st)
		}
		server.Resume()
		time.Sleep(tRes)
		synctest.Wait()
		if st := l.Stats(); st.ReapedMaxAge != 1 {
			t.Errorf("Stats %+v after Resume past MaxAge, want ReapedMaxAge 1", st)
		}
		var b [1]byte
		if _, err := server.Read(b[:]); !errors.Is(err, ErrIdle) {
			t.Errorf("Read after the end: %v, want an error wrapping ErrIdle", err)
		}
	})
}

// TestMaxAgeGraceHardEnd: with MaxAgeGrace, a connection still paused
// MaxAgeGrace past its age is closed anyway.
func TestMaxAgeGraceHardEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := maxAgeConfig
		cfg.MaxAgeGrace = 5 * time.Second
		l, pl := newPipeServer(t, cfg)
		defer l.Close()
		start := time.Now()
		server, _ := pair(t, l, pl)
		server.Pause()
		r, took := reapedBy(t, server, start)
		lo, hi := cfg.MaxAge+cfg.MaxAgeGrace, cfg.MaxAge*11/10+cfg.MaxAgeGrace+2*tRes
		if r != ReasonMaxAge || took < lo || took > hi {
			t.Errorf("closed for %v after %v, want max age within [%v, %v]", r, took, lo, hi)
		}
	})
}

// TestMaxAgeJitterSpread: the ends of connections wrapped together spread
// over [MaxAge, MaxAge × 1.1], so a fleet does not reconnect at once.
func TestMaxAgeJitterSpread(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, maxAgeConfig)
		defer l.Close()
		seen := map[int64]bool{}
		for range 50 {
			c, _ := pair(t, l, pl)
			d := time.Duration(c.ageDue - c.born)
			if d < maxAgeConfig.MaxAge || d > maxAgeConfig.MaxAge*11/10 {
				t.Errorf("MaxAge with jitter %v, want within [%v, %v]", d, maxAgeConfig.MaxAge, maxAgeConfig.MaxAge*11/10)
			}
			seen[int64(d/tRes)] = true
			c.Close()
		}
		if len(seen) < 5 {
			t.Errorf("50 connections' ends fell in %d Resolution slots, want them spread", len(seen))
		}
	})
}

// TestMatrixConfigValidation: negative limits are refused with a message
// naming the field; RateGrace defaults to 5s when a rate is set; MaxAge
// alone starts a wheel with a Resolution of a sixteenth of it (at most 1s).
func TestMatrixConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		field string
	}{
		{"FirstByteTimeout", Config{FirstByteTimeout: -1}, "FirstByteTimeout"},
		{"HandshakeTimeout", Config{HandshakeTimeout: -1}, "HandshakeTimeout"},
		{"RateGrace", Config{MinReadRate: 1, RateGrace: -1}, "RateGrace"},
		{"MinReadRate", Config{MinReadRate: -1}, "MinReadRate"},
		{"MinWriteRate", Config{MinWriteRate: -5}, "MinWriteRate"},
		{"MaxAge", Config{MaxAge: -time.Second}, "MaxAge"},
		{"MaxAgeGrace", Config{MaxAge: time.Second, MaxAgeGrace: -1}, "MaxAgeGrace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.cfg.validate()
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("validate(%+v) = %v, want ErrInvalidConfig naming %s", tc.cfg, err, tc.field)
			}
		})
	}
	s, err := Config{MinWriteRate: 100}.validate()
	if err != nil || s.grace != int64(defaultRateGrace) || !s.counts {
		t.Errorf("MinWriteRate alone: grace %v counts %v, %v; want %v, true, nil", time.Duration(s.grace), s.counts, err, defaultRateGrace)
	}
	s, err = Config{MaxAge: time.Hour}.validate()
	if err != nil || !s.enabled() || s.res != time.Second || s.counts {
		t.Errorf("MaxAge alone: enabled %v, Resolution %v, counts %v, %v; want true, 1s, false, nil", s.enabled(), s.res, s.counts, err)
	}
	s, _ = Config{IdleTimeout: time.Minute}.validate()
	if s.counts {
		t.Error("IdleTimeout alone counts bytes: the hot path pays an add it needs not")
	}
}
