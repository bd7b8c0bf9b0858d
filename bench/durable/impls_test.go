package durable

import (
	"context"
	"testing"

	"github.com/ttlkit/ttlkit/natsjobs"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
)

// An env is one system connected to a fresh server of its own.
type env struct {
	sys system
	// restart stops the server (SIGKILL when kill, else gracefully),
	// starts it again on the same data and reconnects sys. The client is
	// closed first: the workload restarts with a new client, as a
	// redeployed service would.
	restart func(tb testing.TB, kill bool)
	// srv is the server process, nil when the server runs in this
	// process (natsjobs embedded).
	srv *server
	// workerEnv describes how a worker process reaches the server.
	workerEnv []string
	// handOff, if set, must be called before a worker process starts:
	// natsjobs embedded closes its client and server, so that the worker
	// process can open the store (one server per store directory).
	handOff func()
}

// An impl starts an env.
type impl struct {
	name string
	open func(tb testing.TB) *env
}

var impls = []impl{
	{"natsjobs", openNATSEmbedded},
	{"natsjobs-ext", openNATSExternal},
	{"asynq", openAsynqEnv},
	{"river", openRiverEnv},
}

func mustNATS(tb testing.TB, cfg natsjobs.Config) system {
	tb.Helper()
	s, err := openNATS(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func mustRiver(tb testing.TB, dsn string) system {
	tb.Helper()
	s, err := openRiver(context.Background(), dsn)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func openNATSEmbedded(tb testing.TB) *env {
	dir := tb.TempDir()
	cfg := natsjobs.Config{Server: embedded.Server{StoreDir: dir}}
	e := &env{sys: mustNATS(tb, cfg), workerEnv: []string{"DURABLE_IMPL=natsjobs", "DURABLE_ADDR=" + dir}}
	e.handOff = func() { e.sys.Close() }
	e.restart = func(tb testing.TB, kill bool) {
		// In process the server cannot be killed apart from its client:
		// Close flushes and stops it, Open starts it on the same store.
		e.sys.Close()
		e.sys = mustNATS(tb, cfg)
	}
	tb.Cleanup(func() { e.sys.Close() })
	return e
}

// serverEnv is the env of a system whose server runs as a process of its
// own: connect opens a client on it, name and addr tell a worker process
// how to reach it.
func serverEnv(tb testing.TB, s *server, name, addr string, connect func(testing.TB) system) *env {
	e := &env{srv: s, sys: connect(tb), workerEnv: []string{"DURABLE_IMPL=" + name, "DURABLE_ADDR=" + addr}}
	e.restart = func(tb testing.TB, kill bool) {
		e.sys.Close()
		if kill {
			s.kill()
		} else {
			s.stop()
		}
		s.start(tb)
		e.sys = connect(tb)
	}
	tb.Cleanup(func() { e.sys.Close() })
	return e
}

func openNATSExternal(tb testing.TB) *env {
	s := startNATS(tb)
	cfg := natsjobs.Config{URL: "nats://" + s.addr}
	return serverEnv(tb, s, "natsjobs-ext", s.addr, func(tb testing.TB) system { return mustNATS(tb, cfg) })
}

func openAsynqEnv(tb testing.TB) *env {
	s := startRedis(tb)
	return serverEnv(tb, s, "asynq", s.addr, func(testing.TB) system { return openAsynq(s.addr) })
}

func openRiverEnv(tb testing.TB) *env {
	s, dsn := startPostgres(tb)
	return serverEnv(tb, s, "river", dsn, func(tb testing.TB) system { return mustRiver(tb, dsn) })
}
