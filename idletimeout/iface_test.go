package idletimeout

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// listenTCP returns a tracked TCP listener on 127.0.0.1.
func listenTCP(t *testing.T, cfg Config) *Listener {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
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

// tcpPair returns a tracked server connection and its client.
func tcpPair(t *testing.T, l *Listener) (*Conn, net.Conn) {
	t.Helper()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { client.Close() })
	c, err := l.AcceptConn()
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, client
}

// spyConn records the readers its ReadFrom is given.
type spyConn struct {
	nopConn
	mu    sync.Mutex
	srcs  []io.Reader
	total int64
	delay time.Duration // per call, to make transfers long
}

func (s *spyConn) ReadFrom(r io.Reader) (int64, error) {
	s.mu.Lock()
	s.srcs = append(s.srcs, r)
	s.mu.Unlock()
	n, err := io.Copy(io.Discard, r)
	s.total += n
	time.Sleep(s.delay)
	return n, err
}

// TestReadFromKeepsZeroCopySource: ReadFrom hands the wrapped connection's
// ReadFrom a regular file (unwrapped from an *io.LimitedReader) in 256 KiB
// *io.LimitedReader chunks, which sendfile recognizes; a socket source goes
// through Write instead.
func TestReadFromKeepsZeroCopySource(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const size = 3*transferChunk + 100
	if _, err := f.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	srcConn, err := Wrap(nopConn{}, Config{IdleTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer srcConn.Close()
	cases := []struct {
		name   string
		src    func() io.Reader
		under  any   // the reader every chunk must wrap
		want   int64 // bytes
		chunks int
	}{
		{"file", func() io.Reader { f.Seek(0, 0); return f }, f, size, 4},
		{"limited file", func() io.Reader { f.Seek(0, 0); return io.LimitReader(f, transferChunk+1) }, f, transferChunk + 1, 2},
		{"wrapped conn, limited", func() io.Reader { return io.LimitReader(srcConn, 2*transferChunk) }, nil, 2 * transferChunk, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spy := &spyConn{}
			c, err := Wrap(spy, Config{IdleTimeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			n, err := c.ReadFrom(tc.src())
			if err != nil || n != tc.want {
				t.Fatalf("ReadFrom = %d, %v; want %d, nil", n, err, tc.want)
			}
			if len(spy.srcs) != tc.chunks {
				t.Errorf("%d calls of the inner ReadFrom, want %d", len(spy.srcs), tc.chunks)
			}
			for i, r := range spy.srcs {
				lr, ok := r.(*io.LimitedReader)
				if !ok || lr.R != tc.under {
					t.Errorf("call %d got %T, want *io.LimitedReader over %T", i, r, tc.under)
				}
			}
		})
	}
}

// readConn is a net.Conn that reads from r.
type readConn struct {
	nopConn
	r io.Reader
}

func (c *readConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// TestWriteToStampsBothEnds: WriteTo copies through Read, so the source's
// read stamp and a *Conn destination's write stamp follow the data.
func TestWriteToStampsBothEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size = 2*transferChunk + 5
		inner := &readConn{r: io.MultiReader(bytes.NewReader(make([]byte, size/2)), slowReader{}, bytes.NewReader(make([]byte, size-size/2)))}
		src, err := Wrap(inner, Config{IdleTimeout: tT, Resolution: tRes})
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		spy := &spyConn{}
		dst, err := Wrap(spy, Config{IdleTimeout: tT, Resolution: tRes})
		if err != nil {
			t.Fatal(err)
		}
		defer dst.Close()
		start := time.Now()
		n, err := io.Copy(dst, src) // src.WriteTo(dst)
		if err != nil || n != size {
			t.Fatalf("io.Copy = %d, %v; want %d", n, err, size)
		}
		if len(spy.srcs) != 0 {
			t.Errorf("the destination's ReadFrom was called %d times, want 0 (data through Write)", len(spy.srcs))
		}
		if got := src.LastRead().Sub(start); got < slowReaderDelay-tRes {
			t.Errorf("source LastRead at %v, want after the slow part (%v)", got, slowReaderDelay)
		}
		if got := dst.LastWrite().Sub(start); got < slowReaderDelay-tRes {
			t.Errorf("destination LastWrite at %v, want after the slow part (%v)", got, slowReaderDelay)
		}
	})
}

// slowReader waits, then reports EOF: a pause in the middle of a stream.
type slowReader struct{}

const slowReaderDelay = 500 * time.Millisecond

func (slowReader) Read([]byte) (int, error) { time.Sleep(slowReaderDelay); return 0, io.EOF }

// TestInteractiveCopyNotReaped: a copy goroutine blocked in WriteTo on a
// connection that carries a small message every 0.6 timeouts is never
// reaped (a splice waiting for a full chunk would be); once the messages
// stop, it is reaped on time.
func TestInteractiveCopyNotReaped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		l, pl := newPipeServer(t, Config{IdleTimeout: tT, Resolution: tRes})
		defer l.Close()
		c, client := pair(t, l, pl)
		defer client.Close()
		copied := make(chan error)
		go func() {
			_, err := c.WriteTo(io.Discard)
			copied <- err
		}()
		for i := range 10 {
			time.Sleep(tT * 6 / 10)
			if _, err := client.Write([]byte("m")); err != nil {
				t.Fatalf("message %d: %v (reaped while active)", i, err)
			}
		}
		last := time.Since(start)
		err := <-copied
		if !errors.Is(err, ErrIdle) {
			t.Errorf("WriteTo ended with %v, want ErrIdle", err)
		}
		if idle := time.Since(start) - last; idle < tT || idle > tT+2*tRes {
			t.Errorf("reaped %v after the last message, want within [%v, %v]", idle, tT, tT+2*tRes)
		}
	})
}

