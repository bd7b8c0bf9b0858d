package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// The server in a child process. The benchmark re-executes this test binary
// with childServerEnv naming a server variant; init below notices it, runs
// the server instead of any test and talks to the parent over its standard
// input and output, one line each way:
//
//	child → parent   "addr 127.0.0.1:PORT"        once, when listening
//	parent → child   "stats"
//	child → parent   "stats {JSON serverStats}"   CPUNs: the child's own CPU
//	parent → child   "finish"
//	child → parent   "stats {JSON serverStats}"   after closing the server
//
// After "finish", or when its standard input reaches EOF, the child exits. Its CPU time is read
// with getrusage(RUSAGE_SELF) in the child, so it covers the server alone:
// every goroutine and thread of the server, the runtime's netpoller, timers
// and GC included, the clients excluded.

const (
	childServerEnv = "TTLKIT_BENCH_IDLE_SERVER" // server variant to run
	childConnsEnv  = "TTLKIT_BENCH_IDLE_FDS"    // connections to make room for
)

func init() {
	if name := os.Getenv(childServerEnv); name != "" {
		os.Exit(childMain(name))
	}
}

// childMain is the child process's whole life; it returns the exit code.
func childMain(name string) int {
	runtime.GOMAXPROCS(benchProcs)
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "idle echo child %s: %v\n", name, err)
		return 1
	}
	im, ok := implByName(name)
	if !ok {
		return fail(errors.New("unknown server variant"))
	}
	if n, err := strconv.Atoi(os.Getenv(childConnsEnv)); err == nil {
		// Out of descriptors, Accept would fail and clients would hang.
		if lim := raiseNoFile(n + fdSlack); lim >= 0 && lim < n+fdSlack {
			return fail(fmt.Errorf("RLIMIT_NOFILE is %d, cannot raise it to %d for %d connections", lim, n+fdSlack, n))
		}
	}
	s, err := startEchoServer(im)
	if err != nil {
		return fail(err)
	}
	if _, err := fmt.Printf("addr %s\n", s.Addr()); err != nil {
		return fail(err)
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var st serverStats
		switch cmd := in.Text(); cmd {
		case "stats":
			st, _ = s.Stats()
		case "finish":
			if st, err = s.Finish(); err != nil {
				return fail(err)
			}
		default:
			return fail(fmt.Errorf("unknown command %q", cmd))
		}
		js, err := json.Marshal(st)
		if err != nil {
			return fail(err)
		}
		if _, err := fmt.Printf("stats %s\n", js); err != nil {
			return fail(err)
		}
		if in.Text() == "finish" {
			return 0
		}
	}
	// The parent is gone: exiting closes every connection.
	return 0
}

// childServer is the parent's handle on a server child.
type childServer struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	addr string
}

var _ echoBackend = (*childServer)(nil)

// startChildServer starts this test binary as a child serving im, with
// room for conns connections, and waits until it listens.
func startChildServer(im serverImpl, conns int) (*childServer, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	// -test.run=^$: should init not take over, the child runs no test.
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childServerEnv+"="+im.name, childConnsEnv+"="+strconv.Itoa(conns))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &childServer{cmd: cmd, in: in, out: bufio.NewReader(out)}
	addr, err := c.reply("addr ")
	if err != nil {
		return nil, errors.Join(err, c.wait())
	}
	c.addr = addr
	return c, nil
}

// reply returns the rest of the next line that starts with prefix,
// skipping any other output.
func (c *childServer) reply(prefix string) (string, error) {
	for {
		line, err := c.out.ReadString('\n')
		if err != nil {
			return "", fmt.Errorf("idle echo child: waiting for %q: %w", strings.TrimSpace(prefix), err)
		}
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			return strings.TrimSuffix(rest, "\n"), nil
		}
	}
}

func (c *childServer) Addr() string { return c.addr }

// Stats asks the child; its CPUNs is the child's CPU time alone.
func (c *childServer) Stats() (serverStats, error) { return c.ask("stats") }

// Finish has the child close its server and report, and waits for it to
// exit.
func (c *childServer) Finish() (serverStats, error) {
	st, err := c.ask("finish")
	return st, errors.Join(err, c.wait())
}

func (c *childServer) ask(cmd string) (serverStats, error) {
	var st serverStats
	if _, err := io.WriteString(c.in, cmd+"\n"); err != nil {
		return st, fmt.Errorf("idle echo child: %s: %w", cmd, err)
	}
	js, err := c.reply("stats ")
	if err != nil {
		return st, err
	}
	err = json.Unmarshal([]byte(js), &st)
	return st, err
}

// wait closes the child's input and waits for it to exit; if it has not
// within 10 s it is killed.
func (c *childServer) wait() error {
	c.in.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		return errors.Join(errors.New("idle echo child: killed after 10 s"), <-done)
	}
}
