package embedded

import (
	"errors"
	"testing"
)

// Listen on anything but loopback needs credentials, or InsecureNoAuth.
func TestListenNeedsAuth(t *testing.T) {
	for _, tc := range []struct {
		name, listen string
		token        string
		insecure     bool
		ok           bool
	}{
		{"loopback v4", "127.0.0.1:0", "", false, true},
		{"localhost", "localhost:0", "", false, true},
		{"loopback v6", "[::1]:0", "", false, true},
		{"all interfaces", ":0", "", false, false},
		{"unspecified v4", "0.0.0.0:0", "", false, false},
		{"unspecified v6", "[::]:0", "", false, false},
		{"an address", "192.0.2.7:4222", "", false, false},
		{"a host name", "jobs.example.com:4222", "", false, false},
		{"with a token", "0.0.0.0:0", "s3cret", false, true},
		{"opted out", "0.0.0.0:0", "", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Server{Ephemeral: true, Listen: tc.listen, Token: tc.token, InsecureNoAuth: tc.insecure}
			err := s.validate()
			if tc.ok && err != nil || !tc.ok && !errors.Is(err, ErrInvalid) {
				t.Errorf("validate(Listen %q) = %v, want ok %v", tc.listen, err, tc.ok)
			}
		})
	}
}

// A server that fails to start leaves nothing behind: its store
// directory is unlocked, so that the next start succeeds.
func TestFailedStartUnlocks(t *testing.T) {
	dir := t.TempDir()
	_, _, stop, err := Server{StoreDir: dir}.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	// A second server on the locked store fails, without touching it.
	if _, _, _, err := (Server{StoreDir: dir}).StartServer(); err == nil {
		t.Fatal("second StartServer on a locked store succeeded")
	}
	stop()
	// A bad port fails after the lock was taken: it must be released.
	if _, _, _, err := (Server{StoreDir: dir, Listen: "127.0.0.1:x"}).StartServer(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("StartServer(Listen 127.0.0.1:x) = %v, want ErrInvalid", err)
	}
	_, _, stop, err = Server{StoreDir: dir}.StartServer()
	if err != nil {
		t.Fatalf("StartServer after failed starts: %v", err)
	}
	stop()
}
