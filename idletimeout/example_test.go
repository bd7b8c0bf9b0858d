package idletimeout_test

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/ttlkit/ttlkit/idletimeout"
)

// A client connection wrapped with a read timeout: the Read pending when
// the peer goes quiet fails with ErrIdle, a net.Error timeout.
func ExampleWrap() {
	local, remote := net.Pipe()
	defer remote.Close()
	c, err := idletimeout.Wrap(local, idletimeout.Config{
		ReadTimeout: 50 * time.Millisecond,
		Resolution:  5 * time.Millisecond,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	go remote.Write([]byte("hello"))
	buf := make([]byte, 5)
	n, _ := c.Read(buf)
	fmt.Printf("read %q\n", buf[:n])

	start := time.Now()
	_, err = c.Read(buf) // the peer says nothing more
	var ne net.Error
	fmt.Println("idle:", errors.Is(err, idletimeout.ErrIdle))
	fmt.Println("timeout:", errors.As(err, &ne) && ne.Timeout())
	fmt.Println("not early:", time.Since(start) >= 50*time.Millisecond)
	// Output:
	// read "hello"
	// idle: true
	// timeout: true
	// not early: true
}

// OnIdle sees each expired timeout; Keep leaves the connection open and
// reports again after every further timeout, like Netty's
// IdleStateHandler.
func ExampleConfig_onIdle() {
	local, remote := net.Pipe()
	defer remote.Close()
	events := make(chan idletimeout.Event)
	c, err := idletimeout.Wrap(local, idletimeout.Config{
		WriteTimeout: 20 * time.Millisecond,
		Resolution:   2 * time.Millisecond,
		OnIdle: func(e idletimeout.Event) idletimeout.Action {
			events <- e
			if e.Count < 3 {
				return idletimeout.Keep // e.g. send a heartbeat instead
			}
			return idletimeout.Close
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 3 {
		e := <-events
		fmt.Printf("%s timeout #%d, idle at least %v: %v\n", e.Reason, e.Count,
			time.Duration(e.Count)*20*time.Millisecond, e.Idle >= time.Duration(e.Count)*20*time.Millisecond)
	}
	_, err = c.Read(make([]byte, 1))
	fmt.Println(errors.Is(err, idletimeout.ErrIdle))
	// Output:
	// write timeout #1, idle at least 20ms: true
	// write timeout #2, idle at least 40ms: true
	// write timeout #3, idle at least 60ms: true
	// true
}

// An HTTPS server whose keep-alive connections are reaped after a minute
// of idleness, while requests, however slow, are never cut: the idle
// Listener goes under the TLS one, and ConnState pauses tracking while a
// request is active.
func ExampleConnState() {
	serve := func(h http.Handler, tlsConfig *tls.Config) error {
		tcp, err := net.Listen("tcp", "127.0.0.1:8443")
		if err != nil {
			return err
		}
		idle, err := idletimeout.NewListener(tcp, idletimeout.Config{IdleTimeout: time.Minute})
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: h, ConnState: idletimeout.ConnState}
		return srv.Serve(tls.NewListener(idle, tlsConfig))
	}
	_ = serve
}

// Stats counts what a Listener did.
func ExampleListener_Stats() {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	l, err := idletimeout.NewListener(inner, idletimeout.Config{IdleTimeout: 30 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	c, err := l.Accept()
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = c.Read(make([]byte, 1)) // the client never writes
	fmt.Println(errors.Is(err, idletimeout.ErrIdle))
	s := l.Stats()
	fmt.Printf("accepted %d, open %d, reaped for idleness %d\n", s.Accepted, s.Open, s.ReapedIdle)
	// Output:
	// true
	// accepted 1, open 0, reaped for idleness 1
}
