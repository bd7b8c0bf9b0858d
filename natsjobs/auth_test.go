package natsjobs

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
)

func userSeed(t *testing.T) string {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, err := kp.Seed()
	if err != nil {
		t.Fatal(err)
	}
	return string(seed)
}

// Listen on anything but loopback needs credentials, or InsecureNoAuth
// (every case: embedded's TestListenNeedsAuth): Open refuses it with
// ErrInvalid, and opens with a token or opted out.
func TestListenNeedsAuth(t *testing.T) {
	_, err := Open(context.Background(), Config{Server: embedded.Server{Ephemeral: true, Listen: "0.0.0.0:0"}, Queues: []string{"q"}})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "not loopback") {
		t.Errorf("Open(Listen 0.0.0.0:0) = %v, want ErrInvalid saying not loopback", err)
	}
	for _, s := range []embedded.Server{{Listen: "0.0.0.0:0", Token: "s3cret"}, {Listen: "0.0.0.0:0", InsecureNoAuth: true}} {
		if c := open(t, Config{Server: s}); c.URL() == "" {
			t.Errorf("URL empty with Listen")
		}
	}
}

func TestConfigAuthInvalid(t *testing.T) {
	cert := selfSigned(t)
	acct, _ := nkeys.CreateAccount()
	acctSeed, _ := acct.Seed()
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"two kinds", Config{URL: "nats://127.0.0.1:4222", Token: "a", User: "u", Password: "p"}},
		{"user without password", Config{URL: "nats://127.0.0.1:4222", User: "u"}},
		{"password without user", Config{URL: "nats://127.0.0.1:4222", Password: "p"}},
		{"bad seed", Config{URL: "nats://127.0.0.1:4222", NKeySeed: "SUnotaseed"}},
		{"account seed", Config{URL: "nats://127.0.0.1:4222", NKeySeed: string(acctSeed)}},
		{"server: two kinds", Config{Server: embedded.Server{Token: "a", User: "u", Password: "p"}}},
		{"server: user without password", Config{Server: embedded.Server{User: "u"}}},
		{"server: bad seed", Config{Server: embedded.Server{NKeySeed: "SUnotaseed"}}},
		{"server: account seed", Config{Server: embedded.Server{NKeySeed: string(acctSeed)}}},
		{"server: TLS without Listen", Config{Server: embedded.Server{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}}}},
		{"server: TLS without a certificate", Config{Server: embedded.Server{Listen: "127.0.0.1:0", TLS: &tls.Config{}}}},
		{"server: InsecureNoAuth without Listen", Config{Server: embedded.Server{InsecureNoAuth: true}}},
		{"server: bad Listen", Config{Server: embedded.Server{Listen: "127.0.0.1"}}},
		{"server with client TLS", Config{Server: embedded.Server{}, TLS: &tls.Config{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Queues = []string{"q"}
			if s, ok := cfg.Server.(embedded.Server); ok {
				s.Ephemeral = true
				cfg.Server = s
			}
			if c, err := Open(context.Background(), cfg); !errors.Is(err, ErrInvalid) {
				if err == nil {
					c.Close()
				}
				t.Errorf("Open = %v, want ErrInvalid", err)
			}
		})
	}
}

// storedCount is the number of jobs in the queue's work stream (its
// messages less the head marker).
func storedCount(t *testing.T, c *Client) uint64 {
	t.Helper()
	s, err := c.js.Stream(context.Background(), workStream("q"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	other, err := c.tombstones(context.Background(), "q")
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs - uint64(other)
}

// rawPublish speaks the client protocol to addr: CONNECT with the given
// fields, then at once a publish of a job to the queue's ready subject with
// a reply subject it subscribed to. It returns the server's first answer
// after its INFO that is an error or a message: "-ERR ..." when the
// connection is refused, the stream's publish ack (a JSON object) when the
// job was stored. The ack, not a PONG, is the proof of storage: JetStream
// stores a core publish asynchronously, after the PONG may have been sent.
func rawPublish(t *testing.T, addr, connect string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "INFO ") {
		t.Fatalf("server said %q, %v; want INFO", line, err)
	}
	fmt.Fprintf(conn, "CONNECT {%s\"verbose\":false,\"pedantic\":false,\"headers\":true,\"protocol\":1}\r\n"+
		"SUB rawack 1\r\nPUB natsjobs.q.r.intruder rawack 5\r\nhello\r\n", connect)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return strings.TrimSpace(line) + " (" + err.Error() + ")"
		}
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "MSG "): // MSG rawack 1 <size>
			var size int
			if _, err := fmt.Sscanf(line[strings.LastIndexByte(line, ' ')+1:], "%d", &size); err != nil {
				t.Fatalf("server said %q: %v", line, err)
			}
			payload := make([]byte, size+2)
			if _, err := io.ReadFull(r, payload); err != nil {
				t.Fatalf("reading the ack: %v", err)
			}
			return strings.TrimSpace(string(payload))
		case strings.HasPrefix(line, "PING"):
			fmt.Fprintf(conn, "PONG\r\n")
		case line == "+OK" || line == "PONG":
		default:
			return line
		}
	}
}

