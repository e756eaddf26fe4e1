package fetchguard

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
)

// pngBytes is a real 1x1 PNG.
var pngBytes = func() []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 1, 1))); err != nil {
		panic(err)
	}
	return b.Bytes()
}()

// server is an httptest server on a chosen loopback address that counts
// the requests it gets.
type server struct {
	*httptest.Server
	hits atomic.Int64
}

// addr is the server's IP:port.
func (s *server) addr() netip.AddrPort { return netip.MustParseAddrPort(s.Listener.Addr().String()) }

// prefix allows exactly the server's IP.
func (s *server) prefix() netip.Prefix {
	a := s.addr().Addr()
	return netip.PrefixFrom(a, a.BitLen())
}

// startServer listens on ip (e.g. "127.0.0.1", "127.0.0.2", "::1").
func startServer(t *testing.T, ip string, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	s.Server = srv
	t.Cleanup(srv.Close)
	return s
}

func servePNG(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "image/png")
	w.Write(pngBytes)
}

// resolver answers from a fixed table and records every name it is asked;
// a name not in the table does not resolve. Tests never reach real DNS.
type resolver struct {
	mu    sync.Mutex
	table map[string][]string
	asked []string
}

func (r *resolver) lookup(_ context.Context, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, host)
	var out []netip.Addr
	for _, s := range r.table[host] {
		out = append(out, netip.MustParseAddr(s))
	}
	if _, ok := r.table[host]; !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

func (r *resolver) questions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.asked...)
}

// newFetcher builds a fetcher whose resolver is res (an empty table when
// nil) and which allows exactly the given prefixes.
func newFetcher(t *testing.T, cfg Config, res *resolver, allow ...netip.Prefix) *Fetcher {
	t.Helper()
	if res == nil {
		res = &resolver{}
	}
	cfg.Resolver = res.lookup
	cfg.AllowPrefixes = append(cfg.AllowPrefixes, allow...)
	f, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(f.Close)
	return f
}

// wantReason fails unless err is an *Error with reason r.
func wantReason(t *testing.T, err error, r Reason) *Error {
	t.Helper()
	var fe *Error
	if !errors.As(err, &fe) {
		t.Fatalf("got error %v (%T), want *Error with reason %v", err, err, r)
	}
	if fe.Reason != r {
		t.Fatalf("got reason %v (%q, cause %v), want %v", fe.Reason, fe.Msg, fe.Err, r)
	}
	return fe
}
