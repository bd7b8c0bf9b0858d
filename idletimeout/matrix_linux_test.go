//go:build linux

package idletimeout

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// The write rate on TCP judges what the peer acknowledged, which only a
// real socket shows: these tests run on loopback with the real clock, the
// reader's pace being the workload. The listener sets an MSS of 1,400
// bytes, as on an Ethernet path: with loopback's 64 KiB MSS a receiver
// opens its window, and so acknowledges, in 64 KiB steps, and a sender
// sees a slow reader's progress only that coarsely.

// listenTCPMSS is listenTCP with the listening socket's MSS set to mss.
func listenTCPMSS(t *testing.T, cfg Config, mss int) *Listener {
	t.Helper()
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG, mss) })
		return errors.Join(err, serr)
	}}
	inner, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	l, err := NewListener(inner, cfg)
	if err != nil {
		inner.Close()
		t.Fatalf("NewListener: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// writeRateConfig reaps write transfers slower than 4000 B/s after 1s.
var writeRateConfig = Config{MinWriteRate: 4000, RateGrace: time.Second, Resolution: 10 * time.Millisecond}

// TestWriteRateSlowReaderReaped: a client reading 8 bytes every 100ms
// (80 B/s) from a response the server writes in 32 KiB Writes while paused
// (a request in progress, as under ConnState) is reaped for the write
// rate once the burst its small receive buffer took at first no longer
// pays for it (a few KiB at 4000 B/s); the blocked Write fails with an
// *IdleError for it.
func TestWriteRateSlowReaderReaped(t *testing.T) {
	t.Parallel() // real clock and sockets: it mostly waits
	l := listenTCPMSS(t, writeRateConfig, 1400)
	server, client := tcpPair(t, l)
	if _, _, ok := tcpProgress(server.inner); !ok {
		t.Skip("tcp_info is not read on this platform: the write rate falls back to what Writes returned, and the send buffer's first burst pays for tens of seconds")
	}
	client.(*net.TCPConn).SetReadBuffer(4 << 10) // a small first burst
	server.Pause()
	start := time.Now()
	wrote := make(chan error, 1)
	go func() {
		buf := make([]byte, 32<<10)
		for {
			if _, err := server.Write(buf); err != nil {
				wrote <- err
				return
			}
		}
	}()
	go pacedRead(client, 8, 100*time.Millisecond)
	err := <-wrote
	took := time.Since(start)
	// The reap resets the connection: the server's kernel drops the bytes
	// queued to the client instead of trickling them to it after the
	// close, and the client's socket learns at once (its receive buffer
	// still holds what had arrived).
	if got := soErrorWithin(t, client, 5*time.Second); got != syscall.ECONNRESET {
		t.Errorf("client socket error after the reap: %v, want ECONNRESET", got)
	}
	var ie *IdleError
	if !errors.As(err, &ie) || ie.Reason != ReasonWriteRate {
		t.Fatalf("the blocked Write returned %v, want an *IdleError for the write rate", err)
	}
	if hi := 5 * time.Second; took < writeRateConfig.RateGrace || took > hi {
		t.Errorf("reaped after %v, want within [%v, %v]", took, writeRateConfig.RateGrace, hi)
	}
	if st := l.Stats(); st.ReapedWriteRate != 1 {
		t.Errorf("Stats %+v, want ReapedWriteRate 1", st)
	}
}

// TestWriteRateHonestSlowReaderNeverCut: a client reading 4 KiB every
// 200ms (20 KB/s, above the 4000 B/s minimum) a 192 KiB response written
// at once is never cut.
func TestWriteRateHonestSlowReaderNeverCut(t *testing.T) {
	t.Parallel() // real clock and sockets: it mostly waits
	l := listenTCPMSS(t, writeRateConfig, 1400)
	server, client := tcpPair(t, l)
	server.Pause()
	const size = 192 << 10
	wrote := make(chan error, 1)
	go func() {
		_, err := server.Write(make([]byte, size))
		wrote <- err
		server.CloseWrite()
	}()
	got, err := pacedRead(client, 4<<10, 200*time.Millisecond)
	if err != nil || got != size {
		t.Errorf("client read %d bytes, %v; want %d, nil (Stats %+v)", got, err, size, l.Stats())
	}
	if err := <-wrote; err != nil {
		t.Errorf("Write: %v", err)
	}
	if st := l.Stats(); st.Closed != 0 {
		t.Errorf("Stats %+v: an honest slow reader was cut", st)
	}
}

// TestWriteRateIdleAfterResponseNotJudged: once a response has been taken
// by the peer, nothing is queued: a connection that then writes nothing is
// no slow transfer, however long it stays paused.
func TestWriteRateIdleAfterResponseNotJudged(t *testing.T) {
	t.Parallel() // real clock and sockets: it mostly waits
	l := listenTCPMSS(t, writeRateConfig, 1400)
	server, client := tcpPair(t, l)
	server.Pause()
	if _, err := server.Write([]byte("response")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(client, make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * writeRateConfig.RateGrace)
	client.SetReadDeadline(deadline)
	_, err := client.Read(make([]byte, 1)) // the workload: 3 × RateGrace of nothing
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("client Read: %v, want its own deadline (the server closed the connection? Stats %+v)", err, l.Stats())
	}
	if st := l.Stats(); st.Closed != 0 {
		t.Errorf("Stats %+v: a paused connection with nothing to send was judged", st)
	}
}

// TestWriteRateResumedWithBytesQueuedNeverCut pins the honest downloads a
// slow-read run of BenchmarkSlowAttack cut (11 of 50 in one run): net/http
// resumes a connection (ConnState StateIdle) once its handler's last Write
// returned, which on a socket with large buffers is long before the peer
// has read the response. The bytes still queued are the same write
// transfer, and the connection is not idle while the peer takes them: a
// reader at 20 KB/s, five times the 4000 B/s minimum, whose kernel opens
// its window in 64 KiB steps (loopback's MSS: every few seconds at that
// pace) is never cut, neither for the write rate nor for the 2s idle
// timeout, though no Write comes after the Resume.
func TestWriteRateResumedWithBytesQueuedNeverCut(t *testing.T) {
	t.Parallel() // real clock and sockets: it mostly waits
	for _, tc := range []struct {
		name   string
		handle time.Duration // how long the request stays paused after the Write
	}{
		{"resumed at once", 0},
		// The timer looked at the paused transfer meanwhile, as it does
		// when a handler runs longer than RateGrace / 4.
		{"looked at while paused", writeRateConfig.RateGrace / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := writeRateConfig
			cfg.IdleTimeout = 2 * time.Second
			l := listenTCP(t, cfg)
			server, client := tcpPair(t, l)
			if _, _, ok := tcpProgress(server.inner); !ok {
				t.Skip("tcp_info is not read on this platform")
			}
			server.inner.(*net.TCPConn).SetWriteBuffer(4 << 20) // the whole response fits
			const size = 256 << 10
			// The request: read just before the Pause, as net/http does.
			if _, err := client.Write([]byte("GET /file\n")); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(server, make([]byte, 10)); err != nil {
				t.Fatal(err)
			}
			server.Pause() // the request is being handled
			if _, err := server.Write(make([]byte, size)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(tc.handle) // the handler's work
			server.Resume()
			client.SetReadDeadline(time.Now().Add(30 * time.Second))
			want := 6 * cfg.RateGrace.Nanoseconds() / int64(time.Second) * 20 << 10 // 6 × RateGrace at 20 KB/s
			got, gap, err := pacedReadGap(io.LimitReader(client, want), 2<<10, 100*time.Millisecond)
			if err != nil {
				t.Fatalf("client read %d bytes, then %v (Stats %+v)", got, err, l.Stats())
			}
			if st := l.Stats(); st.Closed != 0 {
				t.Errorf("Stats %+v: an honest reader of a queued response was cut", st)
			}
			t.Logf("read %d bytes, longest gap %v", got, gap)
		})
	}
}

// soErrorWithin polls c's pending socket error (SO_ERROR) until it is set
// or d has passed, and returns it.
func soErrorWithin(t *testing.T, c net.Conn, d time.Duration) syscall.Errno {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(d); ; {
		var v int
		rc.Control(func(fd uintptr) { v, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_ERROR) })
		if v != 0 || time.Now().After(end) {
			return syscall.Errno(v)
		}
		time.Sleep(10 * time.Millisecond) // polling a kernel flag: nothing to wait on
	}
}
