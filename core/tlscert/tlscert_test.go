package tlscert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func pair(t *testing.T, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// A renewal caught half-written (new certificate, old key) keeps the old
// pair in service; once the key follows, the new pair is served.
func TestReloader_HalfWrittenRenewalKeepsOldPair(t *testing.T) {
	dir := t.TempDir()
	cf, kf := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	c1, k1 := pair(t, "one")
	c2, k2 := pair(t, "two")
	write := func(p string, b []byte) {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(cf, c1)
	write(kf, k1)
	r, err := New("api", cf, kf, nil)
	if err != nil {
		t.Fatal(err)
	}
	cn := func() string { return r.Certificate().Leaf.Subject.CommonName }
	if cn() != "one" {
		t.Fatal(cn())
	}
	write(cf, c2) // key not yet renewed: mismatch
	if cn() != "one" {
		t.Fatalf("mismatched pair served: %s", cn())
	}
	write(kf, k2)
	if cn() != "two" {
		t.Fatalf("renewed pair not served: %s", cn())
	}
	var b strings.Builder
	WriteMetrics(&b, r)
	if !strings.Contains(b.String(), `mindrouter_tls_certificate_expiry_timestamp_seconds{listener="api"} `) {
		t.Fatal(b.String())
	}
	if _, err := ServerConfig(r, filepath.Join(dir, "missing.pem")); err == nil {
		t.Fatal("a missing client CA file was accepted")
	}
}

// ca makes a CA and a client certificate it signed.
func ca(t *testing.T, cn string) (caPEM []byte, client tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano() + 1), Subject: pkix.Name{CommonName: cn + "-client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestServerConfig_ClientCAReloaded: replacing client_ca_file changes
// which client certificates the listener accepts, without a restart.
func TestServerConfig_ClientCAReloaded(t *testing.T) {
	dir := t.TempDir()
	cf, kf, caf := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem"), filepath.Join(dir, "ca.pem")
	c, k := pair(t, "server")
	ca1, client1 := ca(t, "ca-one")
	ca2, client2 := ca(t, "ca-two")
	for p, b := range map[string][]byte{cf: c, kf: k, caf: ca1} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r, err := New("metrics", cf, kf, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ServerConfig(r, caf)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				_ = conn.(*tls.Conn).Handshake()
				_, _ = conn.Write([]byte("ok"))
			}()
		}
	}()
	dial := func(cert tls.Certificate) error {
		conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}})
		if err != nil {
			return err
		}
		defer conn.Close()
		buf := make([]byte, 2)
		_, err = io.ReadFull(conn, buf) // TLS 1.3 reports a refused client certificate on the first read
		return err
	}
	if err := dial(client1); err != nil {
		t.Fatalf("client of the configured CA: %v", err)
	}
	if err := dial(client2); err == nil {
		t.Fatal("client of another CA accepted")
	}
	if err := os.WriteFile(caf, append(ca2, '\n'), 0o600); err != nil { // a different size: seen as changed
		t.Fatal(err)
	}
	if err := dial(client2); err != nil {
		t.Fatalf("client of the new CA after the CA file changed: %v", err)
	}
	if err := dial(client1); err == nil {
		t.Fatal("client of the removed CA still accepted")
	}
}
