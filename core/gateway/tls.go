package gateway

import (
	"crypto/tls"
	"io"
	"log/slog"

	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/tlscert"
)

// listenerTLS is a listener's TLS configuration, nil when its tls block
// is empty. The certificate is re-read when its files change.
func listenerTLS(cfg *config.Config, name string, t config.TLS, log *slog.Logger) (*tlscert.Reloader, *tls.Config, error) {
	if !t.On() {
		return nil, nil, nil
	}
	r := cfg.ResolveTLS(t)
	rl, err := tlscert.New(name, r.CertFile, r.KeyFile, log)
	if err != nil {
		return nil, nil, err
	}
	tc, err := tlscert.ServerConfig(rl, r.ClientCAFile)
	if err != nil {
		return nil, nil, err
	}
	return rl, tc, nil
}

// tlsMetrics is the certificate expiry gauge of the TLS listeners.
func tlsMetrics(rs []*tlscert.Reloader) func(io.Writer) {
	return func(w io.Writer) { tlscert.WriteMetrics(w, rs...) }
}
