package embedded

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/ttlkit/ttlkit/natsjobs/internal/natsauth"
)

// ErrInvalid is natsjobs.ErrInvalid (the same value): StartServer's errors
// about a bad Server wrap it.
var ErrInvalid = natsauth.ErrInvalid

// Server describes a nats-server with JetStream to run inside this
// process. Set it as natsjobs.Config.Server: Open starts it (StartServer)
// and Client.Close stops it. StoreDir or Ephemeral is required.
type Server struct {
	// StoreDir is the server's store directory, created if missing. It is
	// locked while the server runs: a second server on it, from any
	// process, fails to start.
	StoreDir string
	// Ephemeral stores the data in a temporary directory that stopping
	// the server (Client.Close) removes: tests, examples. StoreDir must
	// then be empty.
	Ephemeral bool

	// Listen is the address ("127.0.0.1:4222"; port 0 picks one) on which
	// the server accepts other processes, which connect with
	// natsjobs.Config.URL (Client.URL tells the address). Empty: no port
	// at all, this process talks to its server in memory. An address that
	// is not loopback (a host name other than localhost, an unspecified or
	// another interface's address) requires credentials (Token, User or
	// NKeySeed) unless InsecureNoAuth is set: StartServer refuses it
	// otherwise (ErrInvalid), since anyone who reaches the port could
	// enqueue, cancel and read jobs.
	Listen string
	// InsecureNoAuth lets Listen accept clients on a non-loopback address
	// without credentials (a private network that is trusted as a whole).
	InsecureNoAuth bool

	// Token is the token the server requires of every client, this
	// process's in-memory connection included (which presents it by
	// itself). Other processes give the same in their natsjobs.Config.
	// At most one of Token, User with Password, NKeySeed.
	Token string
	// User and Password, together, are the user the server requires of
	// every client, as Token is.
	User string
	// Password goes with User.
	Password string
	// NKeySeed is an nkey user seed ("SU..."; nk -gen user): the server
	// admits its public key, this process's connection signs with it.
	// The seed is a secret, as a password is.
	NKeySeed string
	// TLS is the server's TLS configuration for Listen (it needs Listen
	// and a certificate): clients connecting to Listen must use TLS, and
	// present a verified certificate if ClientAuth is
	// RequireAndVerifyClientCert. This process's in-memory connection
	// does not use it.
	TLS *tls.Config
}

func (s Server) creds() natsauth.Creds {
	return natsauth.Creds{Token: s.Token, User: s.User, Password: s.Password, NKeySeed: s.NKeySeed}
}

func (s Server) validate() error {
	if s.Ephemeral && s.StoreDir != "" {
		return natsauth.Invalidf("embedded.Server: StoreDir and Ephemeral are exclusive")
	}
	if !s.Ephemeral && s.StoreDir == "" {
		return natsauth.Invalidf("embedded.Server: StoreDir is required (or set Ephemeral)")
	}
	if err := s.creds().Check("embedded.Server"); err != nil {
		return err
	}
	if s.TLS != nil {
		if s.Listen == "" {
			return natsauth.Invalidf("embedded.Server: TLS needs Listen")
		}
		if len(s.TLS.Certificates) == 0 && s.TLS.GetCertificate == nil {
			return natsauth.Invalidf("embedded.Server: TLS needs a certificate")
		}
	}
	if s.Listen == "" {
		if s.InsecureNoAuth {
			return natsauth.Invalidf("embedded.Server: InsecureNoAuth without Listen")
		}
		return nil
	}
	host, _, err := net.SplitHostPort(s.Listen)
	if err != nil {
		return natsauth.Invalidf("embedded.Server.Listen %q: %v", s.Listen, err)
	}
	if !s.creds().Set() && !s.InsecureNoAuth && !loopback(host) {
		return natsauth.Invalidf("embedded.Server.Listen %q is not loopback: set Token, User and Password or NKeySeed (or InsecureNoAuth)", s.Listen)
	}
	return nil
}

// loopback reports whether host names only this machine: "localhost" or
// a loopback address. An empty host listens on every interface.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// StartServer starts the server and waits until it accepts connections
// (at most 10 s); natsjobs.Open calls it, through the natsjobs.Server
// interface. It returns the client options that reach the server in
// memory, with the credentials it requires; the URL other processes
// connect to (empty without Listen); and stop, which shuts the server
// down after its store is flushed, releases the directory lock and
// removes an Ephemeral directory (call it once). A bad Server is an error
// wrapping ErrInvalid; a locked StoreDir is an error that says it is in
// use.
func (s Server) StartServer() (opts []nats.Option, url string, stop func(), err error) {
	if err := s.validate(); err != nil {
		return nil, "", nil, err
	}
	r := &running{}
	storeDir := s.StoreDir
	if s.Ephemeral {
		dir, err := os.MkdirTemp("", "natsjobs-*")
		if err != nil {
			return nil, "", nil, fmt.Errorf("natsjobs/embedded: ephemeral store: %w", err)
		}
		storeDir, r.tempDir = dir, dir
	} else if err := os.MkdirAll(storeDir, 0o750); err != nil {
		return nil, "", nil, fmt.Errorf("natsjobs/embedded: store dir: %w", err)
	}
	if r.unlock, err = lockDir(storeDir); err != nil {
		r.stop()
		return nil, "", nil, err
	}
	so := &server.Options{
		ServerName: "natsjobs",
		JetStream:  true,
		StoreDir:   storeDir,
		NoLog:      true,
		NoSigs:     true,
		DontListen: s.Listen == "",
	}
	switch {
	case s.Token != "":
		so.Authorization = s.Token
	case s.User != "":
		so.Username, so.Password = s.User, s.Password
	case s.NKeySeed != "":
		_, pub, _ := natsauth.NKeyUser(s.NKeySeed) // validated
		so.Nkeys = []*server.NkeyUser{{Nkey: pub}}
	}
	if s.TLS != nil {
		so.TLS, so.TLSConfig = true, s.TLS.Clone()
		so.TLSVerify = s.TLS.ClientAuth == tls.RequireAndVerifyClientCert
	}
	if s.Listen != "" {
		host, port, _ := net.SplitHostPort(s.Listen) // validated
		so.Host = host
		if so.Port, err = strconv.Atoi(port); err != nil {
			r.stop()
			return nil, "", nil, natsauth.Invalidf("embedded.Server.Listen %q: bad port", s.Listen)
		}
		if so.Port == 0 {
			so.Port = server.RANDOM_PORT
		}
	}
	if r.srv, err = server.NewServer(so); err != nil {
		r.stop()
		return nil, "", nil, fmt.Errorf("natsjobs/embedded: %w", err)
	}
	r.srv.Start()
	if !r.srv.ReadyForConnections(10 * time.Second) {
		r.stop()
		return nil, "", nil, fmt.Errorf("natsjobs/embedded: the server did not start within 10s")
	}
	opts = append([]nats.Option{nats.InProcessServer(r.srv)}, s.creds().ClientOptions()...)
	if s.Listen != "" {
		url = r.srv.ClientURL()
	}
	return opts, url, r.stop, nil
}

// running is a started server with its store directory locked.
type running struct {
	srv     *server.Server
	unlock  func()
	tempDir string // removed by stop; set with Ephemeral
}

// stop shuts the server down (its store is flushed to disk), then releases
// the directory lock and removes an ephemeral directory.
func (r *running) stop() {
	if r.srv != nil {
		r.srv.Shutdown()
		r.srv.WaitForShutdown()
	}
	if r.unlock != nil {
		r.unlock()
	}
	if r.tempDir != "" {
		os.RemoveAll(r.tempDir)
	}
}