// A client without credentials, or with wrong ones, is refused, and
// nothing it sent is stored; with the right ones it works. For each kind
// of credential, through Open and through the raw protocol (a CONNECT
// followed at once by a publish to a job subject).
func TestAuthRefused(t *testing.T) {
	seed, otherSeed := userSeed(t), userSeed(t)
	for _, tc := range []struct {
		kind     string
		server   embedded.Server
		wrong    Config
		rawRight string // CONNECT fields with the right credentials, "" if none can be written
		rawWrong string
	}{
		{"token", embedded.Server{Token: "s3cret"}, Config{Token: "guess"}, `"auth_token":"s3cret",`, `"auth_token":"guess",`},
		{"user", embedded.Server{User: "app", Password: "pw"}, Config{User: "app", Password: "wrong"}, `"user":"app","pass":"pw",`, `"user":"app","pass":"wrong",`},
		{"nkey", embedded.Server{NKeySeed: seed}, Config{NKeySeed: otherSeed}, "", `"nkey":"UAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","sig":"AAAA",`},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			srv := tc.server
			srv.Listen = "127.0.0.1:0"
			c := open(t, Config{Server: srv})
			if err := c.Enqueue(context.Background(), Job{Queue: "q", ID: "own"}); err != nil {
				t.Fatalf("own in-memory connection: %v", err)
			}
			url := c.URL()
			addr := strings.TrimPrefix(url, "nats://")
			right := Config{Token: tc.server.Token, User: tc.server.User, Password: tc.server.Password, NKeySeed: tc.server.NKeySeed}
			for name, client := range map[string]Config{"no credentials": {}, "wrong": tc.wrong} {
				client.URL, client.Queues = url, []string{"q"}
				if cl, err := Open(context.Background(), client); err == nil {
					cl.Close()
					t.Errorf("Open with %s credentials succeeded, want refused", name)
				} else if !strings.Contains(strings.ToLower(err.Error()), "authorization") {
					t.Errorf("Open with %s credentials: %v, want an authorization error", name, err)
				}
			}
			for _, connect := range []string{"", tc.rawWrong} {
				if got := rawPublish(t, addr, connect); !strings.Contains(got, "Authorization Violation") {
					t.Errorf("raw CONNECT {%s}: server said %q, want -ERR 'Authorization Violation'", connect, got)
				}
			}
			if n := storedCount(t, c); n != 1 {
				t.Errorf("%d messages stored after refused clients, want 1 (our own)", n)
			}
			if tc.rawRight != "" { // the control: the same bytes with the right credentials are stored
				if got := rawPublish(t, addr, tc.rawRight); !strings.HasPrefix(got, `{"stream":`) || strings.Contains(got, `"error"`) {
					t.Errorf("raw CONNECT with the right credentials: server said %q, want a stream's publish ack", got)
				}
				if n := storedCount(t, c); n != 2 {
					t.Errorf("%d messages stored after an accepted raw publish, want 2", n)
				}
			}
			right.URL, right.Queues = url, []string{"q"}
			cl, err := Open(context.Background(), right)
			if err != nil {
				t.Fatalf("Open with the right credentials: %v", err)
			}
			defer cl.Close()
			if err := cl.Enqueue(context.Background(), Job{Queue: "q", ID: "theirs"}); err != nil {
				t.Errorf("Enqueue with the right credentials: %v", err)
			}
		})
	}
}

// selfSigned returns a certificate for 127.0.0.1, its own CA.
func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "natsjobs test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// With TLS, a client that trusts the certificate and has the token works;
// one without TLS, or without the token, is refused.
func TestTLS(t *testing.T) {
	cert := selfSigned(t)
	c := open(t, Config{Server: embedded.Server{Listen: "127.0.0.1:0", Token: "s3cret", TLS: &tls.Config{Certificates: []tls.Certificate{cert}}}})
	roots := x509.NewCertPool()
	roots.AddCert(cert.Leaf)
	client := func(token string, tlsCfg *tls.Config) (*Client, error) {
		return Open(context.Background(), Config{URL: c.URL(), Queues: []string{"q"}, Token: token, TLS: tlsCfg, Timeout: 2 * time.Second})
	}
	if cl, err := client("s3cret", nil); err == nil {
		cl.Close()
		t.Errorf("Open without TLS succeeded, want refused")
	}
	if cl, err := client("", &tls.Config{RootCAs: roots}); err == nil {
		cl.Close()
		t.Errorf("Open over TLS without the token succeeded, want refused")
	}
	if cl, err := client("s3cret", &tls.Config{}); err == nil {
		cl.Close()
		t.Errorf("Open not trusting the certificate succeeded, want refused")
	}
	cl, err := client("s3cret", &tls.Config{RootCAs: roots})
	if err != nil {
		t.Fatalf("Open over TLS with the token: %v", err)
	}
	defer cl.Close()
	if err := cl.Enqueue(context.Background(), Job{Queue: "q", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	if n := storedCount(t, c); n != 1 {
		t.Errorf("%d messages stored, want 1", n)
	}
}
