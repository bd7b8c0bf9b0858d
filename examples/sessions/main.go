// Command sessions serves session tokens that expire unless they are used:
// the refresh pattern, on top of cache.Cache.
//
// POST /login with a form value user issues a token, stored in a cache with
// a TTL. GET /whoami with the header "Authorization: Bearer TOKEN" answers
// who holds the token and, with Cache.Touch, pushes its deadline one TTL
// later. A session that sees no request for a whole TTL is gone.
//
// Without flags, the command runs a narrated demo against its own server on
// 127.0.0.1: two users log in, one keeps making requests, the other goes
// idle and is logged out. With -serve it only serves, for curl:
//
//	go run ./examples/sessions
//	go run ./examples/sessions -serve 127.0.0.1:8080 -ttl 1m
//	curl -d user=ada localhost:8080/login
//	curl -H "Authorization: Bearer TOKEN" localhost:8080/whoami
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"
)

func main() {
	serve := flag.String("serve", "", "serve the API on this address until interrupted, instead of the demo")
	ttl := flag.Duration("ttl", time.Minute, "with -serve: how long a session lives without requests")
	flag.Parse()

	if *serve != "" {
		if err := serveUntilInterrupted(*serve, *ttl); err != nil {
			log.Fatal(err)
		}
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	if err := run(os.Stdout, ln, &http.Client{Timeout: 5 * time.Second}); err != nil {
		fmt.Fprintln(os.Stderr, "sessions:", err)
		os.Exit(1)
	}
}

// serveUntilInterrupted serves the session API on addr until SIGINT.
func serveUntilInterrupted(addr string, ttl time.Duration) error {
	s, err := newSessions(ttl)
	if err != nil {
		return err
	}
	defer s.Close()
	srv := &http.Server{Addr: addr, Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	log.Printf("serving sessions on http://%s, TTL %v", addr, ttl)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
