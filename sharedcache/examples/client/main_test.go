package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/ttlkit/ttlkit/sharedcache"
	"github.com/ttlkit/ttlkit/sharedcache/embedded"
)

// TestRun: the client, given the URL of a server another instance runs,
// writes, reads back and loads.
func TestRun(t *testing.T) {
	srv, err := sharedcache.NATS(sharedcache.NATSConfig{Server: embedded.Server{Listen: "127.0.0.1:0", StoreDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var out bytes.Buffer
	if err := run(context.Background(), srv.ClientURL(), &out); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "greeting=hello answer=42\n"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}
