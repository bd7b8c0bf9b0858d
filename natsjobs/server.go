package natsjobs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
)

// Server is a NATS server that Open starts inside this process and Close
// stops; package natsjobs/embedded provides it (embedded.Server). It is an
// interface, and package embedded a package of its own, so that a worker
// that connects by URL links no nats-server.
type Server interface {
	// StartServer starts the server. It returns client options that
	// reach it in memory (nats.InProcessServer, and the credentials it
	// requires): Open dials no address. url is the address other
	// processes connect to, empty if it accepts none. stop shuts the
	// server down, its store flushed; Close (or a failing Open) calls it
	// once, after closing the connection. An error about a bad
	// configuration wraps ErrInvalid.
	StartServer() (opts []nats.Option, url string, stop func(), err error)
}

// inProcessURL is the address Open gives nats.Connect for Config.Server:
// the in-process connection replaces the dial, so it is only a name, and
// not tls:// (which would make the client ask the server for TLS).
const inProcessURL = "nats://in-process"

// minServer is the oldest server version Open accepts: message schedules,
// which carry delayed and cron jobs, arrived in 2.14.
var minServer = [3]int{2, 14, 0}

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
