package idletimeout

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// These tests need the kernel's paths (sendfile, splice, socket buffers),
// so they run on loopback TCP with the real clock. Each transfer lasts
// about a second, several timeouts, at a pace whose gaps are a small part
// of the timeout, so a busy machine does not make them flaky.

// sparseFile returns the path of a file of size zero bytes.
func sparseFile(t *testing.T, size int64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	return path
}

// pacedRead reads r to the end, chunk bytes at a time with a pause of
// every between chunks (the client's pace, part of the scenario), and
// returns how many bytes it read.
func pacedRead(r io.Reader, chunk int, every time.Duration) (int64, error) {
	buf := make([]byte, chunk)
	var total int64
	for {
		n, err := io.ReadFull(r, buf)
		total += int64(n)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		time.Sleep(every)
	}
}

// pacedWrite writes size zero bytes to w, chunk bytes at a time with a
// pause of every between chunks, then closes w for writing.
func pacedWrite(w *net.TCPConn, size int64, chunk int, every time.Duration) error {
	buf := make([]byte, chunk)
	for size > 0 {
		n, err := w.Write(buf[:min(int64(chunk), size)])
		size -= int64(n)
		if err != nil {
			return err
		}
		time.Sleep(every)
	}
	return w.CloseWrite()
}

// sentCheck returns err, or an error if l closed a connection before the
// transfer ended. (Once the sender is done, the connection may be reaped
// while the kernel still delivers its buffers: that is no loss.)
func sentCheck(l *Listener, err error) error {
	if err != nil {
		return err
	}
	if st := l.Stats(); st.Closed != 0 {
		return fmt.Errorf("Stats %+v: an active connection was closed", st)
	}
	return nil
}

// zeroCopyConfig is a timeout shorter than the transfers below (about a
// second each at their pace) and far longer than the pauses of their pace,
// even on a loaded CI machine.
var zeroCopyConfig = Config{IdleTimeout: 500 * time.Millisecond, Resolution: 10 * time.Millisecond}