// TestTransferRefreshesStamps: a sendfile-style transfer from a regular
// file, much longer than the timeout, keeps the connection alive, since
// the stamp is refreshed after every chunk; once it ends the connection is
// reaped on time.
func TestTransferRefreshesStamps(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "big"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const size = 16 * transferChunk
	if _, err := f.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	f.Seek(0, 0)
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		spy := &spyConn{delay: 600 * time.Millisecond}
		c, err := Wrap(spy, Config{IdleTimeout: tT, Resolution: tRes})
		if err != nil {
			t.Fatal(err)
		}
		n, err := c.ReadFrom(f)
		if err != nil || n != size {
			t.Fatalf("ReadFrom = %d, %v after %v; want %d, nil", n, err, time.Since(start), size)
		}
		if took := time.Since(start); took < 8*tT {
			t.Fatalf("transfer took %v, want a transfer longer than the timeout", took)
		}
		done := time.Since(start)
		// The last call only found EOF, after the spy's delay.
		lastData := c.LastWrite().Sub(start)
		if want := done - spy.delay; lastData > want || lastData < want-tRes {
			t.Errorf("LastWrite %v, want within %v before the last chunk's end %v", lastData, tRes, want)
		}
		ev := make(chan time.Duration)
		go func() {
			for c.state.Load() == stateTracked {
				time.Sleep(tRes / 10)
			}
			ev <- time.Since(start)
		}()
		if at := <-ev; at-lastData < tT || at-lastData > tT+3*tRes+tRes/10 {
			t.Errorf("reaped %v after the last chunk, want about %v", at-lastData, tT)
		}
	})
}

// TestTCPCopyBothWays: io.Copy between two tracked TCP connections (the
// proxy case, via WriteTo and ReadFrom) moves every byte and refreshes both.
func TestTCPCopyBothWays(t *testing.T) {
	l := listenTCP(t, Config{IdleTimeout: time.Minute})
	srcSrv, srcClient := tcpPair(t, l)
	dstSrv, dstClient := tcpPair(t, l)
	payload := bytes.Repeat([]byte("0123456789abcdef"), 3*transferChunk/16+7)
	go func() {
		srcClient.Write(payload)
		srcClient.(*net.TCPConn).CloseWrite()
	}()
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(dstClient)
		got <- b
	}()
	before := srcSrv.rstamp.Load()
	n, err := io.Copy(dstSrv, srcSrv)
	if err != nil || n != int64(len(payload)) {
		t.Fatalf("io.Copy = %d, %v; want %d", n, err, len(payload))
	}
	if err := dstSrv.CloseWrite(); err != nil {
		t.Fatalf("CloseWrite: %v", err)
	}
	if b := <-got; !bytes.Equal(b, payload) {
		t.Errorf("received %d bytes, want the %d sent", len(b), len(payload))
	}
	if srcSrv.rstamp.Load() < before || dstSrv.wstamp.Load() < before {
		t.Errorf("stamps went backwards")
	}
	// And back through ReadFrom with a *Conn source.
	go func() {
		dstClient.Write(payload[:1000])
		dstClient.(*net.TCPConn).CloseWrite()
	}()
	var buf bytes.Buffer
	if n, err := dstSrv.WriteTo(&buf); err != nil || n != 1000 {
		t.Errorf("WriteTo(bytes.Buffer) = %d, %v; want 1000", n, err)
	}
}

// TestCloseWriteCloseRead: half-closes reach TCP; a net.Pipe has none.
func TestCloseWriteCloseRead(t *testing.T) {
	l := listenTCP(t, Config{IdleTimeout: time.Minute})
	c, client := tcpPair(t, l)
	if err := c.CloseWrite(); err != nil {
		t.Fatalf("CloseWrite: %v", err)
	}
	if n, err := client.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("client Read after CloseWrite = %d, %v; want EOF", n, err)
	}
	if err := c.CloseRead(); err != nil {
		t.Errorf("CloseRead: %v", err)
	}
	a, b := net.Pipe()
	defer b.Close()
	p, err := Wrap(a, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for name, err := range map[string]error{"CloseWrite": p.CloseWrite(), "CloseRead": p.CloseRead()} {
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("%s on a pipe: %v, want ErrUnsupported", name, err)
		}
	}
	if _, err := p.SyscallConn(); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("SyscallConn on a pipe: %v, want ErrUnsupported", err)
	}
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatalf("SyscallConn on TCP: %v", err)
	}
	var fd uintptr
	if err := rc.Control(func(f uintptr) { fd = f }); err != nil || fd == 0 {
		t.Errorf("RawConn.Control: fd %d, %v", fd, err)
	}
	if c.NetConn().(*net.TCPConn) == nil || c.LocalAddr() == nil || c.RemoteAddr() == nil {
		t.Errorf("NetConn/LocalAddr/RemoteAddr not passed through")
	}
}

