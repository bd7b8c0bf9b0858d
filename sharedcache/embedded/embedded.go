package embedded

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/ttlkit/ttlkit/sharedcache/internal/opterr"
)

// Server describes a nats-server with JetStream to run inside this
// process. Set it as sharedcache.NATSConfig.Server: sharedcache.NATS
// starts it (StartServer) and NATSStore.Close stops it. The zero value is
// a server only this process reaches, its data in a temporary directory.
type Server struct {
	// Listen is the address ("127.0.0.1:4222"; port 0 picks a free one,
	// see sharedcache.NATSStore.ClientURL) on which the server accepts the
	// other instances. Empty means no port: only this process, connected
	// in memory, uses the server.
	Listen string

	// StoreDir is the server's JetStream directory. Empty means a
	// temporary directory that stopping the server removes.
	StoreDir string
}

// StartServer starts the server and waits until it accepts connections
// (at most 10 s); sharedcache.NATS calls it. opts connect to the server in
// memory; url is the address other processes connect to, empty without
// Listen; stop shuts the server down and removes a temporary StoreDir. A
// bad Listen is an error wrapping sharedcache.ErrOptions.
func (s Server) StartServer() (opts []nats.Option, url string, stop func(), err error) {
	tmp, dir := "", s.StoreDir
	if dir == "" {
		d, err := os.MkdirTemp("", "sharedcache-*")
		if err != nil {
			return nil, "", nil, fmt.Errorf("sharedcache: store dir: %w", err)
		}
		dir, tmp = d, d
	}
	srv, err := start(s.Listen, dir)
	if err != nil {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
		return nil, "", nil, err
	}
	if s.Listen != "" {
		url = srv.ClientURL()
	}
	stop = func() {
		srv.Shutdown()
		srv.WaitForShutdown()
		if tmp != "" {
			os.RemoveAll(tmp)
		}
	}
	return []nats.Option{nats.InProcessServer(srv)}, url, stop, nil
}

// start starts a JetStream server on dir, listening on listen ("" for
// none).
func start(listen, dir string) (*server.Server, error) {
	opts := &server.Options{
		ServerName: "sharedcache",
		JetStream:  true,
		StoreDir:   dir,
		NoLog:      true,
		NoSigs:     true,
		DontListen: listen == "",
	}
	if listen != "" {
		host, port, err := net.SplitHostPort(listen)
		if err == nil {
			opts.Host = host
			opts.Port, err = strconv.Atoi(port)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: embedded.Server.Listen %q: %v", opterr.ErrOptions, listen, err)
		}
		if opts.Port == 0 {
			opts.Port = server.RANDOM_PORT
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("sharedcache: embedded server: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("sharedcache: embedded server did not start")
	}
	return srv, nil
}
