package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/ttlkit/ttlkit/natsjobs"
)

// pki is a throwaway CA with a server certificate for 127.0.0.1 and a
// client certificate, written as PEM files into a directory.
type pki struct {
	dir                           string
	pool                          *x509.CertPool
	server, client                tls.Certificate
	caFile, clientCert, clientKey string
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir(), pool: x509.NewCertPool()}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "natsjobs test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	p.pool.AddCert(caCert)
	p.caFile = p.write(t, "ca.pem", "CERTIFICATE", caDER)
	leaf := func(serial int64, usage x509.ExtKeyUsage, ip net.IP) (tls.Certificate, []byte, []byte) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "natsjobs test"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		if ip != nil {
			tmpl.IPAddresses = []net.IP{ip}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, _ := x509.MarshalECPrivateKey(key)
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, der, keyDER
	}
	p.server, _, _ = leaf(2, x509.ExtKeyUsageServerAuth, net.ParseIP("127.0.0.1"))
	var der, keyDER []byte
	p.client, der, keyDER = leaf(3, x509.ExtKeyUsageClientAuth, nil)
	p.clientCert = p.write(t, "client.pem", "CERTIFICATE", der)
	p.clientKey = p.write(t, "client-key.pem", "EC PRIVATE KEY", keyDER)
	return p
}

func (p *pki) write(t *testing.T, name, kind string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The CLI's TLS flags: it verifies the server with --tls-ca and presents
// a client certificate with --tls-cert and --tls-key to a server that
// requires one; without them the server (or the CLI) refuses the
// connection: exit code 3.
func TestTLS(t *testing.T) {
	p := newPKI(t)
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
		TLS: true, TLSVerify: true, TLSTimeout: 2,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{p.server}, ClientCAs: p.pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server did not start")
	}
	ctx := context.Background()
	tlsc := &tls.Config{RootCAs: p.pool, Certificates: []tls.Certificate{p.client}, MinVersion: tls.VersionTLS12}
	c, err := natsjobs.Open(ctx, natsjobs.Config{URL: srv.ClientURL(), Options: []nats.Option{nats.Secure(tlsc)}, Queues: []string{"q"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Enqueue(ctx, natsjobs.Job{Queue: "q", ID: "j-1"}); err != nil {
		t.Fatal(err)
	}
	u := "--url=" + srv.ClientURL()
	want(t, 0, []string{`(?m)^q +active +0 +1 `}, u, "--tls-ca", p.caFile, "--tls-cert", p.clientCert, "--tls-key", p.clientKey, "queues")
	want(t, 3, []string{`certificate signed by unknown authority`}, u, "--tls-cert", p.clientCert, "--tls-key", p.clientKey, "--timeout", "2s", "queues")
	r := want(t, 3, []string{`server unavailable`}, u, "--tls-ca", p.caFile, "--timeout", "2s", "queues")
	t.Logf("without a client certificate: %s", r.stderr)
}
