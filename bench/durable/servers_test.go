package durable

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
	tb.Skip(msg)
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
	cmd  *exec.Cmd
	log  *os.File
}

func (s *server) start(tb testing.TB) {
	tb.Helper()
	var err error
	s.log, err = os.OpenFile(filepath.Join(s.dir, s.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		tb.Fatal(err)
	}
	argv := s.argv
	if s.user != "" {
		argv = append([]string{"runuser", "-u", s.user, "--"}, argv...)
	}
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if len(s.env) > 0 {
		s.cmd.Env = append(os.Environ(), s.env...)
	}
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		tb.Fatalf("%s: %v", s.name, err)
	}
	if err := waitDial(s.addr, 30*time.Second); err != nil {
		s.kill()
		out, _ := os.ReadFile(s.log.Name())
		tb.Fatalf("%s: %v\n%s", s.name, err, tail(string(out), 2000))
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

// rssBytes is the server process's resident memory (its process group's
// main process), from /proc.
func (s *server) rssBytes() (int64, error) {
	if s.cmd == nil {
		return 0, fmt.Errorf("%s not running", s.name)
	}
	pid := s.cmd.Process.Pid
	if s.user != "" {
		// runuser forks the server: take its child.
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		if err == nil && len(strings.Fields(string(b))) > 0 {
			pid, _ = strconv.Atoi(strings.Fields(string(b))[0])
		}
	}
	return rssOf(pid)
}

func rssOf(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
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
	user := ""
	if os.Geteuid() == 0 {
		user = "postgres"
	}
	initdb := []string{filepath.Join(bin, "initdb"), "-D", data, "-U", "bench", "--auth=trust", "-E", "UTF8", "--no-sync"}
	if user != "" {
		initdb = append([]string{"runuser", "-u", user, "--"}, initdb...)
	}
	if out, err := exec.Command(initdb[0], initdb[1:]...).CombinedOutput(); err != nil {
		tb.Fatalf("initdb: %v\n%s", err, out)
	}
	port := freePort(tb)
	s = &server{
		name: "postgres", addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir, user: user,
		argv: []string{filepath.Join(bin, "postgres"), "-D", data, "-h", "127.0.0.1", "-p", strconv.Itoa(port),
			"-k", dir, "-c", "max_connections=200"},
	}
	s.start(tb)
	tb.Cleanup(s.stop)
	dsn = fmt.Sprintf("postgres://bench@127.0.0.1:%d/postgres?sslmode=disable", port)
	// The server accepts connections a moment before it accepts logins.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if err := pgPing(ctx, dsn); err == nil {
			break
		} else if ctx.Err() != nil {
			tb.Fatalf("postgres: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // polling a starting process
	}
	return s, dsn
}
