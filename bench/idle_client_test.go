package bench

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// Echo clients for the idletimeout benchmarks: many connections driven by a
// few goroutines, so that the server (not a goroutine per client) decides
// the cost per message.

// echoMsgSize is the size of one message, each way.
const echoMsgSize = 64

// fdSlack is how many descriptors beyond one per connection a process keeps
// for itself (listener, netpoller, pipes, the test binary's files).
const fdSlack = 256

// dialAll opens n connections to addr from dialers goroutines. On error it
// closes what it opened.
func dialAll(addr string, n, dialers int) ([]net.Conn, error) {
	conns := make([]net.Conn, n)
	errs := make([]error, dialers)
	var wg sync.WaitGroup
	for d := range dialers {
		wg.Go(func() {
			for i := d; i < n; i += dialers {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					errs[d] = fmt.Errorf("dial %d of %d: %w", i+1, n, err)
					return
				}
				conns[i] = c
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		closeAll(conns)
		return nil, err
	}
	return conns, nil
}

// closeAll closes every non-nil connection.
func closeAll(conns []net.Conn) {
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}

// echoClients sends messages over a set of connections: client goroutine g
// owns the connections whose index is g modulo the number of clients and
// visits them round-robin, depth at a time: it writes one message to each
// of the next depth connections, then reads the depth echoes. Each
// connection has at most one message in flight.
type echoClients struct {
	groups [][]net.Conn
	cursor []int // per client: next connection in its group
	depth  int
	verify bool     // check every echo's bytes (tests); costs client CPU
	seq    []uint64 // per client: messages sent, for verify
}

// newEchoClients spreads conns over clients goroutines (at most one per
// connection) with the given depth (at least 1).
func newEchoClients(conns []net.Conn, clients, depth int, verify bool) *echoClients {
	clients = max(min(clients, len(conns)), 1)
	e := &echoClients{groups: make([][]net.Conn, clients), cursor: make([]int, clients),
		depth: max(depth, 1), verify: verify, seq: make([]uint64, clients)}
	for i, c := range conns {
		e.groups[i%clients] = append(e.groups[i%clients], c)
	}
	return e
}

// run sends msgs messages in all and returns once every echo has arrived.
func (e *echoClients) run(msgs int) error {
	errs := make([]error, len(e.groups))
	var wg sync.WaitGroup
	per, extra := msgs/len(e.groups), msgs%len(e.groups)
	for g := range e.groups {
		quota := per
		if g < extra {
			quota++
		}
		if quota == 0 {
			continue
		}
		wg.Go(func() { errs[g] = e.runClient(g, quota) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// runClient is one client goroutine sending quota messages.
func (e *echoClients) runClient(g, quota int) error {
	conns := e.groups[g]
	cur := e.cursor[g]
	defer func() { e.cursor[g] = cur }()
	batch := min(e.depth, len(conns))
	msgs := make([][echoMsgSize]byte, batch)
	var got [echoMsgSize]byte
	for quota > 0 {
		k := min(batch, quota)
		for i := range k {
			if e.verify {
				e.seq[g]++
				binary.LittleEndian.PutUint64(msgs[i][:], uint64(g)<<48|e.seq[g])
				binary.LittleEndian.PutUint64(msgs[i][8:], uint64((cur+i)%len(conns)))
			}
			if _, err := conns[(cur+i)%len(conns)].Write(msgs[i][:]); err != nil {
				return fmt.Errorf("client %d: write: %w", g, err)
			}
		}
		for i := range k {
			if _, err := io.ReadFull(conns[(cur+i)%len(conns)], got[:]); err != nil {
				return fmt.Errorf("client %d: read echo: %w", g, err)
			}
			if e.verify && !bytes.Equal(got[:], msgs[i][:]) {
				return fmt.Errorf("client %d: echo %x, want %x", g, got[:16], msgs[i][:16])
			}
		}
		cur = (cur + k) % len(conns)
		quota -= k
	}
	return nil
}
