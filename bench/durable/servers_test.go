package durable

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The peers' servers run as real processes from Debian's packages, on
// loopback, with temporary data directories, and are stopped when the
// benchmark or test that started them ends. install.sh installs them; a
// local run without them skips the peer with the reason, CI (CI=true)
// fails instead.

// needServer skips (or, under CI, fails) when a server binary is missing.
func needServer(tb testing.TB, what, path string) {
	tb.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	if _, err := exec.LookPath(path); err == nil {
		return
	}
	msg := fmt.Sprintf("%s: %s not found (run bench/durable/install.sh, or apt-get install the Debian package)", what, path)
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	skip(tb, msg)
}

var skipNoted sync.Map // benchmark names whose skip was noted

// skip skips tb with the reason. go test shows a skipped benchmark's
// message only with -v, so for a benchmark the reason also goes to stdout
// as a "note: " line, once per benchmark, which bench/cmd/report prints
// under the suite's heading: a peer left out never vanishes silently.
func skip(tb testing.TB, reason string) {
	tb.Helper()
	if _, ok := tb.(*testing.B); ok {
		if _, dup := skipNoted.LoadOrStore(tb.Name(), true); !dup {
			fmt.Printf("note: %s skipped: %s\n", tb.Name(), reason)
		}
	}
	tb.Skip(reason)
}

// freePort picks a loopback port that was free a moment ago.
func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitDial waits until addr accepts connections or d passes.
func waitDial(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not accept connections within %v: %w", addr, d, err)
		}
		time.Sleep(20 * time.Millisecond) // polling a starting process, not synchronizing goroutines
	}
}

// A server is one peer's server process.
type server struct {
	name string
	addr string
	dir  string // its data directory: a restart keeps it
	argv []string
	user string   // run as this user ("" = current)
	env  []string // extra environment variables
	// ready, if set, waits until the server serves requests, after it
	// accepts connections.
	ready func() error
	cmd   *exec.Cmd
	log   *os.File
}

func (s *server) start(tb testing.TB) {
	tb.Helper()
	var err error
	s.log, err = os.OpenFile(filepath.Join(s.dir, s.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		tb.Fatal(err)
	}
	s.cmd = exec.Command(s.argv[0], s.argv[1:]...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if len(s.env) > 0 {
		s.cmd.Env = append(os.Environ(), s.env...)
	}
	// The server is this process's own child, whatever its user, so that
	// Pdeathsig ends it when the benchmark dies: a server started through
	// runuser outlived a killed benchmark (only runuser got the signal).
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: asUser(tb, s.user)}
	if err := s.cmd.Start(); err != nil {
		tb.Fatalf("%s: %v", s.name, err)
	}
	if err := waitDial(s.addr, 30*time.Second); err != nil {
		s.kill()
		out, _ := os.ReadFile(s.log.Name())
		tb.Fatalf("%s: %v\n%s", s.name, err, tail(string(out), 2000))
	}
	if s.ready != nil {
		if err := s.ready(); err != nil {
			s.kill()
			tb.Fatal(err)
		}
	}
}

// stop ends the server gracefully (SIGTERM), waiting at most 30 s.
func (s *server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	s.cmd = nil
	s.log.Close()
}

// kill ends the server at once (SIGKILL), as a crash would.
func (s *server) kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	s.cmd.Wait()
	s.cmd = nil
	s.log.Close()
}

// asUser is the credential of the named user, nil for "" (this process's
// own).
func asUser(tb testing.TB, name string) *syscall.Credential {
	tb.Helper()
	if name == "" {
		return nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		tb.Fatal(err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		tb.Fatalf("user %s: %v", name, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// memBytes is the server's memory: the proportional set size (Pss, from
// /proc/PID/smaps_rollup) summed over the server process and all its
// descendants, so that memory shared between a server's processes
// (PostgreSQL's shared buffers) counts once. Descendants, not the process
// group: every PostgreSQL child process makes itself a group leader, and
// the postmaster's share of the shared buffers shrinks as backends map
// them, which made river's figure negative.
func (s *server) memBytes() (int64, error) {
	if s.cmd == nil {
		return 0, fmt.Errorf("%s not running", s.name)
	}
	var total int64
	for _, p := range processTree(s.cmd.Process.Pid) {
		pss, err := pssOf(fmt.Sprintf("/proc/%d/smaps_rollup", p.pid))
		if err == nil {
			total += pss
		}
	}
	if total == 0 {
		return 0, fmt.Errorf("%s: no memory figure for process %d", s.name, s.cmd.Process.Pid)
	}
	return total, nil
}

func pssOf(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no Pss in %s", path)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// startRedis starts redis-server with an append-only file, fsynced every
// second (Redis' own default for AOF), as a job queue that must survive a
// restart is deployed.
func startRedis(tb testing.TB) *server {
	tb.Helper()
	needServer(tb, "asynq", "redis-server")
	dir := tb.TempDir()
	port := freePort(tb)
	s := &server{
		name: "redis", addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir,
		argv: []string{"redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
			"--dir", dir, "--save", "", "--appendonly", "yes", "--appendfsync", "everysec",
			"--protected-mode", "yes", "--daemonize", "no"},
	}
	s.start(tb)
	tb.Cleanup(s.stop)
	return s
}

// pgBin is where Debian installs PostgreSQL's server programs.
func pgBin(tb testing.TB) string {
	tb.Helper()
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(matches) == 0 {
		needServer(tb, "river", "/usr/lib/postgresql/N/bin/postgres")
	}
	return filepath.Dir(matches[len(matches)-1])
}

// startPostgres initializes a cluster in a temporary directory and starts
// it on loopback with PostgreSQL's defaults (fsync and synchronous_commit
// on). PostgreSQL refuses to run as root, so as root it runs as the
// "postgres" user the Debian package creates.
func startPostgres(tb testing.TB) (s *server, dsn string) {
	tb.Helper()
	bin := pgBin(tb)
	// Not tb.TempDir: its parents are private to root, and the server
	// may run as another user.
	dir, err := os.MkdirTemp("", "durable-pg-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	data := filepath.Join(dir, "data")
	runAs := ""
	if os.Geteuid() == 0 {
		runAs = "postgres"
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "bench", "--auth=trust", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: asUser(tb, runAs)}
	if out, err := initdb.CombinedOutput(); err != nil {
		tb.Fatalf("initdb: %v\n%s", err, out)
	}
	port := freePort(tb)
	s = &server{
		name: "postgres", addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir, user: runAs,
		argv: []string{filepath.Join(bin, "postgres"), "-D", data, "-h", "127.0.0.1", "-p", strconv.Itoa(port),
			"-k", dir, "-c", "max_connections=200"},
	}
	dsn = fmt.Sprintf("postgres://bench@127.0.0.1:%d/postgres?sslmode=disable", port)
	s.ready = func() error { return waitPostgres(dsn) }
	s.start(tb)
	tb.Cleanup(s.stop)
	return s, dsn
}

// waitPostgres waits until the server accepts logins: it accepts
// connections a moment before (and while it recovers after a crash).
func waitPostgres(dsn string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		err := pgPing(ctx, dsn)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("postgres: %w", err)
		}
		time.Sleep(50 * time.Millisecond) // polling a starting process
	}
}
