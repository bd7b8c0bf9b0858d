package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/ttlkit/ttlkit/jobs"
	"github.com/ttlkit/ttlkit/natsjobs"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
)

// binary is the natsjobs command, built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "natsjobs-cli-*")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "natsjobs")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

// cli runs the binary with args and returns its output and exit code.
func cli(t *testing.T, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "NATS_URL=", "NATS_PASSWORD=", "NATS_TOKEN=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout.String(), stderr.String(), 0}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("natsjobs %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// want runs the binary and checks its exit code and that stdout (or
// stderr, for a failure) matches each pattern.
func want(t *testing.T, code int, patterns []string, args ...string) result {
	t.Helper()
	r := cli(t, args...)
	if r.code != code {
		t.Fatalf("natsjobs %s: exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	text := r.stdout
	if code != 0 {
		text = r.stderr
	}
	for _, p := range patterns {
		if !regexp.MustCompile(p).MatchString(text) {
			t.Errorf("natsjobs %s: output does not match %q:\n%s", strings.Join(args, " "), p, text)
		}
	}
	return r
}

// server starts an embedded natsjobs server on a loopback port with
// queues orders and mail: pending p-1 and p-2 (orders is paused), s-1
// scheduled in an hour, dead letters d-1 and d-2.
func server_(t *testing.T) (*natsjobs.Client, string) {
	t.Helper()
	ctx := context.Background()
	c, err := natsjobs.Open(ctx, natsjobs.Config{Server: embedded.Server{Ephemeral: true, Listen: "127.0.0.1:0"}, Queues: []string{"orders", "mail"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	dead := make(chan natsjobs.DeadLetter, 10)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- c.Work(wctx, "orders", func(ctx context.Context, r natsjobs.Run) error {
			return jobs.Permanent(errors.New("card declined"))
		}, natsjobs.WorkOptions{DeadLetter: func(d natsjobs.DeadLetter) { dead <- d }})
	}()
	for _, id := range []string{"d-1", "d-2"} {
		if err := c.Enqueue(ctx, natsjobs.Job{Queue: "orders", ID: id, Payload: []byte("dead " + id)}); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		select {
		case <-dead:
		case <-time.After(30 * time.Second):
			t.Fatal("no dead letter within 30 s")
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := c.Pause(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	jobs := []natsjobs.Job{
		{Queue: "orders", ID: "p-1", Payload: []byte(`{"order":1}`), Header: map[string]string{"Tenant": "acme"}},
		{Queue: "orders", ID: "p-2", Payload: []byte("\x1b[31mred\x1b[0m")},
	}
	for _, j := range jobs {
		if err := c.Enqueue(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.EnqueueAfter(ctx, natsjobs.Job{Queue: "orders", ID: "s-1"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	// Counted at once: the enqueues returned, Work returned (its outcomes
	// were confirmed), and Pending counts the stream.
	st, err := c.QueueStats(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != 2 || st.Scheduled != 1 || st.Running != 0 || st.Dead != 2 {
		t.Fatalf("QueueStats = %+v, want 2 pending, 1 scheduled, 2 dead", st)
	}
	return c, c.URL()
}

func TestCommands(t *testing.T) {
	_, url := server_(t)
	u := "--url=" + url

	want(t, 0, []string{`(?m)^QUEUE +STATE +SCHEDULED +PENDING +RUNNING +DEAD +OLDEST PENDING$`,
		`(?m)^mail +active +0 +0 +0 +0 +-$`, `(?m)^orders +paused +1 +2 +0 +2 +\S+$`}, u, "queues")
	r := want(t, 0, nil, "queues", "--json", u)
	var qs []struct {
		Queue   string `json:"queue"`
		Paused  bool   `json:"paused"`
		Pending int    `json:"pending"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &qs); err != nil || len(qs) != 2 || qs[1].Queue != "orders" || !qs[1].Paused || qs[1].Pending != 2 {
		t.Errorf("queues --json: %+v, %v\n%s", qs, err, r.stdout)
	}

	want(t, 0, []string{`(?m)^ID +STATE +ATTEMPTS +NEXT RUN / FAILED +LAST ERROR$`, `(?m)^p-1 +pending +0 `, `(?m)^p-2 +pending `}, u, "ls", "orders")
	r = want(t, 0, []string{`(?m)^p-1 `, `(?m)^more: --after \d+$`}, u, "ls", "orders", "--limit", "1")
	if strings.Contains(r.stdout, "p-2") {
		t.Errorf("ls --limit 1 printed p-2:\n%s", r.stdout)
	}
	after := regexp.MustCompile(`--after (\d+)`).FindStringSubmatch(r.stdout)[1]
	r = want(t, 0, []string{`(?m)^p-2 `}, u, "ls", "orders", "--limit", "1", "--after", after)
	if strings.Contains(r.stdout, "p-1") {
		t.Errorf("second page printed p-1:\n%s", r.stdout)
	}
	want(t, 0, []string{`(?m)^s-1 +scheduled +0 +\S+ \S+ UTC \(in (59m\d*s?|1h0m)\)`}, u, "ls", "orders", "--state", "scheduled", "--prefix", "s-")
	r = want(t, 0, nil, u, "--json", "ls", "orders", "--state", "dead")
	var page struct {
		Jobs []struct {
			ID        string `json:"id"`
			State     string `json:"state"`
			LastError string `json:"last_error"`
			Payload   string `json:"payload"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil || len(page.Jobs) != 2 || page.Jobs[0].State != "dead" || page.Jobs[0].LastError != "card declined" || page.Jobs[0].Payload != "dead d-1" {
		t.Errorf("ls --state dead --json: %+v, %v\n%s", page, err, r.stdout)
	}

	want(t, 0, []string{`(?m)^state: +pending$`, `(?m)^header Tenant: +acme$`, `(?m)^payload: +11 bytes$`, `(?m)^\{"order":1\}$`}, u, "show", "orders", "p-1")
	r = want(t, 0, []string{`(?m)^"\\x1b\[31mred\\x1b\[0m"$`}, u, "show", "orders", "p-2")
	if strings.Contains(r.stdout, "\x1b") {
		t.Errorf("show printed a raw escape sequence")
	}
	want(t, 4, []string{`no job nope in queue orders`}, u, "show", "orders", "nope")

	want(t, 4, []string{`1 of 2 cancelled`}, u, "cancel", "orders", "s-1", "nope")
	want(t, 4, nil, u, "show", "orders", "s-1")

	want(t, 0, []string{`orders: resumed`}, u, "resume", "orders")
	want(t, 0, []string{`(?m)^orders +active `}, u, "queues")
	want(t, 0, []string{`orders: paused`}, u, "pause", "orders")
	want(t, 0, []string{`(?m)^orders +paused `}, u, "queues")

	want(t, 0, []string{`(?m)^d-1 +dead +1 .* card declined$`, `(?m)^d-2 +dead `}, u, "dead", "ls", "orders")
	want(t, 0, []string{`1 redriven`}, u, "dead", "redrive", "orders", "d-1")
	want(t, 0, []string{`(?m)^d-1 +pending `}, u, "ls", "orders")
	want(t, 4, []string{`0 of 1 redriven`}, u, "dead", "redrive", "orders", "d-1")
	want(t, 0, []string{`1 deleted`}, u, "dead", "rm", "orders", "--all")
	r = want(t, 0, nil, u, "dead", "ls", "orders")
	if strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("dead ls after rm --all: want only the header\n%s", r.stdout)
	}

	want(t, 0, []string{`(?m)^orders +paused +0 +3 +0 +0 +0 +\S+ +- +- +-$`}, u, "stats", "orders", "--interval", "0")
	r = want(t, 0, nil, u, "stats", "orders", "mail", "--interval", "100ms", "--json")
	var st []struct {
		Queue string         `json:"queue"`
		Rates map[string]any `json:"rates_per_second"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || len(st) != 2 || st[0].Rates == nil {
		t.Errorf("stats --json: %+v, %v\n%s", st, err, r.stdout)
	}

	want(t, 2, []string{`purge removes every job of orders that is not dead: add --yes`}, u, "purge", "orders")
	want(t, 0, []string{`3 removed`}, u, "purge", "orders", "--yes")
	want(t, 0, []string{`(?m)^orders +paused +0 +0 +0 +0 `}, u, "queues")
}

func TestUsageErrors(t *testing.T) {
	_, url := server_(t)
	u := "--url=" + url
	for _, tc := range []struct {
		name string
		code int
		out  string
		args []string
	}{
		{"NoCommand", 2, `no command`, nil},
		{"Unknown", 2, `unknown command "frob"`, []string{u, "frob"}},
		{"LsNoQueue", 2, `want QUEUE`, []string{u, "ls"}},
		{"BadState", 2, `state "bogus"`, []string{u, "ls", "orders", "--state", "bogus"}},
		{"FlagOfOtherCommand", 2, `pause takes no --all`, []string{u, "pause", "orders", "--all"}},
		{"BadFlag", 2, `flag provided but not defined: -frob`, []string{u, "queues", "--frob"}},
		{"DeadNoVerb", 2, `dead: want ls, redrive or rm`, []string{u, "dead"}},
		{"DeadNoSelection", 2, `give IDs, --prefix or --all`, []string{u, "dead", "rm", "orders"}},
		{"BadLimit", 2, `Limit 5000 out of range`, []string{u, "ls", "orders", "--limit", "5000"}},
		{"BadQueueName", 2, `queue name "a.b"`, []string{u, "ls", "a.b"}},
		{"MissingQueue", 4, `no queue nosuch on the server`, []string{u, "ls", "nosuch"}},
		{"PasswordWithoutUser", 2, `--password without --user`, []string{u, "--password", "x", "queues"}},
		{"MissingCA", 2, `no such file`, []string{u, "--tls-ca", "/nonexistent/ca.pem", "queues"}},
		{"CertWithoutKey", 2, `--tls-cert and --tls-key go together`, []string{u, "--tls-cert", "c.pem", "queues"}},
		{"Unreachable", 3, `server unavailable`, []string{"--url", "nats://127.0.0.1:1", "--timeout", "1s", "queues"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want(t, tc.code, []string{tc.out}, tc.args...)
		})
	}
}

// The CLI carries credentials: a server that requires a password lets
// it in with the right one and refuses it (exit code 3) with a wrong one.
func TestCredentials(t *testing.T) {
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: t.TempDir(),
		Username: "ops", Password: "s3cret", NoLog: true, NoSigs: true,
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
	c, err := natsjobs.Open(ctx, natsjobs.Config{URL: srv.ClientURL(), Options: []nats.Option{nats.UserInfo("ops", "s3cret")}, Queues: []string{"q"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Enqueue(ctx, natsjobs.Job{Queue: "q", ID: "j-1"}); err != nil {
		t.Fatal(err)
	}
	u := "--url=" + srv.ClientURL()
	want(t, 0, []string{`(?m)^q +active `}, u, "--user", "ops", "--password", "s3cret", "queues")
	want(t, 3, []string{`[Aa]uthorization [Vv]iolation`}, u, "--user", "ops", "--password", "wrong", "queues")
	want(t, 3, []string{`[Aa]uthorization [Vv]iolation`}, u, "queues")
	// The password may come from the environment instead of the command line.
	cmd := exec.Command(binary, u, "--user", "ops", "show", "q", "j-1")
	cmd.Env = append(os.Environ(), "NATS_PASSWORD=s3cret")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "pending") {
		t.Errorf("NATS_PASSWORD: %v\n%s", err, out)
	}
}

// --nkey signs the server's challenge with an nkey seed from a file.
func TestNkey(t *testing.T) {
	user, _ := nkeys.CreateUser()
	pub, _ := user.PublicKey()
	seed, _ := user.Seed()
	other, _ := nkeys.CreateUser()
	otherSeed, _ := other.Seed()
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "user.nk"), filepath.Join(dir, "other.nk")
	os.WriteFile(good, seed, 0o600)
	os.WriteFile(bad, otherSeed, 0o600)
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
		Nkeys: []*server.NkeyUser{{Nkey: pub}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server did not start")
	}
	opt, err := nats.NkeyOptionFromSeed(good)
	if err != nil {
		t.Fatal(err)
	}
	c, err := natsjobs.Open(context.Background(), natsjobs.Config{URL: srv.ClientURL(), Options: []nats.Option{opt}, Queues: []string{"q"}})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	u := "--url=" + srv.ClientURL()
	want(t, 0, []string{`(?m)^q +active `}, u, "--nkey", good, "queues")
	want(t, 3, []string{`[Aa]uthorization [Vv]iolation`}, u, "--nkey", bad, "queues")
	want(t, 2, []string{`--nkey`}, u, "--nkey", filepath.Join(dir, "missing.nk"), "queues")
}

// Every command's --json output, as a script reads it: show, cancel
// (with one ID missing: exit code 4 and the JSON still printed), pause
// and resume, dead redrive and rm.
func TestJSONOutput(t *testing.T) {
	_, url := server_(t)
	u := "--url=" + url
	decode := func(r result, v any) {
		t.Helper()
		if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
		}
	}
	var job struct {
		ID            string            `json:"id"`
		State         string            `json:"state"`
		Header        map[string]string `json:"header"`
		Payload       *string           `json:"payload"`
		PayloadBase64 []byte            `json:"payload_base64"`
	}
	decode(want(t, 0, nil, u, "--json", "show", "orders", "p-1"), &job)
	if job.ID != "p-1" || job.State != "pending" || job.Header["Tenant"] != "acme" || job.Payload == nil || *job.Payload != `{"order":1}` {
		t.Errorf("show --json p-1: %+v", job)
	}
	var done struct {
		Count   int      `json:"count"`
		Missing []string `json:"missing"`
	}
	r := cli(t, u, "--json", "cancel", "orders", "s-1", "nope")
	if r.code != 4 {
		t.Errorf("cancel --json with a missing ID: exit code %d, want 4\n%s", r.code, r.stderr)
	}
	decode(r, &done)
	if done.Count != 1 || len(done.Missing) != 1 || done.Missing[0] != "nope" {
		t.Errorf("cancel --json: %+v, want count 1, missing [nope]", done)
	}
	var msg struct {
		OK      bool   `json:"ok"`
		Message string `json:"message"`
	}
	decode(want(t, 0, nil, u, "--json", "resume", "orders"), &msg)
	if !msg.OK || msg.Message != "orders: resumed" {
		t.Errorf("resume --json: %+v", msg)
	}
	decode(want(t, 0, nil, u, "--json", "pause", "orders"), &msg)
	if !msg.OK || msg.Message != "orders: paused" {
		t.Errorf("pause --json: %+v", msg)
	}
	done.Count, done.Missing = 0, nil
	decode(want(t, 0, nil, u, "--json", "dead", "redrive", "orders", "d-1"), &done)
	if done.Count != 1 || done.Missing != nil {
		t.Errorf("dead redrive --json: %+v, want count 1", done)
	}
	decode(want(t, 0, nil, u, "--json", "dead", "rm", "orders", "--all"), &done)
	if done.Count != 1 {
		t.Errorf("dead rm --json --all: %+v, want count 1 (d-2)", done)
	}
}

// --token (or $NATS_TOKEN) authenticates to a server that requires a
// token: here natsjobs' embedded server, which requires one to listen.
func TestToken(t *testing.T) {
	ctx := context.Background()
	c, err := natsjobs.Open(ctx, natsjobs.Config{Server: embedded.Server{Ephemeral: true, Listen: "127.0.0.1:0", Token: "s3cret"}, Queues: []string{"q"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Enqueue(ctx, natsjobs.Job{Queue: "q", ID: "j-1"}); err != nil {
		t.Fatal(err)
	}
	u := "--url=" + c.URL()
	want(t, 0, []string{`(?m)^q +active +0 +1 `}, u, "--token", "s3cret", "queues")
	want(t, 3, []string{`[Aa]uthorization [Vv]iolation`}, u, "--token", "guess", "queues")
	want(t, 3, []string{`[Aa]uthorization [Vv]iolation`}, u, "queues")
	cmd := exec.Command(binary, u, "show", "q", "j-1")
	cmd.Env = append(os.Environ(), "NATS_TOKEN=s3cret")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "pending") {
		t.Errorf("NATS_TOKEN: %v\n%s", err, out)
	}
}

// A request the server refuses, for another reason than an outage or a
// missing queue, is exit code 1 with the server's reason: here a purge of
// a queue whose work stream an administrator sealed.
func TestServerRefusal(t *testing.T) {
	_, url := server_(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := js.Stream(ctx, "natsjobs_orders")
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.Sealed = true
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	r := want(t, 1, []string{`(?i)sealed`}, "--url="+url, "purge", "orders", "--yes")
	t.Logf("stderr: %s", r.stderr)
}