// TestSendfileKeepsStampFresh: copying a file to a tracked connection in
// any of the usual ways (io.Copy, os.File.WriteTo, Conn.ReadFrom), or a
// connection to a file (os.File.ReadFrom, io.Copy), at a pace slower than
// one timeout for the whole, is never cut: the runtime's sendfile and
// splice cannot take the socket past the stamps. Before the fix,
// os.File.WriteTo and os.File.ReadFrom found the socket through
// SyscallConn and moved everything without a stamp.
func TestSendfileKeepsStampFresh(t *testing.T) {
	t.Parallel() // real clock and sockets: it mostly waits
	const down = 48 << 20
	path := sparseFile(t, down)
	downloads := []struct {
		name string
		send func(c *Conn, f *os.File) (int64, error)
	}{
		{"io.Copy(conn, file)", func(c *Conn, f *os.File) (int64, error) { return io.Copy(c, f) }},
		{"file.WriteTo(conn)", func(c *Conn, f *os.File) (int64, error) { return f.WriteTo(c) }},
		{"conn.ReadFrom(file)", func(c *Conn, f *os.File) (int64, error) { return c.ReadFrom(f) }},
	}
	for _, tc := range downloads {
		t.Run(tc.name, func(t *testing.T) {
			l := listenTCP(t, zeroCopyConfig)
			server, client := tcpPair(t, l)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sent := make(chan error, 1)
			go func() {
				n, err := tc.send(server, f)
				if err == nil && n != down {
					err = fmt.Errorf("sent %d bytes, want %d", n, down)
				}
				sent <- sentCheck(l, err)
				server.CloseWrite()
			}()
			got, err := pacedRead(client, 256<<10, 5*time.Millisecond) // at most ~50 MB/s
			if err != nil || got != down {
				t.Errorf("client read %d bytes, %v; want %d, nil", got, err, down)
			}
			if err := <-sent; err != nil {
				t.Errorf("server: %v", err)
			}
		})
	}
	const up = 32 << 20
	uploads := []struct {
		name string
		recv func(f *os.File, c *Conn) (int64, error)
	}{
		{"io.Copy(file, conn)", func(f *os.File, c *Conn) (int64, error) { return io.Copy(f, c) }},
		{"file.ReadFrom(conn)", func(f *os.File, c *Conn) (int64, error) { return f.ReadFrom(c) }},
	}
	for _, tc := range uploads {
		t.Run(tc.name, func(t *testing.T) {
			l := listenTCP(t, zeroCopyConfig)
			server, client := tcpPair(t, l)
			f, err := os.Create(filepath.Join(t.TempDir(), "upload"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			wrote := make(chan error, 1)
			go func() { wrote <- pacedWrite(client.(*net.TCPConn), up, 256<<10, 5*time.Millisecond) }()
			n, err := tc.recv(f, server)
			if err == nil && n != up {
				err = fmt.Errorf("received %d bytes, want %d", n, up)
			}
			if err := sentCheck(l, err); err != nil {
				t.Errorf("server: %v", err)
			}
			if err := <-wrote; err != nil {
				t.Errorf("client: %v", err)
			}
			if st := l.Stats(); st.Closed != 0 {
				t.Errorf("Stats %+v: an active connection was closed", st)
			}
		})
	}
}

// TestSlowSteadyReaderNotReaped: a client that reads slowly but steadily
// is not reaped in the middle of one long transfer: one 4 MiB Write, or
// ReadFrom of a file, each lasting several timeouts while no pause of the
// reader comes near one. Small socket buffers make the writer wait for the
// reader. Before the fix, the Write refreshed only when it returned, and
// ReadFrom after each 256 KiB, longer than the timeout at this pace.
//
// Real clock and sockets, so the margins are wide enough for a loaded CI
// machine: a 64 KiB sendfile chunk takes 160ms of the reader's pace against
// a 500ms timeout (the old 256 KiB took 640ms), and the Write's reader takes
// 32 KiB every 10ms.
func TestSlowSteadyReaderNotReaped(t *testing.T) {
	t.Parallel() // real clock and sockets: it mostly waits
	cfg := Config{IdleTimeout: 500 * time.Millisecond, Resolution: 10 * time.Millisecond}
	for _, tc := range []struct {
		name         string
		size         int64
		chunk        int // the reader's pace: chunk bytes every
		every        time.Duration
		send         func(c *Conn, path string) (int64, error)
		needsRawSock bool
	}{
		{"Write", 4 << 20, 32 << 10, 10 * time.Millisecond, func(c *Conn, _ string) (int64, error) {
			n, err := c.Write(make([]byte, 4<<20))
			return int64(n), err
		}, true},
		{"ReadFrom(file)", 1 << 20, 16 << 10, 40 * time.Millisecond, func(c *Conn, path string) (int64, error) {
			f, err := os.Open(path)
			if err != nil {
				return 0, err
			}
			defer f.Close()
			return c.ReadFrom(f)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needsRawSock && !writeReportsProgress {
				t.Skip("a large Write reports progress only on Unix systems")
			}
			path := sparseFile(t, tc.size)
			l := listenTCP(t, cfg)
			server, client := tcpPair(t, l)
			server.inner.(*net.TCPConn).SetWriteBuffer(64 << 10)
			client.(*net.TCPConn).SetReadBuffer(64 << 10)
			sent := make(chan error, 1)
			go func() {
				n, err := tc.send(server, path)
				if err == nil && n != tc.size {
					err = fmt.Errorf("sent %d bytes, want %d", n, tc.size)
				}
				sent <- sentCheck(l, err)
				server.CloseWrite()
			}()
			start := time.Now()
			got, err := pacedRead(client, tc.chunk, tc.every)
			if err != nil || got != tc.size {
				t.Errorf("client read %d bytes, %v; want %d, nil", got, err, tc.size)
			}
			if took := time.Since(start); took < 2*cfg.IdleTimeout {
				t.Logf("the transfer took only %v: this run did not test much", took)
			}
			if err := <-sent; err != nil {
				t.Errorf("server: %v", err)
			}
		})
	}
}

// TestSlowWriteBoundedByWriteTimeout: a large Write to a peer that reads
// nothing makes no progress, so WriteTimeout reaps the connection and the
// blocked Write fails with an *IdleError.
func TestSlowWriteBoundedByWriteTimeout(t *testing.T) {
	cfg := Config{WriteTimeout: 100 * time.Millisecond, Resolution: 10 * time.Millisecond}
	l := listenTCP(t, cfg)
	server, _ := tcpPair(t, l)
	_, err := server.Write(make([]byte, 16<<20))
	if ie, ok := err.(*IdleError); !ok || ie.Reason != ReasonWrite {
		t.Errorf("Write to a peer that never reads: %v, want an *IdleError for the write timeout", err)
	}
}

// fakeRawConn is a syscall.RawConn whose Read and Write run the callback
// once, on fd 0.
type fakeRawConn struct{}

func (fakeRawConn) Control(f func(uintptr)) error    { f(0); return nil }
func (fakeRawConn) Read(f func(uintptr) bool) error  { f(0); return nil }
func (fakeRawConn) Write(f func(uintptr) bool) error { f(0); return nil }

// rawNopConn is a nopConn that is a syscall.Conn.
type rawNopConn struct{ nopConn }

func (rawNopConn) SyscallConn() (syscall.RawConn, error) { return fakeRawConn{}, nil }

// TestSyscallConnStamps: I/O through SyscallConn's raw connection counts
// as activity in its direction, and the raw connection has no PollFD
// method, which os.File's zero-copy paths need to reach the socket.
func TestSyscallConnStamps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		c, err := Wrap(rawNopConn{}, Config{IdleTimeout: tT, Resolution: tRes})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		rc, err := c.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := reflect.TypeOf(rc).MethodByName("PollFD"); ok {
			t.Errorf("SyscallConn's %T has PollFD: os.File's sendfile and splice would bypass tracking", rc)
		}
		time.Sleep(3 * tRes)
		rc.Read(func(uintptr) bool { return true })
		if got := c.LastRead().Sub(start); got < 2*tRes {
			t.Errorf("LastRead %v after a raw Read at %v, want within a Resolution of it", got, 3*tRes)
		}
		if got := c.LastWrite().Sub(start); got != 0 {
			t.Errorf("LastWrite %v, want 0: nothing was written", got)
		}
		time.Sleep(3 * tRes)
		rc.Write(func(uintptr) bool { return true })
		if got := c.LastWrite().Sub(start); got < 5*tRes {
			t.Errorf("LastWrite %v after a raw Write at %v, want within a Resolution of it", got, 6*tRes)
		}
	})
}

// TestLargeWriteCompletingAsReapedHasNoError: a Write that the wrapped
// connection completes while a reap is under way (the reason recorded, the
// socket not closed yet) returns len(b) and a nil error, whatever its
// size: the Write over 64 KiB on a socket turned its nil error into an
// *IdleError, unlike a small Write (and io.Writer's callers take an error
// with n == len(b) as a failed write).
func TestLargeWriteCompletingAsReapedHasNoError(t *testing.T) {
	l := listenTCP(t, Config{IdleTimeout: time.Hour})
	server, client := tcpPair(t, l)
	drained := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, client)
		drained <- err
	}()
	server.reaped.Store(uint32(ReasonIdle)) // the reap's step before the close
	for _, size := range []int{1, transferChunk + 1, 1 << 20} {
		n, err := server.Write(make([]byte, size))
		if n != size || err != nil {
			t.Errorf("Write of %d bytes = %d, %v; want %d, nil", size, n, err, size)
		}
	}
	server.CloseWrite()
	if err := <-drained; err != nil {
		t.Errorf("client: %v", err)
	}
}
