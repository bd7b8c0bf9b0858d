package natsjobs

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// minServer is the oldest server version Open accepts: message schedules,
// which carry delayed and cron jobs, arrived in 2.14.
var minServer = [3]int{2, 14, 0}

// embedded is an in-process nats-server with its store directory locked.
type embedded struct {
	srv     *server.Server
	unlock  func()
	tempDir string // removed on stop; set in Ephemeral mode
}

// startEmbedded starts a JetStream server in this process, for cfg's
// StoreDir or Ephemeral. It listens for clients only when cfg.Listen is
// not empty ("127.0.0.1:0" picks a free port), and requires cfg's
// credentials and TLS of every client.
func startEmbedded(cfg *Config) (*embedded, error) {
	storeDir, ephemeral, listen := cfg.StoreDir, cfg.Ephemeral, cfg.Listen
	e := &embedded{}
	if ephemeral {
		dir, err := os.MkdirTemp("", "natsjobs-*")
		if err != nil {
			return nil, fmt.Errorf("natsjobs: ephemeral store: %w", err)
		}
		storeDir, e.tempDir = dir, dir
	} else if err := os.MkdirAll(storeDir, 0o750); err != nil {
		return nil, fmt.Errorf("natsjobs: store dir: %w", err)
	}
	unlock, err := lockDir(storeDir)
	if err != nil {
		e.removeTemp()
		return nil, err
	}
	e.unlock = unlock

	opts := &server.Options{
		ServerName: "natsjobs",
		JetStream:  true,
		StoreDir:   storeDir,
		NoLog:      true,
		NoSigs:     true,
		DontListen: listen == "",
	}
	switch {
	case cfg.Token != "":
		opts.Authorization = cfg.Token
	case cfg.User != "":
		opts.Username, opts.Password = cfg.User, cfg.Password
	case cfg.NKeySeed != "":
		_, pub, _ := nkeyUser(cfg.NKeySeed) // validated
		opts.Nkeys = []*server.NkeyUser{{Nkey: pub}}
	}
	if cfg.TLS != nil {
		opts.TLS, opts.TLSConfig = true, cfg.TLS.Clone()
		opts.TLSVerify = cfg.TLS.ClientAuth == tls.RequireAndVerifyClientCert
	}
	if listen != "" {
		host, port, err := net.SplitHostPort(listen)
		if err != nil {
			e.stop()
			return nil, invalidf("Config.Listen %q: %v", listen, err)
		}
		opts.Host = host
		if opts.Port, err = strconv.Atoi(port); err != nil {
			e.stop()
			return nil, invalidf("Config.Listen %q: bad port", listen)
		}
		if opts.Port == 0 {
			opts.Port = server.RANDOM_PORT
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		e.stop()
		return nil, fmt.Errorf("natsjobs: embedded server: %w", err)
	}
	e.srv = srv
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		e.stop()
		return nil, fmt.Errorf("natsjobs: embedded server did not start")
	}
	return e, nil
}

// stop shuts the server down (its store is flushed to disk), then releases
// the directory lock and removes an ephemeral directory.
func (e *embedded) stop() {
	if e.srv != nil {
		e.srv.Shutdown()
		e.srv.WaitForShutdown()
	}
	if e.unlock != nil {
		e.unlock()
	}
	e.removeTemp()
}

func (e *embedded) removeTemp() {
	if e.tempDir != "" {
		os.RemoveAll(e.tempDir)
	}
}

// checkVersion returns an error unless version (as the server reports it,
// "2.15.2" or "2.15.0-beta.1") is at least minServer.
func checkVersion(version string) error {
	core, _, _ := strings.Cut(version, "-")
	parts := strings.Split(core, ".")
	if len(parts) < 2 {
		return fmt.Errorf("natsjobs: server version %q not understood; need nats-server %d.%d or newer", version, minServer[0], minServer[1])
	}
	var got [3]int
	for i := 0; i < len(parts) && i < 3; i++ {
		n, err := strconv.Atoi(parts[i])
		if err != nil {
			return fmt.Errorf("natsjobs: server version %q not understood; need nats-server %d.%d or newer", version, minServer[0], minServer[1])
		}
		got[i] = n
	}
	for i := range got {
		if got[i] != minServer[i] {
			if got[i] < minServer[i] {
				return fmt.Errorf("natsjobs: nats-server %s is too old: message schedules need %d.%d or newer", version, minServer[0], minServer[1])
			}
			return nil
		}
	}
	return nil
}
