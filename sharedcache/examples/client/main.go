// Command client is an instance of a service that shares a cache through
// a NATS server it connects to by URL, as most instances do: it links no
// nats-server (TestURLClientLinksNoServer in package sharedcache checks).
// It sets a key, then reads it and a key its loader provides.
//
//	go run ./examples/client -url nats://10.0.0.5:4222
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/ttlkit/ttlkit/sharedcache"
)

func main() {
	url := flag.String("url", "nats://127.0.0.1:4222", "NATS server with JetStream")
	flag.Parse()
	if err := run(context.Background(), *url, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run sets "greeting", reads it back, and takes "answer" through a loader.
func run(ctx context.Context, url string, out io.Writer) error {
	store, err := sharedcache.NATS(sharedcache.NATSConfig{URL: url})
	if err != nil {
		return err
	}
	defer store.Close()
	c, err := sharedcache.New[string](ctx, store, sharedcache.Options[string]{TTL: time.Minute})
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Set(ctx, "greeting", "hello"); err != nil {
		return err
	}
	g, err := c.Get(ctx, "greeting")
	if err != nil {
		return err
	}
	a, err := c.Take(ctx, "answer", func(context.Context) (string, error) { return "42", nil })
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "greeting=%s answer=%s\n", g, a)
	return nil
}
