package idletimeout

import (
	"io"
	"net"
	"testing"
	"time"
)

// benchNop is a no-op conn behind an interface the compiler cannot see
// through, so "bare" pays the same dynamic call as "wrapped".
var benchNop net.Conn = nopConn{}

// BenchmarkOverhead measures what tracking adds to Read and Write: one
// iteration is one Read and one Write on a no-op connection, so only the
// wrapper's cost remains; (wrapped - bare) / 2 is the cost per call.
// "deadline-per-op" is the classic alternative's added cost for the same
// two calls: a SetReadDeadline and a SetWriteDeadline on a TCP connection
// (a no-op conn has no runtime timer to reset).
func BenchmarkOverhead(b *testing.B) {
	buf := make([]byte, 64)
	b.Run("bare", func(b *testing.B) {
		c := benchNop
		b.ReportAllocs()
		for b.Loop() {
			c.Read(buf)
			c.Write(buf)
		}
	})
	b.Run("wrapped", func(b *testing.B) {
		l, err := NewListener(newPipeListener(), Config{IdleTimeout: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		c, err := l.Wrap(nopConn{})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		var nc net.Conn = c
		b.ReportAllocs()
		for b.Loop() {
			nc.Read(buf)
			nc.Write(buf)
		}
	})
	// wrapped-matrix: with a rate and a first-byte deadline set, Read and
	// Write also count bytes (one atomic add each).
	b.Run("wrapped-matrix", func(b *testing.B) {
		l, err := NewListener(newPipeListener(), Config{IdleTimeout: time.Minute, FirstByteTimeout: time.Minute, MinReadRate: 1, MinWriteRate: 1, RateGrace: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		c, err := l.Wrap(nopConn{})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		var nc net.Conn = c
		b.ReportAllocs()
		for b.Loop() {
			nc.Read(buf)
			nc.Write(buf)
		}
	})
	b.Run("wrapped-parallel", func(b *testing.B) {
		l, err := NewListener(newPipeListener(), Config{IdleTimeout: time.Minute, Resolution: time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			c, err := l.Wrap(nopConn{})
			if err != nil {
				b.Error(err)
				return
			}
			defer c.Close()
			buf := make([]byte, 64)
			for pb.Next() {
				c.Read(buf)
				c.Write(buf)
			}
		})
	})
	b.Run("deadline-per-op", func(b *testing.B) {
		c := tcpConnForBench(b)
		b.ReportAllocs()
		for b.Loop() {
			c.SetReadDeadline(time.Now().Add(time.Minute))
			c.SetWriteDeadline(time.Now().Add(time.Minute))
		}
	})
}

// tcpConnForBench returns a loopback TCP connection whose peer is closed
// at the end of the benchmark.
func tcpConnForBench(b *testing.B) net.Conn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close(); s.Close() })
	return c
}

// BenchmarkLoopback is one 64-byte message each way on a loopback TCP
// connection: bare, wrapped, and with a deadline set before every Read.
func BenchmarkLoopback(b *testing.B) {
	for _, mode := range []string{"bare", "wrapped", "deadline-per-read"} {
		b.Run(mode, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			var l net.Listener = ln
			if mode == "wrapped" {
				il, err := NewListener(ln, Config{IdleTimeout: time.Minute})
				if err != nil {
					b.Fatal(err)
				}
				l = il
			}
			defer l.Close()
			go func() {
				s, err := l.Accept()
				if err != nil {
					return
				}
				defer s.Close()
				buf := make([]byte, 64)
				for {
					if mode == "deadline-per-read" {
						s.SetReadDeadline(time.Now().Add(time.Minute))
					}
					if _, err := io.ReadFull(s, buf); err != nil {
						return
					}
					if _, err := s.Write(buf); err != nil {
						return
					}
				}
			}()
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			buf := make([]byte, 64)
			b.ReportAllocs()
			for b.Loop() {
				c.Write(buf)
				io.ReadFull(c, buf)
			}
		})
	}
}
