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

// Child processes. The benchmarks re-execute this test binary with an
// environment variable naming a role; init below notices it and plays the
// role instead of running tests, talking to the parent over its standard
// input and output, one line each way. The child exits when its input
// reaches EOF.
//
// Server (childServerEnv = variant name):
//
//	child → parent   "addr 127.0.0.1:PORT"        once, when listening
//	parent → child   "stats"
//	child → parent   "stats {JSON serverStats}"   CPUNs: the child's own CPU
//	parent → child   "finish"
//	child → parent   "stats {JSON serverStats}"   after closing the server; then it exits
//
// Its CPU time is read with getrusage(RUSAGE_SELF) in the child, so it
// covers the server alone: every goroutine and thread of the server, the
// runtime's netpoller, timers and GC included, the clients excluded.
//
// Clients (childClientEnv = server address; childConnsEnv, childClientsEnv,
// childDepthEnv = echoClients' parameters), used where one process cannot
// hold every client connection:
//
//	child → parent   "ready"     once n connections are open and each has echoed one message
//	parent → child   "run M"
//	child → parent   "done"      once M more messages have been echoed

const (
	childServerEnv  = "TTLKIT_BENCH_IDLE_SERVER"  // server variant to run
	childClientEnv  = "TTLKIT_BENCH_IDLE_CLIENT"  // server address to drive
	childConnsEnv   = "TTLKIT_BENCH_IDLE_FDS"     // connections to make room for, or to open
	childClientsEnv = "TTLKIT_BENCH_IDLE_CLIENTS" // client goroutines
	childDepthEnv   = "TTLKIT_BENCH_IDLE_DEPTH"   // messages in flight per client goroutine
)

func init() {
	if name := os.Getenv(childServerEnv); name != "" {
		os.Exit(serverChildMain(name))
	}
	if addr := os.Getenv(childClientEnv); addr != "" {
		os.Exit(clientChildMain(addr))
	}
}

// childFail reports err on standard error and returns exit code 1.
func childFail(role string, err error) int {
	fmt.Fprintf(os.Stderr, "idle echo child %s: %v\n", role, err)
	return 1
}

// envInt reads a positive integer from the environment.
func envInt(name string) (int, error) {
	n, err := strconv.Atoi(os.Getenv(name))
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q, want a positive integer", name, os.Getenv(name))
	}
	return n, nil
}

// roomFor makes room for n connections in this process, one descriptor
// each: out of descriptors, Accept would fail and clients would hang.
func roomFor(n int) error {
	if lim := raiseNoFile(n + fdSlack); lim >= 0 && lim < n+fdSlack {
		return fmt.Errorf("RLIMIT_NOFILE is %d, cannot raise it to %d for %d connections", lim, n+fdSlack, n)
	}
	return nil
}

// serverChildMain is a server child's whole life; it returns the exit code.
func serverChildMain(name string) int {
	runtime.GOMAXPROCS(benchProcs)
	role := "server " + name
	im, ok := implByName(name)
	if !ok {
		return childFail(role, errors.New("unknown server variant"))
	}
	n, err := envInt(childConnsEnv)
	if err == nil {
		err = roomFor(n)
	}
	if err != nil {
		return childFail(role, err)
	}
	s, err := startEchoServer(im)
	if err != nil {
		return childFail(role, err)
	}
	if _, err := fmt.Printf("addr %s\n", s.Addr()); err != nil {
		return childFail(role, err)
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var st serverStats
		cmd := in.Text()
		switch cmd {
		case "stats":
			st, _ = s.Stats()
		case "finish":
			if st, err = s.Finish(); err != nil {
				return childFail(role, err)
			}
		default:
			return childFail(role, fmt.Errorf("unknown command %q", cmd))
		}
		js, err := json.Marshal(st)
		if err != nil {
			return childFail(role, err)
		}
		if _, err := fmt.Printf("stats %s\n", js); err != nil {
			return childFail(role, err)
		}
		if cmd == "finish" {
			return 0
		}
	}
	// The parent is gone: exiting closes every connection.
	return 0
}

