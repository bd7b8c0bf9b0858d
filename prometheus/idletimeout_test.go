package ttlprom_test

import (
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ttlkit/ttlkit/idletimeout"
	ttlprom "github.com/ttlkit/ttlkit/prometheus"
)

// noListener is a net.Listener that never accepts: the test tracks its
// connections with Listener.Wrap.
type noListener struct{ done chan struct{} }

func (l noListener) Accept() (net.Conn, error) { <-l.done; return nil, net.ErrClosed }
func (l noListener) Close() error              { close(l.done); return nil }
func (l noListener) Addr() net.Addr            { return &net.TCPAddr{} }

func TestListenerCollector(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := idletimeout.NewListener(noListener{make(chan struct{})}, idletimeout.Config{IdleTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		var clients []net.Conn
		var conns []net.Conn
		for range 2 {
			client, server := net.Pipe()
			clients = append(clients, client)
			c, err := l.Wrap(server)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		defer func() {
			for _, c := range clients {
				c.Close()
			}
		}()
		conns[0].Close()            // closed by the server
		time.Sleep(3 * time.Second) // the other one is reaped as idle
		synctest.Wait()
		check(t, ttlprom.NewListenerCollector("api", l), `
# HELP ttlkit_idle_accepted_total Connections returned by Accept.
# TYPE ttlkit_idle_accepted_total counter
ttlkit_idle_accepted_total{listener="api"} 0
# HELP ttlkit_idle_closed_total Tracked connections closed, by Close or by a reap.
# TYPE ttlkit_idle_closed_total counter
ttlkit_idle_closed_total{listener="api"} 2
# HELP ttlkit_idle_events_total Expired timeouts reported: reaps and OnIdle calls.
# TYPE ttlkit_idle_events_total counter
ttlkit_idle_events_total{listener="api"} 1
# HELP ttlkit_idle_kept_total Events for which OnIdle returned Keep.
# TYPE ttlkit_idle_kept_total counter
ttlkit_idle_kept_total{listener="api"} 0
# HELP ttlkit_idle_onidle_panics_total OnIdle calls that panicked.
# TYPE ttlkit_idle_onidle_panics_total counter
ttlkit_idle_onidle_panics_total{listener="api"} 0
# HELP ttlkit_idle_open_connections Tracked connections neither closed nor released.
# TYPE ttlkit_idle_open_connections gauge
ttlkit_idle_open_connections{listener="api"} 0
# HELP ttlkit_idle_reaped_total Connections closed because a timeout expired, by timeout; included in closed.
# TYPE ttlkit_idle_reaped_total counter
ttlkit_idle_reaped_total{listener="api",reason="idle"} 1
ttlkit_idle_reaped_total{listener="api",reason="read"} 0
ttlkit_idle_reaped_total{listener="api",reason="write"} 0
# HELP ttlkit_idle_released_total Connections released from tracking (hijacked, for example).
# TYPE ttlkit_idle_released_total counter
ttlkit_idle_released_total{listener="api"} 0
# HELP ttlkit_idle_wrapped_total Connections tracked by Listener.Wrap.
# TYPE ttlkit_idle_wrapped_total counter
ttlkit_idle_wrapped_total{listener="api"} 2
`)
	})
}
