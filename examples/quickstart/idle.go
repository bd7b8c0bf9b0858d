package main

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/ttlkit/ttlkit/idletimeout"
)

// tourIdle serves two in-memory connections, one that a client writes to
// every 30ms and one that stays silent, and reports how each one ends.
//
// A server would wrap its listener instead, with idletimeout.NewListener;
// here Wrap tracks each server side of a net.Pipe with the same Config.
func tourIdle(n *narrator) error {
	cfg := idletimeout.Config{IdleTimeout: 100 * time.Millisecond, Resolution: step}

	type ending struct {
		name  string
		reads int
		err   error
	}
	endings := make(chan ending, 2)
	// serve reads from c until it fails, then closes it and reports how it
	// ended.
	serve := func(name string, c net.Conn) {
		buf := make([]byte, 64)
		reads := 0
		for {
			if _, err := c.Read(buf); err != nil {
				c.Close()
				endings <- ending{name, reads, err}
				return
			}
			reads++
		}
	}
	var clients []net.Conn
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for _, name := range []string{"chatty", "quiet"} {
		client, server := net.Pipe()
		clients = append(clients, client)
		c, err := idletimeout.Wrap(server, cfg)
		if err != nil {
			server.Close()
			return err
		}
		go serve(name, c)
	}
	n.say("open   chatty, quiet; chatty's client writes every 30ms")

	// The chatty client writes every 30ms, six times.
	chatty := clients[0]
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		tick := time.NewTicker(30 * time.Millisecond)
		defer tick.Stop()
		for range 6 {
			<-tick.C
			if _, err := chatty.Write([]byte("ping")); err != nil {
				return
			}
		}
	}()

	e := <-endings
	if !errors.Is(e.err, idletimeout.ErrIdle) {
		return fmt.Errorf("%s: %w, want an idle timeout", e.name, e.err)
	}
	n.say("%-6s closed after %d reads: %v", e.name, e.reads, e.err)

	<-wrote
	n.at(200 * time.Millisecond)
	n.say("chatty's client hangs up")
	chatty.Close()
	e = <-endings
	n.say("%-6s closed after %d reads: %v", e.name, e.reads, e.err)
	return nil
}
