package embedded

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/ttlkit/ttlkit/sharedcache/internal/opterr"
)

// TestStartServer: without StoreDir the server keeps its data in a
// temporary directory that stop removes; without Listen it has no URL,
// with Listen port 0 it has one; the options connect in memory.
func TestStartServer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       Server
		wantURL bool
	}{
		{"in-process", Server{}, false},
		{"listening", Server{Listen: "127.0.0.1:0"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := filepath.Glob(filepath.Join(os.TempDir(), "sharedcache-*"))
			opts, url, stop, err := tc.s.StartServer()
			if err != nil {
				t.Fatal(err)
			}
			if (url != "") != tc.wantURL {
				t.Errorf("url %q, want one: %v", url, tc.wantURL)
			}
			nc, err := nats.Connect("nats://in-process", opts...)
			if err != nil {
				t.Fatalf("connect in memory: %v", err)
			}
			nc.Close()
			stop()
			after, _ := filepath.Glob(filepath.Join(os.TempDir(), "sharedcache-*"))
			if len(after) > len(before) {
				t.Errorf("temporary directories %v after stop, %v before", after, before)
			}
		})
	}
}

// TestStartServerBadListen: a Listen that is no host:port fails with an
// error wrapping sharedcache.ErrOptions and leaves no directory behind.
func TestStartServerBadListen(t *testing.T) {
	dir := t.TempDir()
	_, _, _, err := Server{Listen: "no-port", StoreDir: dir}.StartServer()
	if !errors.Is(err, opterr.ErrOptions) {
		t.Errorf("StartServer with Listen %q: %v, want ErrOptions", "no-port", err)
	}
}
