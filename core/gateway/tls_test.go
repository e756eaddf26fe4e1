package gateway

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// testCert is a self-signed ECDSA P-256 certificate for 127.0.0.1 (its own
// CA), as PEM, and the pool that trusts it.
type testCert struct {
	certPEM, keyPEM []byte
	leaf            *x509.Certificate
	pool            *x509.CertPool
}

func newTestCert(t *testing.T, cn string, client bool) testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	if client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return testCert{certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), leaf: leaf, pool: pool}
}

// install writes the pair the way a renewal does: each file written
// aside, then renamed over the old one.
func (c testCert) install(t *testing.T, certFile, keyFile string) {
	t.Helper()
	for _, f := range []struct {
		path string
		b    []byte
	}{{keyFile, c.keyPEM}, {certFile, c.certPEM}} {
		tmp := f.path + ".new"
		if err := os.WriteFile(tmp, f.b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, f.path); err != nil {
			t.Fatal(err)
		}
	}
}

func httpsClient(pool *x509.CertPool, certs ...tls.Certificate) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs}}}
}

// TestTLS_OpenAISDKAndCertificateReload: the API listener serves HTTPS to
// the official OpenAI client trusting the test CA; the certificate files
// are replaced while the gateway runs, a new connection is served the new
// certificate, and a connection opened before keeps working. The metrics
// listener requires a client certificate and exports the expiry gauge.
func TestTLS_OpenAISDKAndCertificateReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	first, second := newTestCert(t, "mindrouter-first", false), newTestCert(t, "mindrouter-second", false)
	first.install(t, certFile, keyFile)
	clientCert := newTestCert(t, "prometheus", true)
	caFile := filepath.Join(dir, "client-ca.crt")
	if err := os.WriteFile(caFile, clientCert.certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, fmt.Sprintf(`tls: {cert_file: %q, key_file: %q}
metrics:
  listen: 127.0.0.1:0
  tls: {cert_file: %q, key_file: %q, client_ca_file: %q}
`, certFile, keyFile, certFile, keyFile, caFile))
	base := "https://" + e.gw.Addr.String()
	ctx := context.Background()

	ask := func(hc *http.Client) {
		t.Helper()
		c := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(adminKey), option.WithMaxRetries(0), option.WithHTTPClient(hc))
		resp, err := c.Chat.Completions.New(ctx, chatParams(vllmModel, "Hello over TLS"))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Choices) != 1 || resp.Choices[0].Message.Content == "" {
			t.Fatalf("choices = %+v", resp.Choices)
		}
	}
	peerCN := func(pool *x509.CertPool) string {
		t.Helper()
		conn, err := tls.Dial("tcp", e.gw.Addr.String(), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		st := conn.ConnectionState()
		if st.Version < tls.VersionTLS12 {
			t.Fatalf("TLS version %x", st.Version)
		}
		return st.PeerCertificates[0].Subject.CommonName
	}

	before := httpsClient(first.pool)
	ask(before)
	if cn := peerCN(first.pool); cn != "mindrouter-first" {
		t.Fatalf("served %q", cn)
	}
	// Plain HTTP on the TLS port is not served.
	if resp, err := http.Get("http://" + e.gw.Addr.String() + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("plain HTTP answered on the TLS listener")
		}
	}
	// TLS 1.1 is refused.
	if c, err := tls.Dial("tcp", e.gw.Addr.String(), &tls.Config{RootCAs: first.pool, MaxVersion: tls.VersionTLS11}); err == nil {
		c.Close()
		t.Fatal("a TLS 1.1 handshake succeeded")
	}

	second.install(t, certFile, keyFile)
	if cn := peerCN(second.pool); cn != "mindrouter-second" {
		t.Fatalf("after the renewal, a new connection was served %q", cn)
	}
	ask(httpsClient(second.pool)) // the SDK over a fresh connection, new certificate
	ask(before)                   // the connection opened before the renewal still serves

	// The metrics listener: no client certificate, no answer.
	murl := "https://" + e.gw.MetricsAddr.String() + "/metrics"
	if resp, err := httpsClient(second.pool).Get(murl); err == nil {
		resp.Body.Close()
		t.Fatalf("metrics without a client certificate: %d", resp.StatusCode)
	}
	kp, err := tls.X509KeyPair(clientCert.certPEM, clientCert.keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpsClient(second.pool, kp).Get(murl)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := fmt.Sprintf(`mindrouter_tls_certificate_expiry_timestamp_seconds{listener="api"} %d`, second.leaf.NotAfter.Unix())
	if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
		t.Fatalf("metrics %d, want a line %q", resp.StatusCode, want)
	}
	// Every metric deploy/prometheus/alerts.yml names is exported (those
	// of Redis only with redis.addr set; up is Prometheus' own).
	rules, err := os.ReadFile("../../deploy/prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var fams []string
	for _, n := range metricName.FindAllString(string(rules), -1) {
		n = strings.TrimSuffix(n, "_bucket")
		if n != "mindrouter_redis_up" && n != "mindrouter_fleet_redis_down" && !slices.Contains(fams, n) {
			fams = append(fams, n)
		}
	}
	if m := missingFamilies(fams, string(body)); len(fams) < 8 || len(m) > 0 {
		t.Errorf("alerts.yml names metrics the gateway does not export: %v (of %v)", m, fams)
	}
	// The health gauges the alerts use.
	for _, l := range []string{"mindrouter_store_up 1\n", `mindrouter_backend_breaker_open{backend="gpu1-vllm"} 0` + "\n"} {
		if !strings.Contains(string(body), l) {
			t.Errorf("metrics lack %q", l)
		}
	}
}
