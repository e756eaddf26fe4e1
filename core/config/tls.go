package config

import (
	"crypto/tls"
	"crypto/x509"
	"os"
)

// validateTLS checks a listener's tls block: both files or neither, each
// readable, the pair a usable certificate and key, the client CA a PEM
// certificate.
func (c *Config) validateTLS(key string, t TLS, add func(string, ...any)) {
	if !t.On() {
		if t.ClientCAFile != "" {
			add("%s.client_ca_file: needs %s.cert_file and %s.key_file", key, key, key)
		}
		return
	}
	if t.CertFile == "" || t.KeyFile == "" {
		add("%s: cert_file and key_file go together (both or neither)", key)
		return
	}
	r := c.ResolveTLS(t)
	ok := true
	for _, f := range []struct{ k, p string }{{"cert_file", r.CertFile}, {"key_file", r.KeyFile}, {"client_ca_file", r.ClientCAFile}} {
		if f.p == "" {
			continue
		}
		fh, err := os.Open(f.p)
		if err != nil {
			add("%s.%s: %v", key, f.k, err)
			ok = false
			continue
		}
		_ = fh.Close()
	}
	if !ok {
		return
	}
	if _, err := tls.LoadX509KeyPair(r.CertFile, r.KeyFile); err != nil {
		add("%s: cert_file and key_file: %v", key, err)
	}
	if r.ClientCAFile != "" {
		b, err := os.ReadFile(r.ClientCAFile)
		if err == nil && !x509.NewCertPool().AppendCertsFromPEM(b) {
			add("%s.client_ca_file: %s holds no PEM certificate", key, r.ClientCAFile)
		}
	}
}
