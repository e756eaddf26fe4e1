// Package tlscert serves a listener's certificate from files that may be
// replaced while the gateway runs (a renewal by certbot, cert-manager or an
// operator): every handshake stats the two files (two cheap syscalls) and,
// when their size or modification time changed, loads the pair again. New
// connections get the new certificate; open connections keep theirs. A
// pair that fails to load (a renewal caught half-written, a key that does
// not match) is logged and the previous certificate stays in service.
package tlscert

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Reloader holds a listener's current certificate.
type Reloader struct {
	name              string
	certFile, keyFile string
	log               *slog.Logger

	mu      sync.Mutex
	seen    fileSig // the files as last tried
	current atomic.Pointer[tls.Certificate]
}

type fileSig struct {
	certSize, keySize int64
	certMod, keyMod   time.Time
}

// New loads the pair now (an error if it does not load). name labels the
// listener in logs and metrics ("api", "metrics").
func New(name, certFile, keyFile string, log *slog.Logger) (*Reloader, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reloader{name: name, certFile: certFile, keyFile: keyFile, log: log}
	sig, err := r.stat()
	if err != nil {
		return nil, err
	}
	c, err := load(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	r.seen = sig
	r.current.Store(c)
	return r, nil
}

func (r *Reloader) stat() (fileSig, error) {
	cs, err := os.Stat(r.certFile)
	if err != nil {
		return fileSig{}, fmt.Errorf("tls %s: %w", r.name, err)
	}
	ks, err := os.Stat(r.keyFile)
	if err != nil {
		return fileSig{}, fmt.Errorf("tls %s: %w", r.name, err)
	}
	return fileSig{certSize: cs.Size(), keySize: ks.Size(), certMod: cs.ModTime(), keyMod: ks.ModTime()}, nil
}

func load(certFile, keyFile string) (*tls.Certificate, error) {
	c, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	if c.Leaf == nil && len(c.Certificate) > 0 {
		if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

// Certificate is the certificate in service, after looking for a change of
// the files.
func (r *Reloader) Certificate() *tls.Certificate {
	r.check()
	return r.current.Load()
}

// GetCertificate is tls.Config.GetCertificate.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.Certificate(), nil
}

// check reloads the pair when the files changed since last tried. A
// failed try is not repeated until the files change again (the second
// file of a renewal being written changes them).
func (r *Reloader) check() {
	sig, err := r.stat()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if r.seen != (fileSig{}) {
			r.log.Warn("tls certificate files unreadable; serving the previous certificate", "listener", r.name, "error", err.Error())
			r.seen = fileSig{}
		}
		return
	}
	if sig == r.seen {
		return
	}
	r.seen = sig
	c, err := load(r.certFile, r.keyFile)
	if err != nil {
		r.log.Warn("tls certificate reload failed; serving the previous certificate", "listener", r.name, "error", err.Error())
		return
	}
	r.current.Store(c)
	r.log.Info("tls certificate reloaded", "listener", r.name, "subject", c.Leaf.Subject.String(),
		"not_after", c.Leaf.NotAfter.UTC().Format(time.RFC3339))
}

// NotAfter is the expiry of the certificate in service.
func (r *Reloader) NotAfter() time.Time {
	c := r.current.Load()
	if c == nil || c.Leaf == nil {
		return time.Time{}
	}
	return c.Leaf.NotAfter
}

// Name is the listener's name.
func (r *Reloader) Name() string { return r.name }

// ServerConfig is a TLS 1.2+ server configuration serving r's certificate
// (ECDHE key exchange with AEAD ciphers only under TLS 1.2; TLS 1.3's
// suites are all modern). clientCAFile, when set, requires client
// certificates signed by one of its CAs.
func ServerConfig(r *Reloader, clientCAFile string) (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: r.GetCertificate,
		CipherSuites: []uint16{
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
			tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
		},
		// fasthttp speaks HTTP/1.1 only.
		NextProtos: []string{"http/1.1"},
	}
	if clientCAFile != "" {
		ca := &caReloader{name: r.name, file: clientCAFile, log: r.log}
		if err := ca.load(); err != nil {
			return nil, err
		}
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		// The CA file is re-read like the certificate (a CA rotation adds
		// the new CA before clients get certificates from it): each
		// handshake gets the pool in service now.
		base := cfg.Clone()
		cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c := base.Clone()
			c.ClientCAs = ca.pool()
			return c, nil
		}
	}
	return cfg, nil
}

// caReloader holds a client CA pool read from a file that may change.
type caReloader struct {
	name, file string
	log        *slog.Logger

	mu      sync.Mutex
	size    int64
	mod     time.Time
	current atomic.Pointer[x509.CertPool]
}

func (c *caReloader) load() error {
	st, err := os.Stat(c.file)
	if err != nil {
		return fmt.Errorf("tls %s: client_ca_file: %w", c.name, err)
	}
	b, err := os.ReadFile(c.file)
	if err != nil {
		return fmt.Errorf("tls %s: client_ca_file: %w", c.name, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return fmt.Errorf("tls %s: client_ca_file %s holds no PEM certificate", c.name, c.file)
	}
	c.size, c.mod = st.Size(), st.ModTime()
	c.current.Store(pool)
	return nil
}

// pool is the CA pool in service, reloaded first when the file changed;
// a file that fails to load keeps the previous pool (logged once).
func (c *caReloader) pool() *x509.CertPool {
	st, err := os.Stat(c.file)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil && (st.Size() != c.size || !st.ModTime().Equal(c.mod)) {
		size, mod := st.Size(), st.ModTime()
		if err := c.load(); err != nil {
			c.size, c.mod = size, mod // not retried until the file changes again
			c.log.Warn("tls client CA reload failed; keeping the previous CAs", "listener", c.name, "error", err.Error())
		} else {
			c.log.Info("tls client CA reloaded", "listener", c.name, "file", c.file)
		}
	}
	return c.current.Load()
}

// WriteMetrics writes the expiry gauge of each listener's certificate.
func WriteMetrics(w io.Writer, rs ...*Reloader) {
	if len(rs) == 0 {
		return
	}
	_, _ = io.WriteString(w, "# HELP mindrouter_tls_certificate_expiry_timestamp_seconds When the certificate a listener serves expires (Unix time).\n"+
		"# TYPE mindrouter_tls_certificate_expiry_timestamp_seconds gauge\n")
	for _, r := range rs {
		r.check() // a renewal shows on the next scrape, handshakes or not
		_, _ = io.WriteString(w, "mindrouter_tls_certificate_expiry_timestamp_seconds{listener=\""+r.name+"\"} "+
			strconv.FormatInt(r.NotAfter().Unix(), 10)+"\n")
	}
}
