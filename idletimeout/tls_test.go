package idletimeout

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"testing"
	"testing/synctest"
	"time"
)

// testTLSConfigs returns a server config with a fresh self-signed
// certificate for "test", and a client config that trusts it.
func testTLSConfigs(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), DNSNames: []string{"test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
		&tls.Config{ServerName: "test", RootCAs: pool}
}

// handshakeConfig: a 2s handshake deadline under a longer idle timeout
// and first-byte deadline.
var handshakeConfig = Config{IdleTimeout: time.Minute, FirstByteTimeout: 30 * time.Second, HandshakeTimeout: 2 * time.Second, Resolution: tRes}

// acceptTLS dials l's pipe listener through NewTLSListener and returns the
// server's *tls.Conn, the *Conn under it and the client's end.
func acceptTLS(t *testing.T, l *Listener, pl *pipeListener, sc *tls.Config) (*tls.Conn, *Conn, net.Conn) {
	t.Helper()
	tl := NewTLSListener(l, sc)
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := tl.Accept()
		ch <- res{c, err}
	}()
	client, err := pl.Dial()
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	tc := r.c.(*tls.Conn)
	c, ok := FromNetConn(tc)
	if !ok {
		t.Fatal("no *Conn under the *tls.Conn")
	}
	return tc, c, client
}

// TestHandshakeTimeoutSilentClient: a client that connects and sends
// nothing is reaped HandshakeTimeout after the accept, exactly (the
// deadline falls on a tick), though the first-byte deadline is longer.
func TestHandshakeTimeoutSilentClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, handshakeConfig)
		defer l.Close()
		start := time.Now()
		_, c, client := acceptTLS(t, l, pl, testServerTLS(t))
		defer client.Close()
		r, took := reapedBy(t, c, start)
		if r != ReasonHandshake || took != handshakeConfig.HandshakeTimeout {
			t.Errorf("reaped for %v after %v, want handshake after exactly %v", r, took, handshakeConfig.HandshakeTimeout)
		}
		if st := l.Stats(); st.ReapedHandshake != 1 {
			t.Errorf("Stats %+v, want ReapedHandshake 1", st)
		}
	})
}

// TestHandshakeTimeoutPartialClientHello: a client that sends the first
// bytes of a ClientHello record and stalls is reaped at the deadline
// exactly: still open 1ms before it, closed at it.
func TestHandshakeTimeoutPartialClientHello(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, handshakeConfig)
		defer l.Close()
		_, _, client := acceptTLS(t, l, pl, testServerTLS(t))
		defer client.Close()
		// A handshake record header announcing 512 bytes, and 4 of them.
		go client.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc})
		time.Sleep(handshakeConfig.HandshakeTimeout - time.Millisecond)
		synctest.Wait()
		if st := l.Stats(); st.Closed != 0 {
			t.Fatalf("Stats %+v 1ms before the handshake deadline, want nothing closed", st)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if st := l.Stats(); st.ReapedHandshake != 1 {
			t.Errorf("Stats %+v at the handshake deadline, want ReapedHandshake 1", st)
		}
	})
}

// TestHandshakeTimeoutCompletedHandshakeKept: on loopback TCP, a client
// that completes its handshake at once and then sends nothing for 5 ×
// HandshakeTimeout (its own read deadline is the workload) is not reaped;
// its data is then served.
func TestHandshakeTimeoutCompletedHandshakeKept(t *testing.T) {
	t.Parallel() // real clock and sockets: it mostly waits
	cfg := Config{IdleTimeout: time.Minute, HandshakeTimeout: 200 * time.Millisecond}
	l := listenTCP(t, cfg)
	sc, cc := testTLSConfigs(t)
	tl := NewTLSListener(l, sc)
	srvErr := make(chan error, 1)
	go func() {
		c, err := tl.Accept()
		if err != nil {
			srvErr <- err
			return
		}
		defer c.Close()
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil {
			srvErr <- err
			return
		}
		_, err = c.Write(buf)
		srvErr <- err
	}()
	tcl, err := tls.Dial("tcp", l.Addr().String(), cc)
	if err != nil {
		t.Fatalf("client handshake: %v", err)
	}
	defer tcl.Close()
	tcl.SetReadDeadline(time.Now().Add(5 * cfg.HandshakeTimeout))
	if _, err := tcl.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("client Read: %v, want its own deadline (Stats %+v)", err, l.Stats())
	}
	tcl.SetReadDeadline(time.Time{})
	if _, err := tcl.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(tcl, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo: %q, %v (Stats %+v)", buf, err, l.Stats())
	}
	if err := <-srvErr; err != nil {
		t.Fatalf("server: %v", err)
	}
	if st := l.Stats(); st.ReapedHandshake != 0 {
		t.Errorf("Stats %+v: a completed handshake was reaped", st)
	}
}

// testServerTLS is a server config whose certificate is never used.
func testServerTLS(t *testing.T) *tls.Config {
	sc, _ := testTLSConfigs(t)
	return sc
}

// TestTLSHandshakeIsNoRequestHead: under ConnState, the bytes a TLS
// client sends in its handshake are no request head: a client that
// handshakes and then waits (a browser's preconnect) is left to the idle
// timeout. Counted as a head it stopped sending, it was reaped for the
// read rate once its handshake's bytes no longer paid for its silence
// (6.6s after the accept here, where IdleTimeout is 10s). NewTLSListener
// ends the read transfer when the handshake completes.
func TestTLSHandshakeIsNoRequestHead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{IdleTimeout: 10 * time.Second, HandshakeTimeout: 2 * time.Second, MinReadRate: 240, RateGrace: 2 * time.Second, Resolution: tRes}
		l, pl := newPipeServer(t, cfg)
		defer l.Close()
		sc, cc := testTLSConfigs(t)
		tc, c, client := acceptTLS(t, l, pl, sc)
		ConnState(tc, http.StateNew)
		tcl := tls.Client(client, cc)
		if err := tcl.Handshake(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { // the client reads what the server sends (session tickets)
			defer close(done)
			tcl.Read(make([]byte, 1))
		}()
		defer func() { client.Close(); <-done }()
		time.Sleep(cfg.IdleTimeout - time.Millisecond)
		synctest.Wait()
		if st := l.Stats(); st.Closed != 0 {
			t.Fatalf("Stats %+v: a client that handshook and waits was reaped before its IdleTimeout", st)
		}
		r, _ := reapedBy(t, c, time.Now())
		if r != ReasonIdle {
			t.Errorf("reaped for %v, want idle", r)
		}
	})
}
