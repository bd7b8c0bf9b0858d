//go:build linux

package idletimeout

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// plainTCPPair returns both ends of an untracked loopback TCP connection.
func plainTCPPair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a.(*net.TCPConn), b.(*net.TCPConn)
}

// TestSpliceKeepsInteractiveStreamAlive: a proxy-style io.Copy from a
// tracked connection into a TCP socket runs as splices, and a client that
// trickles data for longer than the idle timeout is not reaped, because
// each splice, sized to what has arrived, refreshes the connection.
func TestSpliceKeepsInteractiveStreamAlive(t *testing.T) {
	for _, dir := range []string{"WriteTo", "ReadFrom"} {
		t.Run(dir, func(t *testing.T) {
			// Real sockets and clock: the gap between messages (timeout/10)
			// leaves room for a loaded machine.
			const timeout = 500 * time.Millisecond
			l := listenTCP(t, Config{IdleTimeout: timeout, Resolution: 10 * time.Millisecond})
			server, client := tcpPair(t, l)
			upIn, upOut := plainTCPPair(t)
			before := splices.Load()
			copied := make(chan error, 1)
			go func() {
				var err error
				if dir == "WriteTo" {
					_, err = server.WriteTo(upIn) // tracked source, TCP destination
				} else {
					var up *Conn
					up, err = l.Wrap(upIn)
					if err == nil {
						_, err = up.ReadFrom(server) // tracked destination and source
					}
				}
				upIn.CloseWrite()
				copied <- err
			}()
			var want bytes.Buffer
			for i := range 12 { // 12 x timeout/10 > timeout
				msg := []byte{byte('a' + i)}
				want.Write(msg)
				if _, err := client.Write(msg); err != nil {
					t.Fatalf("client write %d: %v", i, err)
				}
				time.Sleep(timeout / 10) // the client's pace, part of the scenario
			}
			client.(*net.TCPConn).CloseWrite()
			upOut.SetReadDeadline(time.Now().Add(20 * time.Second))
			got, err := io.ReadAll(upOut)
			if err != nil {
				t.Fatalf("read upstream: %v", err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Errorf("upstream got %q, want %q", got, want.Bytes())
			}
			if err := <-copied; err != nil {
				t.Errorf("%s: %v", dir, err)
			}
			if st := l.Stats(); st.ReapedIdle != 0 {
				t.Errorf("an active connection was reaped: %+v", st)
			}
			if n := splices.Load() - before; n == 0 {
				t.Error("no splice was made: the copy fell back to Read and Write")
			}
		})
	}
}

// TestSpliceBulkAndLimit: a large transfer and an io.LimitedReader source
// arrive intact through the splice path.
func TestSpliceBulkAndLimit(t *testing.T) {
	l := listenTCP(t, Config{IdleTimeout: time.Minute})
	server, client := tcpPair(t, l)
	upIn, upOut := plainTCPPair(t)
	up, err := l.Wrap(upIn)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	go func() {
		client.Write(data)
		client.Close()
	}()
	const limit = 700_000
	n, err := up.ReadFrom(io.LimitReader(server, limit))
	if err != nil || n != limit {
		t.Fatalf("ReadFrom(LimitReader) = %d, %v; want %d, nil", n, err, limit)
	}
	rest, err := up.ReadFrom(server)
	if err != nil || n+rest != int64(len(data)) {
		t.Fatalf("ReadFrom(rest) = %d, %v; want %d, nil", rest, err, len(data)-limit)
	}
	upIn.CloseWrite()
	got, err := io.ReadAll(upOut)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("upstream got %d bytes, want the %d sent, intact", len(got), len(data))
	}
}
