// Command idleproxy is a TCP proxy that closes client connections after a
// period with no traffic in either direction, like nginx's stream
// proxy_timeout:
//
//	idleproxy -listen 127.0.0.1:8080 -upstream 127.0.0.1:6379 -idle 10m
//
// Idleness is tracked by idletimeout on the client side, where every byte
// of the session passes through a tracked Read or Write. When a client
// connection is reaped, its upstream connection is closed too. SIGINT or SIGTERM closes the listener and every session.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "idleproxy:", err)
		os.Exit(2)
	}
}
