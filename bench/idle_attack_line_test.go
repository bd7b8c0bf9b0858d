package bench

import (
	"bufio"
	"context"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/idletimeout"
)

// BenchmarkSlowAttackLine (issue 25) is the slow attack on a raw TCP line
// protocol, no HTTP: an echo server answering each line, attacked by
// tricklers sending one byte a second and never a newline, while honest
// clients send a line every 3s and read its answer. "ttlkit" is the
// recommended raw TCP config (IdleTimeout and FirstByteTimeout 5s,
// MinReadRate 240 B/s, RateGrace 5s; 2s with -short); "deadline" is the
// classic idle timeout of a Go server, a 5s read deadline set before every
// Read of the connection. Figures: conns
// (tricklers), closed (tricklers the server closed before the end),
// closed99-s (seconds from each trickler's first byte until 99% of them
// saw the close, or the test length), srv-reap99-s (ttlkit, server-side:
// from the first byte read until 99% of the reaped were closed), honest
// and honest-cut. No external tool: it always runs.
func BenchmarkSlowAttackLine(b *testing.B) {
	sz := attackSizes()
	if testing.Short() {
		attackGrace = 2 * time.Second
	}
	raiseNoFile(4*(sz.conns+sz.honest) + fdSlack)
	for _, impl := range []string{"ttlkit", "deadline"} {
		b.Run("impl="+impl, func(b *testing.B) {
			inner, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			var ln net.Listener = inner
			var readDeadline time.Duration
			var rc *reapClock
			if impl == "ttlkit" {
				cfg := attackConfig()
				cfg.MinWriteRate = 0
				l, err := idletimeout.NewListener(inner, cfg)
				if err != nil {
					b.Fatal(err)
				}
				rc = newReapClock()
				ln = rc.listener(l)
			} else {
				readDeadline = 5 * time.Second
			}
			defer ln.Close()
			go serveLines(ln, readDeadline)
			ctx, cancel := context.WithTimeout(context.Background(), sz.length)
			defer cancel()
			addr := inner.Addr().String()
			var cut atomic.Int64
			var wg sync.WaitGroup
			for range sz.honest {
				wg.Go(func() {
					if !honestLines(ctx, addr) {
						cut.Add(1)
					}
				})
			}
			closedAt := make([]time.Duration, sz.conns)
			for i := range sz.conns {
				wg.Go(func() { closedAt[i] = trickle(ctx, addr) })
			}
			wg.Wait()
			var closed []time.Duration
			for _, d := range closedAt {
				if d > 0 {
					closed = append(closed, d)
				}
			}
			slices.Sort(closed)
			c99 := sz.length.Seconds()
			if k := (sz.conns*99 + 99) / 100; len(closed) >= k {
				c99 = closed[k-1].Seconds()
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(sz.conns), "conns")
			b.ReportMetric(float64(len(closed)), "closed")
			b.ReportMetric(c99, "closed99-s")
			if rc != nil {
				p99, _ := rc.p99(0)
				b.ReportMetric(p99, "srv-reap99-s")
			}
			b.ReportMetric(float64(sz.honest), "honest")
			b.ReportMetric(float64(cut.Load()), "honest-cut")
		})
	}
}

// serveLines answers every line on every connection of ln with the line.
func serveLines(ln net.Listener, readDeadline time.Duration) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			var r io.Reader = c
			if readDeadline > 0 {
				r = deadlineReader{c, readDeadline}
			}
			br := bufio.NewReader(r)
			for {
				line, err := br.ReadSlice('\n')
				if err != nil {
					return
				}
				if _, err := c.Write(line); err != nil {
					return
				}
			}
		}()
	}
}

// deadlineReader sets a read deadline before every Read: the classic
// idle timeout.
type deadlineReader struct {
	c net.Conn
	d time.Duration
}

func (r deadlineReader) Read(b []byte) (int, error) {
	r.c.SetReadDeadline(time.Now().Add(r.d))
	return r.c.Read(b)
}

// honestLines sends a line every 3s and reads its answer until ctx ends;
// it reports false if the connection failed before.
func honestLines(ctx context.Context, addr string) bool {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte("GET key:1234\n")); err != nil {
			return ctx.Err() != nil
		}
		if _, err := br.ReadSlice('\n'); err != nil {
			return ctx.Err() != nil
		}
		select {
		case <-ctx.Done():
			return true
		case <-time.After(3 * time.Second):
		}
	}
}

// trickle sends one byte a second, never a newline, until the server
// closes the connection (it returns when, after its first byte) or ctx
// ends (0).
func trickle(ctx context.Context, addr string) time.Duration {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0
	}
	defer c.Close()
	start := time.Now()
	eof := make(chan time.Duration, 1)
	go func() {
		var b [1]byte
		c.Read(b[:]) // the server sends nothing: this returns at the close
		eof <- time.Since(start)
	}()
	tick := time.NewTicker(time.Second) // the attacker's pace
	defer tick.Stop()
	for {
		if _, err := c.Write([]byte{'x'}); err != nil {
			return <-eof
		}
		select {
		case d := <-eof:
			return d
		case <-ctx.Done():
			return 0
		case <-tick.C:
		}
	}
}