// clientChildMain is a client child's whole life; it returns the exit code.
func clientChildMain(addr string) int {
	runtime.GOMAXPROCS(benchProcs)
	role := "client of " + addr
	var params [3]int
	for i, name := range []string{childConnsEnv, childClientsEnv, childDepthEnv} {
		v, err := envInt(name)
		if err != nil {
			return childFail(role, err)
		}
		params[i] = v
	}
	n, clients, depth := params[0], params[1], params[2]
	if err := roomFor(n); err != nil {
		return childFail(role, err)
	}
	conns, err := dialAll(addr, n, idleDialers)
	if err != nil {
		return childFail(role, err)
	}
	defer closeAll(conns)
	e := newEchoClients(conns, clients, depth, false)
	if err := e.run(n); err != nil {
		return childFail(role, fmt.Errorf("warm-up: %w", err))
	}
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		arg, ok := strings.CutPrefix(in.Text(), "run ")
		m, err := strconv.Atoi(arg)
		if !ok || err != nil || m < 0 {
			return childFail(role, fmt.Errorf("unknown command %q", in.Text()))
		}
		if err := e.run(m); err != nil {
			return childFail(role, err)
		}
		fmt.Println("done")
	}
	return 0
}

// childProc is the parent's handle on a child: its input and output.
type childProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startChild starts this test binary with env added to the environment.
func startChild(env ...string) (*childProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	// -test.run=^$: should init not take over, the child runs no test.
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
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
	return &childProc{cmd: cmd, in: in, out: bufio.NewReader(out)}, nil
}

// send writes one command line.
func (c *childProc) send(cmd string) error {
	if _, err := io.WriteString(c.in, cmd+"\n"); err != nil {
		return fmt.Errorf("idle echo child: %s: %w", cmd, err)
	}
	return nil
}

// reply returns the rest of the next line that starts with prefix,
// skipping any other output.
func (c *childProc) reply(prefix string) (string, error) {
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

// wait closes the child's input and waits for it to exit; if it has not
// within 10 s it is killed.
func (c *childProc) wait() error {
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

// childServer is the parent's handle on a server child.
type childServer struct {
	*childProc
	addr string
}

var _ echoBackend = (*childServer)(nil)

// startChildServer starts a child serving im, with room for conns
// connections, and waits until it listens.
func startChildServer(im serverImpl, conns int) (*childServer, error) {
	p, err := startChild(childServerEnv+"="+im.name, childConnsEnv+"="+strconv.Itoa(conns))
	if err != nil {
		return nil, err
	}
	addr, err := p.reply("addr ")
	if err != nil {
		return nil, errors.Join(err, p.wait())
	}
	return &childServer{childProc: p, addr: addr}, nil
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
	if err := c.send(cmd); err != nil {
		return st, err
	}
	js, err := c.reply("stats ")
	if err != nil {
		return st, err
	}
	err = json.Unmarshal([]byte(js), &st)
	return st, err
}

// childClients is the parent's handle on a client child.
type childClients struct{ *childProc }

// startChildClients starts a child that opens conns connections to addr
// and drives them like echoClients, and waits until it is ready.
func startChildClients(addr string, conns, clients, depth int) (*childClients, error) {
	p, err := startChild(childClientEnv+"="+addr, childConnsEnv+"="+strconv.Itoa(conns),
		childClientsEnv+"="+strconv.Itoa(clients), childDepthEnv+"="+strconv.Itoa(depth))
	if err != nil {
		return nil, err
	}
	if _, err := p.reply("ready"); err != nil {
		return nil, errors.Join(err, p.wait())
	}
	return &childClients{p}, nil
}

// run has the child send msgs messages and returns once they are echoed.
func (c *childClients) run(msgs int) error {
	if err := c.send("run " + strconv.Itoa(msgs)); err != nil {
		return err
	}
	_, err := c.reply("done")
	return err
}
