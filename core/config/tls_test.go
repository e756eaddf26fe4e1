package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse_TLSAndDataDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "junk.pem"), []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, yaml, wantErr string }{
		{"cert without key", "tls: {cert_file: junk.pem}\n", "tls: cert_file and key_file go together"},
		{"missing files", "tls: {cert_file: nope.crt, key_file: nope.key}\n", "tls.cert_file: open"},
		{"not a pair", "tls: {cert_file: junk.pem, key_file: junk.pem}\n", "tls: cert_file and key_file:"},
		{"client CA alone", "metrics: {listen: '127.0.0.1:0', tls: {client_ca_file: junk.pem}}\n", "metrics.tls.client_ca_file: needs"},
		{"metrics tls without listener", "metrics: {tls: {cert_file: a, key_file: b}}\n", "metrics.tls: needs metrics.listen"},
		{"empty data_dir", "data_dir: ''\n", "data_dir: required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), dir)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
		})
	}

	// Data files resolve against data_dir (relative to the working
	// directory), files read against the config file's directory.
	c, err := Parse([]byte("data_dir: /var/lib/mindrouter\nstore: {dsn: mr.db}\n"), "/etc/mindrouter")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.StoreDSN(); got != "/var/lib/mindrouter/mr.db" {
		t.Fatalf("store path %s", got)
	}
	if got := c.DataPath(c.Audit.Spool); got != "/var/lib/mindrouter/audit-spool" {
		t.Fatalf("spool %s", got)
	}
	if got := c.LegacyStorePath(); got != "/etc/mindrouter/mr.db" {
		t.Fatalf("legacy store path %s", got)
	}
	if got := c.ResolveTLS(TLS{CertFile: "tls/crt.pem"}).CertFile; got != "/etc/mindrouter/tls/crt.pem" {
		t.Fatalf("cert path %s", got)
	}
	if d := Default(); d.StoreDSN() != filepath.Join("data", "mindrouter.db") {
		t.Fatalf("default store %s", d.StoreDSN())
	}
}
