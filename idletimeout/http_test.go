package idletimeout

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// httpSetup runs an http.Server on a tracked pipe listener in a synctest
// bubble and returns a client dialing it. The server and client are shut
// down when the bubble's function returns.
func httpSetup(t *testing.T, cfg Config, hook bool, h http.HandlerFunc) (*Listener, *http.Client, func()) {
	l, pl := newPipeServer(t, cfg)
	srv := &http.Server{Handler: h}
	if hook {
		srv.ConnState = l.ConnState
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(l)
	}()
	tr := &http.Transport{DialContext: pl.DialContext}
	stop := func() {
		tr.CloseIdleConnections()
		srv.Close()
		<-served
	}
	return l, &http.Client{Transport: tr}, stop
}

// TestHTTPSlowHandlerNotReaped: with the ConnState hook, a handler slower
// than the idle timeout is not reaped, and the connection is reaped once it
// sits idle between requests; without the hook the slow request is cut.
func TestHTTPSlowHandlerNotReaped(t *testing.T) {
	cases := []struct {
		name    string
		hook    bool
		wantErr bool
	}{
		{"with ConnState hook", true, false},
		{"without hook", false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				handled := make(chan struct{})
				l, client, stop := httpSetup(t, Config{IdleTimeout: tT, Resolution: tRes}, tc.hook, func(w http.ResponseWriter, r *http.Request) {
					defer close(handled)
					time.Sleep(3 * tT)
					io.WriteString(w, "slow")
				})
				defer func() {
					<-handled
					stop()
				}()
				// POST: the Transport does not retry it on a fresh connection.
				resp, err := client.Post("http://pipe/", "text/plain", nil)
				if tc.wantErr {
					if err == nil {
						resp.Body.Close()
						t.Fatalf("slow request without the hook succeeded, want it cut by the reap")
					}
					if st := l.Stats(); st.ReapedIdle != 1 {
						t.Errorf("Stats %+v, want 1 reaped", st)
					}
					return
				}
				if err != nil {
					t.Fatalf("slow request: %v", err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != "slow" {
					t.Errorf("body %q, want %q", b, "slow")
				}
				// The idle keep-alive connection is reaped after the response.
				time.Sleep(tT + 2*tRes)
				synctest.Wait()
				if st := l.Stats(); st.ReapedIdle != 1 || st.Open != 0 {
					t.Errorf("after idling: Stats %+v, want the keep-alive connection reaped", st)
				}
			})
		})
	}
}

// TestHTTPHijackReleased: a hijacked connection is released from tracking
// and lives on however long it idles.
func TestHTTPHijackReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, Config{IdleTimeout: tT, Resolution: tRes})
		done := make(chan struct{})
		srv := &http.Server{ConnState: l.ConnState, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, rw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("Hijack: %v", err)
				return
			}
			defer close(done)
			defer c.Close()
			time.Sleep(5 * tT)
			rw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nlater")
			rw.Flush()
		})}
		served := make(chan struct{})
		go func() {
			defer close(served)
			srv.Serve(l)
		}()
		c, err := pl.Dial()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: pipe\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("response after 5 idle timeouts on a hijacked connection: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		if string(b) != "later" {
			t.Errorf("body %q, want %q", b, "later")
		}
		<-done
		if st := l.Stats(); st.Released != 1 || st.Events != 0 {
			t.Errorf("Stats %+v, want 1 released, no event", st)
		}
		srv.Close()
		<-served
	})
}

// TestHTTPServeTCP: http.Server.Serve over a tracked loopback listener
// serves requests and reaps the idle keep-alive connection.
func TestHTTPServeTCP(t *testing.T) {
	l := listenTCP(t, Config{IdleTimeout: 250 * time.Millisecond, Resolution: 5 * time.Millisecond}) // wide: a loaded CI machine
	srv := &http.Server{ConnState: ConnState, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello")
	})}
	go srv.Serve(l)
	defer srv.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	for range 3 {
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		if string(b) != "hello" {
			t.Fatalf("body %q, want hello", b)
		}
	}
	if _, err := br.ReadByte(); err != io.EOF { // waits for the reap
		t.Errorf("idle keep-alive connection: %v, want EOF", err)
	}
	if st := l.Stats(); st.ReapedIdle != 1 || st.Accepted != 1 {
		t.Errorf("Stats %+v, want 1 accepted, 1 reaped", st)
	}
}

