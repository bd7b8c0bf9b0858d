package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"time"

	"github.com/ttlkit/ttlkit/idletimeout"
)

// run parses args, listens, and proxies until ctx is done; then it closes
// the listener and every session and returns nil. ready, if not nil, is
// called with the listening address once connections are accepted.
func run(ctx context.Context, args []string, logOut io.Writer, ready func(net.Addr)) error {
	fs := flag.NewFlagSet("idleproxy", flag.ContinueOnError)
	fs.SetOutput(logOut)
	listen := fs.String("listen", "127.0.0.1:8080", "address to accept clients on")
	upstream := fs.String("upstream", "", "address to proxy to (required)")
	idle := fs.Duration("idle", 10*time.Minute, "close a client after this long with no data either way")
	dialTimeout := fs.Duration("dial-timeout", 10*time.Second, "timeout for connecting upstream")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *upstream == "" {
		return errors.New("-upstream is required")
	}
	if *idle <= 0 {
		return fmt.Errorf("-idle %v, want > 0", *idle)
	}
	logger := log.New(logOut, "idleproxy: ", log.LstdFlags)

	tcp, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	l, err := idletimeout.NewListener(tcp, idletimeout.Config{IdleTimeout: *idle})
	if err != nil {
		tcp.Close()
		return err
	}
	p := &proxy{upstream: *upstream, idle: *idle, dialer: net.Dialer{Timeout: *dialTimeout}, log: logger, conns: map[net.Conn]struct{}{}}
	logger.Printf("proxying %v to %s, idle timeout %v", l.Addr(), *upstream, *idle)
	if ready != nil {
		ready(l.Addr())
	}

	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-stopped:
		}
		l.Close()
		p.closeAll()
	}()
	for {
		c, err := l.AcceptConn()
		if err != nil {
			close(stopped)
			p.wg.Wait()
			s := l.Stats()
			logger.Printf("stopped: %d clients, %d closed idle", s.Accepted, s.ReapedIdle)
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		p.wg.Add(1)
		go p.serve(ctx, c)
	}
}

// proxy holds the sessions, so shutdown can close them.
type proxy struct {
	upstream string
	idle     time.Duration
	dialer   net.Dialer
	log      *log.Logger
	wg       sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // open client and upstream connections
	closed bool
}

// add registers c for closeAll; it reports false after closeAll.
func (p *proxy) add(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *proxy) remove(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *proxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
}

// serve proxies one client until both directions end, either side fails,
// or the client is reaped for idleness.
func (p *proxy) serve(ctx context.Context, client *idletimeout.Conn) {
	defer p.wg.Done()
	if !p.add(client) {
		client.Close()
		return
	}
	defer p.remove(client)
	up, err := p.dialer.DialContext(ctx, "tcp", p.upstream)
	if err != nil {
		p.log.Printf("%v: dial upstream: %v", client.RemoteAddr(), err)
		return
	}
	if !p.add(up) {
		up.Close()
		return
	}
	defer p.remove(up)

	type result struct {
		dir string
		n   int64
		err error
	}
	done := make(chan result, 2)
	go func() {
		n, err := client.WriteTo(up) // client -> upstream
		done <- result{"to upstream", n, err}
	}()
	go func() {
		n, err := client.ReadFrom(up) // upstream -> client
		done <- result{"to client", n, err}
	}()
	reaped := false // both directions fail with the idle error: log it once
	for range 2 {
		r := <-done
		if r.err != nil {
			if errors.Is(r.err, idletimeout.ErrIdle) && !reaped {
				reaped = true
				p.log.Printf("%v: closed after %v without traffic", client.RemoteAddr(), p.idle)
			}
			// Unblock the other direction.
			client.Close()
			up.Close()
			continue
		}
		// Clean EOF: pass the half-close on.
		if r.dir == "to upstream" {
			closeWrite(up)
		} else {
			client.CloseWrite()
		}
	}
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}
