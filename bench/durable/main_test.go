package durable

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"syscall"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
)

// The test binary doubles as the external nats-server process (and as a
// worker process for the crash workload): TestMain dispatches on
// DURABLE_CHILD before running any test.
func TestMain(m *testing.M) {
	switch os.Getenv("DURABLE_CHILD") {
	case "":
		os.Exit(m.Run())
	case "nats-server":
		runNATSServer()
		os.Exit(0)
	case "worker":
		runWorkerChild()
	default:
		fmt.Fprintln(os.Stderr, "unknown DURABLE_CHILD", os.Getenv("DURABLE_CHILD"))
		os.Exit(2)
	}
}

// runNATSServer is a plain nats-server with JetStream on file storage in
// DURABLE_DIR, listening on 127.0.0.1:DURABLE_PORT, until SIGTERM. With
// DURABLE_SERVER_CPUPROFILE set (in the benchmark's environment, which the
// server process inherits) it writes its CPU profile to that file,
// suffixed with its process ID, when it stops.
func runNATSServer() {
	if path := os.Getenv("DURABLE_SERVER_CPUPROFILE"); path != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid()))
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	port, _ := strconv.Atoi(os.Getenv("DURABLE_PORT"))
	opts := &natsserver.Options{
		Host:      "127.0.0.1",
		Port:      port,
		JetStream: true,
		StoreDir:  os.Getenv("DURABLE_DIR"),
		NoSigs:    true,
	}
	s, err := natsserver.NewServer(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		fmt.Fprintln(os.Stderr, "nats-server not ready")
		os.Exit(1)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	s.Shutdown()
	s.WaitForShutdown()
}

// startNATS starts the external nats-server process (this test binary).
func startNATS(tb testing.TB) *server {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	port := freePort(tb)
	s := &server{name: "nats-server", addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir, argv: []string{exe}}
	startWithEnv(tb, s, "DURABLE_CHILD=nats-server", "DURABLE_PORT="+strconv.Itoa(port), "DURABLE_DIR="+dir)
	tb.Cleanup(s.stop)
	return s
}

// startWithEnv is server.start with extra environment variables.
func startWithEnv(tb testing.TB, s *server, env ...string) {
	tb.Helper()
	s.env = env
	s.start(tb)
}

var _ = exec.Command
