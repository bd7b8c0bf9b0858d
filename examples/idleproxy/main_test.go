package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a log sink safe for the proxy's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// echoServer accepts on 127.0.0.1 and echoes every connection until it is
// closed by the test's cleanup.
func echoServer(t *testing.T) net.Addr {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr()
}

// startProxy runs the proxy on loopback and returns its address and a
// function that stops it and returns run's error and the log.
func startProxy(t *testing.T, upstream net.Addr, idle time.Duration) (net.Addr, func() (error, string)) {
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	addrc := make(chan net.Addr, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- run(ctx, []string{"-listen", "127.0.0.1:0", "-upstream", upstream.String(), "-idle", idle.String()},
			logs, func(a net.Addr) { addrc <- a })
	}()
	select {
	case a := <-addrc:
		return a, func() (error, string) { cancel(); return <-errc, logs.String() }
	case err := <-errc:
		cancel()
		t.Fatalf("run: %v", err)
		return nil, nil
	}
}

func dial(t *testing.T, addr net.Addr) *net.TCPConn {
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second)) // a hung test fails instead of hanging
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// TestProxyEchoAndIdleClose runs the proxy on loopback: data flows both
// ways (1 MiB, through splice), a client that keeps talking survives
// several idle timeouts, and a quiet one is closed after the timeout.
//
// This runs on the real clock over real sockets, so its margins must
// exceed the scheduling delays of a loaded machine (CI runs the race
// detector over every package at once on two cores): the bulk echo goes
// through a proxy of its own with a timeout it cannot reach, and the
// chatty client talks every eighth of a 400ms timeout (a stall of the test
// longer than the timeout is told apart from a close while active).
func TestProxyEchoAndIdleClose(t *testing.T) {
	const idle = 400 * time.Millisecond
	upstream := echoServer(t)

	// Bulk echo.
	bulkAddr, stopBulk := startProxy(t, upstream, time.Minute)
	defer stopBulk()
	c := dial(t, bulkAddr)
	payload := bytes.Repeat([]byte("idleproxy "), 1<<20/10)
	go func() {
		c.Write(payload)
		c.CloseWrite()
	}()
	got, err := io.ReadAll(c)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("echo through the proxy: %d bytes, %v; want the %d sent", len(got), err, len(payload))
	}

	// A chatty client: one round trip every idle/8 for 3 timeouts, timed by
	// read deadlines on a silent connection, not sleeps. Each round trip is
	// timed: the proxy may close the chatty client only if the machine
	// stalled the test for a whole timeout between two round trips (seen
	// under -race on a loaded CI machine), which is the proxy doing its job.
	proxyAddr, stop := startProxy(t, upstream, idle)
	chatty := dial(t, proxyAddr)
	quiet := dial(t, proxyAddr)
	quiet.Write([]byte("q"))
	quiet.Read(make([]byte, 1))
	quietSince := time.Now()
	tick := dial(t, proxyAddr) // never written to: its reads only time out
	end := time.Now().Add(3 * idle)
	lastOK := time.Now()
	for time.Now().Before(end) {
		tick.SetReadDeadline(time.Now().Add(idle / 8))
		tick.Read(make([]byte, 1))
		sent := time.Now() // the proxy's last activity on chatty is later
		_, err := chatty.Write([]byte("x"))
		if err == nil {
			_, err = chatty.Read(make([]byte, 1))
		}
		if err != nil {
			gap := time.Since(lastOK) // at least the proxy's silence
			if gap < idle {
				_, logs := stop()
				t.Fatalf("chatty client: %v after %v without a round trip, under the %v timeout (closed while active); log:\n%s", err, gap, idle, logs)
			}
			t.Logf("chatty client closed after a %v stall of the test (over the %v timeout): dialing again", gap, idle)
			chatty = dial(t, proxyAddr)
			sent = time.Now()
		}
		lastOK = sent
	}

	// The quiet client was closed by the proxy, not before the timeout.
	n, err := quiet.Read(make([]byte, 1))
	if n != 0 || err != io.EOF {
		t.Errorf("quiet client: %d, %v; want EOF", n, err)
	}
	if waited := time.Since(quietSince); waited < idle {
		t.Errorf("quiet client closed after %v, before the %v timeout", waited, idle)
	}

	err, logs := stop()
	if err != nil {
		t.Errorf("run returned %v after cancel, want nil", err)
	}
	if !strings.Contains(logs, "stopped:") {
		t.Errorf("log %q, want the stop line", logs)
	}
	// Each reaped client is logged once, although both copy directions
	// fail with the idle error.
	for _, c := range []net.Conn{quiet, tick} {
		line := c.LocalAddr().String() + ": closed after " + idle.String() + " without traffic"
		if n := strings.Count(logs, line); n != 1 {
			t.Errorf("log has %q %d times, want once; log:\n%s", line, n, logs)
		}
	}
	// The chatty client is closed by the shutdown.
	chatty.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := chatty.Read(make([]byte, 1)); err == nil {
		t.Errorf("chatty client still served after shutdown")
	}
}

// TestRunFlags rejects bad command lines before listening.
func TestRunFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no upstream", []string{"-listen", "127.0.0.1:0"}, "-upstream is required"},
		{"zero idle", []string{"-upstream", "127.0.0.1:1", "-idle", "0s"}, "-idle 0s"},
		{"bad flag", []string{"-nope"}, "flag provided but not defined"},
		{"bad listen", []string{"-upstream", "127.0.0.1:1", "-listen", "256.0.0.1:0"}, "listen"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), tc.args, io.Discard, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run(%q) = %v, want an error containing %q", tc.args, err, tc.want)
			}
		})
	}
}