// TestDeadlinesPassThrough: SetDeadline and friends keep their meaning and
// are not idleness: a deadline error is not ErrIdle and the connection
// stays usable and tracked.
func TestDeadlinesPassThrough(t *testing.T) {
	l := listenTCP(t, Config{IdleTimeout: time.Minute})
	c, client := tcpPair(t, l)
	c.SetReadDeadline(time.Now().Add(-time.Second))
	_, err := c.Read(make([]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, ErrIdle) {
		t.Errorf("Read past the deadline: %v, want os.ErrDeadlineExceeded, not ErrIdle", err)
	}
	c.SetDeadline(time.Time{})
	c.SetWriteDeadline(time.Time{})
	client.Write([]byte("x"))
	if _, err := c.Read(make([]byte, 1)); err != nil {
		t.Errorf("Read after clearing the deadline: %v", err)
	}
	if st := l.Stats(); st.Open != 1 || st.Events != 0 {
		t.Errorf("Stats %+v, want 1 open, no event", st)
	}
}

// TestTCPReapsIdleKeepsActive: on loopback, active connections survive
// many timeouts and idle ones are reaped, each pending Read failing with
// ErrIdle while the client sees EOF.
func TestTCPReapsIdleKeepsActive(t *testing.T) {
	t.Parallel() // real clock and sockets: it mostly waits
	// Real sockets and a real clock: the margin between a ping interval
	// (timeout/10) and the timeout is wide enough for a loaded CI machine
	// and the race detector.
	const timeout = 300 * time.Millisecond
	l := listenTCP(t, Config{IdleTimeout: timeout, Resolution: 5 * time.Millisecond})
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		c, client := tcpPair(t, l)
		client.SetDeadline(time.Now().Add(20 * time.Second)) // a hung test fails instead of hanging
		active := i%2 == 0
		wg.Add(2)
		go func() { // server: echo until the conn fails
			defer wg.Done()
			buf := make([]byte, 8)
			for {
				m, err := c.Read(buf)
				if err != nil {
					if !active && !errors.Is(err, ErrIdle) {
						errs <- err
					}
					if active && err != io.EOF {
						errs <- errors.New("active connection: " + err.Error())
					}
					c.Close()
					return
				}
				c.Write(buf[:m])
			}
		}()
		go func() { // client
			defer wg.Done()
			if active {
				// Ping every timeout/10 for 3 timeouts, by the
				// connection's own echo: no sleeping.
				end := time.Now().Add(3 * timeout)
				for time.Now().Before(end) {
					client.SetReadDeadline(time.Now().Add(timeout / 10))
					client.Read(make([]byte, 1)) // waits up to timeout/10
					client.SetReadDeadline(time.Now().Add(20 * time.Second))
					client.Write([]byte("p"))
					if _, err := client.Read(make([]byte, 1)); err != nil {
						errs <- errors.New("active client: " + err.Error())
						return
					}
				}
				client.Close()
				return
			}
			if _, err := client.Read(make([]byte, 1)); err != io.EOF {
				errs <- errors.New("idle client: got " + errString(err) + ", want EOF")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := l.Stats(); st.ReapedIdle != n/2 || st.Open != 0 {
		t.Errorf("Stats %+v, want %d reaped, 0 open", st, n/2)
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// TestTCPNoGoroutineLeak: 2,000 loopback connections come and go; after
// Listener.Close the goroutine count is back where it started.
func TestTCPNoGoroutineLeak(t *testing.T) {
	base := runtime.NumGoroutine()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewListener(inner, Config{IdleTimeout: 20 * time.Millisecond, Resolution: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				io.Copy(c, c)
				c.Close()
			}()
		}
	}()
	for i := range 2000 {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(20 * time.Second))
		c.Write([]byte("x"))
		c.Read(make([]byte, 1))
		if i%100 == 0 {
			c.Read(make([]byte, 1)) // wait for the reap
		}
		c.Close()
	}
	l.Close()
	wg.Wait()
	if st := l.Stats(); st.Accepted != 2000 || st.Open != 0 {
		t.Errorf("Stats %+v, want 2000 accepted, 0 open", st)
	}
	// wg.Done runs just before a goroutine ends: give the ones that have
	// called it, and are exiting, a bounded moment to be gone (as goleak
	// does), so that only a real leak fails.
	for end := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > base && time.Now().Before(end); {
		runtime.Gosched()
	}
	if got := runtime.NumGoroutine(); got > base {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines, %d before:\n%s", got, base, buf[:runtime.Stack(buf, true)])
	}
}
