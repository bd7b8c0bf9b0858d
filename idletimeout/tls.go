package idletimeout

import (
	"crypto/tls"
	"net"
)

// NewTLSListener returns a listener that serves TLS over l, as
// tls.NewListener(l, config) does, and bounds each connection's handshake
// by l's Config.HandshakeTimeout: a connection whose handshake has not
// completed that long after it was accepted is reaped (ReasonHandshake,
// Stats.ReapedHandshake), whether its client sent nothing, part of a
// ClientHello, or stalled later. The idle Listener stays under TLS, so
// handshake and encrypted bytes count as activity and the other limits
// apply as without TLS; [ConnState] finds the *Conn under the *tls.Conn.
//
// Accept returns a *tls.Conn, as net/http expects. With a
// HandshakeTimeout, Accept also starts the handshake on a new goroutine,
// which ends with it; the server's own Handshake or first Read then waits
// for that handshake and gets its result, and the handshake's bytes are
// no transfer for MinReadRate: a client that handshakes and then waits (a
// browser's preconnect) is left to the idle timeouts. Without one it
// starts nothing, and under [ConnState] the handshake's bytes count as the
// start of the first request head, so such a client is reaped for the
// read rate once they no longer pay for its silence.
// config must be non-nil and, as for tls.NewListener, hold a certificate
// or GetCertificate (or GetConfigForClient).
func NewTLSListener(l *Listener, config *tls.Config) net.Listener {
	return &tlsListener{l: l, config: config}
}

type tlsListener struct {
	l      *Listener
	config *tls.Config
}

// Accept waits for the next connection and returns it as a *tls.Conn over
// a *Conn.
func (t *tlsListener) Accept() (net.Conn, error) {
	c, err := t.l.AcceptConn()
	if err != nil {
		return nil, err
	}
	tc := tls.Server(c, t.config)
	if d := t.l.cfg.handshake; d > 0 {
		c.handshakeDue.Store(addSat(c.born, d))
		go func() {
			if tc.Handshake() == nil {
				c.handshakeDue.Store(0)
				// The handshake's bytes are no request: the next byte
				// read begins a transfer (TestTLSHandshakeIsNoRequestHead).
				c.boundary(false)
			}
		}()
	}
	return tc, nil
}

// Close closes the idle Listener (see Listener.Close).
func (t *tlsListener) Close() error { return t.l.Close() }

// Addr returns the listener's address.
func (t *tlsListener) Addr() net.Addr { return t.l.Addr() }
