package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/ttlkit/ttlkit/natsjobs"
)

// operator is a decentralized-auth setup as nsc would make it: an
// operator, a system account, an account with JetStream, and users of
// that account (a JWT signed by the account's key plus the user's seed,
// written as a .creds file).
type operator struct {
	claims   *jwt.OperatorClaims
	kp       nkeys.KeyPair
	resolver *server.MemAccResolver
	sysPub   string
}

func newOperator(t *testing.T) *operator {
	t.Helper()
	o := &operator{resolver: &server.MemAccResolver{}}
	o.kp = must(t, nkeys.CreateOperator)
	pub := must(t, o.kp.PublicKey)
	o.claims = jwt.NewOperatorClaims(pub)
	o.claims.Name = "natsjobs-test"
	_, o.sysPub = o.account(t, "SYS", false)
	o.claims.SystemAccount = o.sysPub
	if _, err := o.claims.Encode(o.kp); err != nil { // validates the claims
		t.Fatal(err)
	}
	return o
}

func must[T any](t *testing.T, f func() (T, error)) T {
	t.Helper()
	v, err := f()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// account creates an account signed by the operator and registers its
// JWT with the server's resolver; withJS gives it unlimited JetStream.
func (o *operator) account(t *testing.T, name string, withJS bool) (nkeys.KeyPair, string) {
	t.Helper()
	kp := must(t, nkeys.CreateAccount)
	pub := must(t, kp.PublicKey)
	ac := jwt.NewAccountClaims(pub)
	ac.Name = name
	if withJS {
		ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	}
	token, err := ac.Encode(o.kp)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.resolver.Store(pub, token); err != nil {
		t.Fatal(err)
	}
	return kp, pub
}

// creds writes a .creds file for a new user of the account whose key is
// acct, and returns its path.
func creds(t *testing.T, acct nkeys.KeyPair, name string) string {
	t.Helper()
	user := must(t, nkeys.CreateUser)
	uc := jwt.NewUserClaims(must(t, user.PublicKey))
	uc.Name = name
	token, err := uc.Encode(acct)
	if err != nil {
		t.Fatal(err)
	}
	seed := must(t, user.Seed)
	text, err := jwt.FormatUserConfig(token, seed)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".creds")
	if err := os.WriteFile(path, text, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// --creds authenticates with a user JWT and its seed from a .creds file,
// against a server in operator mode (accounts as JWTs): a user of the
// account with the queues gets in and sees them; a user of an account the
// operator never signed, or no credentials, is refused (exit code 3); a
// missing file is a usage error (exit code 2).
func TestCreds(t *testing.T) {
	o := newOperator(t)
	jobsAcct, _ := o.account(t, "JOBS", true)
	good := creds(t, jobsAcct, "ops")
	stranger := must(t, nkeys.CreateAccount) // not signed by the operator
	bad := creds(t, stranger, "stranger")

	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
		TrustedOperators: []*jwt.OperatorClaims{o.claims},
		SystemAccount:    o.sysPub,
		AccountResolver:  o.resolver,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server did not start")
	}
	ctx := context.Background()
	c, err := natsjobs.Open(ctx, natsjobs.Config{URL: srv.ClientURL(), Options: []nats.Option{nats.UserCredentials(good)}, Queues: []string{"q"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Enqueue(ctx, natsjobs.Job{Queue: "q", ID: "j-1", Payload: []byte("hello")}); err != nil {
		t.Fatal(err)
	}
	u := "--url=" + srv.ClientURL()
	want(t, 0, []string{`(?m)^q +active +0 +1 `}, u, "--creds", good, "queues")
	want(t, 0, []string{`(?m)^state: +pending$`, `hello`}, u, "--creds", good, "show", "q", "j-1")
	want(t, 3, []string{`[Aa]uthorization [Vv]iolation`}, u, "--creds", bad, "queues")
	want(t, 3, []string{`[Aa]uthorization [Vv]iolation`}, u, "queues")
	want(t, 2, []string{`missing\.creds`}, u, "--creds", filepath.Join(t.TempDir(), "missing.creds"), "queues")
}
