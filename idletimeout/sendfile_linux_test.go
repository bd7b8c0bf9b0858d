//go:build linux

package idletimeout

import (
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// TestReadFromFileSlowReaderNotReaped pins issue 20 item 0: a file sent
// with Conn.ReadFrom (sendfile) to a slow but steady reader was reaped
// while bytes flowed, because the stamp moved only when a 64 KiB sendfile
// call returned, and one call could outlast the timeout while the kernel
// took its bytes piece by piece. Small socket buffers on both sides (16
// KiB, as in the report) make the sender wait on the reader. Now every
// sendfile system call that moves a byte stamps. The reader here takes 4
// KiB every 12ms (the report's 8 KiB failed in 4 of 6 runs; at this pace
// every run failed before the fix, in its first 100 KiB).
//
// Real sockets and clock (sendfile needs them). The reader's pace is the
// workload, not synchronization. Its longest wait for bytes is measured
// (about 245ms here: loopback TCP with a 16 KiB receive buffer stalls once
// at the start); a run in which the reader itself waited a whole timeout
// (a machine that loaded) proves nothing and is skipped, not passed.
func TestReadFromFileSlowReaderNotReaped(t *testing.T) {
	const (
		timeout = 300 * time.Millisecond
		size    = 512 << 10
		chunk   = 4 << 10 // the reader's pace: chunk bytes every
		every   = 12 * time.Millisecond
	)
	for run := range 2 {
		l := listenTCP(t, Config{IdleTimeout: timeout, Resolution: 10 * time.Millisecond})
		server, client := tcpPair(t, l)
		server.inner.(*net.TCPConn).SetWriteBuffer(16 << 10)
		client.(*net.TCPConn).SetReadBuffer(16 << 10)
		path := sparseFile(t, size)
		sent := make(chan error, 1)
		go func() {
			f, err := os.Open(path)
			if err != nil {
				sent <- err
				return
			}
			defer f.Close()
			n, err := server.ReadFrom(f)
			if err == nil && n != size {
				err = fmt.Errorf("sent %d bytes, want %d", n, size)
			}
			sent <- sentCheck(l, err) // once sent, a reap is no loss
			server.CloseWrite()
		}()
		stall := watchStalls()
		got, gap, err := pacedReadGap(client, chunk, every)
		serr := <-sent
		stalled := stall()
		if gap >= timeout && (serr != nil || err != nil) {
			t.Skipf("run %d: the reader itself waited %v for bytes against a %v timeout: the machine is too loaded for this run to tell", run, gap, timeout)
		}
		// The start's stall (about 240ms) leaves the sender about 60ms
		// of the timeout, and the sockets' buffers (16 KiB each way)
		// hold about 100ms of the reader's pace: a sender kept off the
		// processor a fifth of the timeout can be idle a whole timeout
		// while the reader never waits that long (CI once reaped one whose
		// reader had waited 176ms). Reaped then, it was idle, not
		// misjudged. An unloaded run stalls under 10ms.
		if stalled >= timeout/5 && (serr != nil || err != nil) {
			t.Skipf("run %d: this process was off the processor for %v against a %v timeout: the machine is too loaded for this run to tell", run, stalled, timeout)
		}
		if serr != nil {
			t.Fatalf("run %d: server ReadFrom: %v (after the client read %d bytes; its longest wait %v, the timeout %v)", run, serr, got, gap, timeout)
		}
		if err != nil || got != size {
			t.Fatalf("run %d: client read %d bytes, %v; want %d, nil", run, got, err, size)
		}
		t.Logf("run %d: the reader's longest wait for bytes %v; this process's longest stall %v", run, gap, stalled)
	}
}

// pacedReadGap is pacedRead that also returns the longest time between two
// reads that returned bytes.
func pacedReadGap(r io.Reader, chunk int, every time.Duration) (total int64, gap time.Duration, err error) {
	buf := make([]byte, chunk)
	last := time.Now()
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			now := time.Now()
			gap = max(gap, now.Sub(last))
			last = now
		}
		total += int64(n)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return total, gap, nil
		}
		if err != nil {
			return total, gap, err
		}
		time.Sleep(every)
	}
}

// TestReadFromFileLimitedOverSocket: ReadFrom of an *io.LimitedReader over
// a file, into a TCP socket, sends exactly N bytes from the file's offset,
// leaves N at 0 and the file's offset after them, then the rest follows.
func TestReadFromFileLimitedOverSocket(t *testing.T) {
	l := listenTCP(t, Config{IdleTimeout: time.Minute})
	server, client := tcpPair(t, l)
	data := make([]byte, 300_000)
	for i := range data {
		data[i] = byte(i % 251)
	}
	path := sparseFile(t, 0)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(client)
		got <- b
	}()
	lr := &io.LimitedReader{R: f, N: 100_001}
	if n, err := server.ReadFrom(lr); n != 100_001 || err != nil || lr.N != 0 {
		t.Fatalf("ReadFrom(limited) = %d, %v, N left %d; want 100001, nil, 0", n, err, lr.N)
	}
	if n, err := server.ReadFrom(f); n != int64(len(data))-100_001 || err != nil {
		t.Fatalf("ReadFrom(rest) = %d, %v; want %d, nil", n, err, len(data)-100_001)
	}
	server.CloseWrite()
	if b := <-got; string(b) != string(data) {
		t.Errorf("client got %d bytes, want the %d sent, intact", len(b), len(data))
	}
}

// watchStalls starts measuring how long this process goes without running
// a goroutine that wakes every millisecond (a loaded machine, or a long
// collection pause); the returned function stops it and returns the
// longest wake-up beyond the millisecond.
func watchStalls() (stop func() time.Duration) {
	done := make(chan time.Duration)
	quit := make(chan struct{})
	go func() {
		var worst time.Duration
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		last := time.Now()
		for {
			select {
			case <-quit:
				done <- worst
				return
			case <-tk.C:
				now := time.Now()
				worst = max(worst, now.Sub(last)-time.Millisecond)
				last = now
			}
		}
	}()
	return func() time.Duration {
		close(quit)
		return <-done
	}
}
