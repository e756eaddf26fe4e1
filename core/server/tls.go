package server

import (
	"crypto/tls"
	"net"
)

// ServeTLS is Serve over TLS: the connection limit counts TCP connections
// (a refused one gets its plain-text 503 without the cost of a handshake),
// and fasthttp sees the *tls.Conn, so requests know they came over TLS.
func (s *Server) ServeTLS(ln net.Listener, cfg *tls.Config) error {
	return s.srv.Serve(tls.NewListener(newLimitListener(ln, s.cfg.Limits.MaxConnections, &s.met.connRefused), cfg))
}
