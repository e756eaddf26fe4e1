package tlscert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
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