// selfSigned returns a TLS config with a fresh self-signed certificate for
// 127.0.0.1, and a client config trusting it.
func selfSigned(t *testing.T) (server, client *tls.Config) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "idletimeout test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
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
		&tls.Config{RootCAs: pool}
}

// TestTLSUnderListener: tls.NewListener over the idle Listener serves TLS;
// the ConnState hook finds the *Conn under the *tls.Conn; the idle TLS
// connection is reaped and the client sees the connection end.
func TestTLSUnderListener(t *testing.T) {
	srvCfg, cliCfg := selfSigned(t)
	idle := listenTCP(t, Config{IdleTimeout: 250 * time.Millisecond, Resolution: 5 * time.Millisecond}) // wide: a loaded CI machine
	tl := tls.NewListener(idle, srvCfg)
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := tl.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
		io.Copy(c, c)
		c.Close()
	}()
	c, err := tls.Dial("tcp", idle.Addr().String(), cliCfg)
	if err != nil {
		t.Fatalf("tls.Dial: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	io.WriteString(c, "ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo over TLS: %q, %v", buf, err)
	}
	sc := <-accepted
	if _, ok := sc.(*tls.Conn); !ok {
		t.Fatalf("accepted %T, want *tls.Conn", sc)
	}
	if ic, ok := FromNetConn(sc); !ok || ic.LastRead().IsZero() {
		t.Errorf("FromNetConn(*tls.Conn) = %v, %v; want the tracked *Conn", ic, ok)
	}
	_, err = c.Read(buf) // waits for the reap
	if err == nil || errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("client Read on the idle TLS connection: %v, want the connection closed", err)
	}
	if st := idle.Stats(); st.ReapedIdle != 1 {
		t.Errorf("Stats %+v, want 1 reaped", st)
	}
}

// TestHTTP2StreamPausesConnection pins what the package documentation
// says of HTTP/2: net/http's HTTP/2 server calls the ConnState hook with
// StateActive when a connection's first stream opens and StateIdle when
// its last one ends, so ConnState pauses it while any stream is open,
// however quiet, and the idle connection is reaped once the streams are
// done (closed outright, where http.Server.IdleTimeout would send a GOAWAY
// first). Unencrypted HTTP/2 here; over TLS the hook finds the *Conn under
// the *tls.Conn.
func TestHTTP2StreamPausesConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, pl := newPipeServer(t, Config{IdleTimeout: tT, Resolution: tRes})
		h2c := new(http.Protocols)
		h2c.SetUnencryptedHTTP2(true)
		var states []http.ConnState
		srv := &http.Server{
			Protocols: h2c,
			ConnState: func(c net.Conn, s http.ConnState) {
				states = append(states, s)
				l.ConnState(c, s)
			},
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(3 * tT) // quiet: no byte either way
				io.WriteString(w, "slow")
			}),
		}
		served := make(chan struct{})
		go func() {
			defer close(served)
			srv.Serve(l)
		}()
		defer func() {
			srv.Close()
			<-served
		}()
		tr := &http.Transport{Protocols: h2c, DialContext: pl.DialContext}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Post("http://pipe/", "text/plain", nil)
		if err != nil {
			t.Fatalf("a quiet HTTP/2 stream of 3 × IdleTimeout: %v, want its response", err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(body) != "slow" || resp.ProtoMajor != 2 {
			t.Fatalf("response HTTP/%d %q, %v; want HTTP/2 \"slow\", nil", resp.ProtoMajor, body, err)
		}
		if st := l.Stats(); st.ReapedIdle != 0 {
			t.Errorf("Stats %+v: the connection was reaped while its stream was open", st)
		}
		time.Sleep(tT + 2*tRes) // the connection sits idle past its timeout
		synctest.Wait()
		if st := l.Stats(); st.ReapedIdle != 1 {
			t.Errorf("Stats %+v after an idle timeout with no stream, want the connection reaped once", st)
		}
		if !slices.Contains(states, http.StateActive) || !slices.Contains(states, http.StateIdle) {
			t.Errorf("ConnState saw %v on an HTTP/2 connection, want active and idle among them", states)
		}
	})
}
