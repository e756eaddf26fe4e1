package testsvc

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// Proxy is a TCP proxy on loopback in front of a server (MariaDB, Redis),
// for tests that need the server unreachable without stopping a server
// the whole test binary shares: Cut closes every connection and refuses
// new ones, as a dead server's host would; Restore accepts them again on
// the same address.
type Proxy struct {
	Addr string // 127.0.0.1:port, to give clients instead of the server's

	target string
	mu     sync.Mutex
	ln     net.Listener // nil while cut
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// StartProxy proxies to target until the test ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	t.Cleanup(func() { p.Cut(); p.wg.Wait() })
	return p
}

func (p *Proxy) serve(ln net.Listener) {
	p.ln = ln
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.pipe(c) })
		}
	})
}

func (p *Proxy) pipe(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil { // cut while dialling
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go cp(up, c)
	go cp(c, up)
	<-done
	c.Close()
	up.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// Cut closes the listener and every proxied connection: clients see
// their connections reset and new ones refused.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, as from a dead server
		}
		c.Close()
	}
	clear(p.conns)
}

// Restore listens again on Addr after a Cut.
func (p *Proxy) Restore(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		return
	}
	ln, err := net.Listen("tcp", p.Addr)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		t.Fatalf("proxy: listen again on %s: %v", p.Addr, err)
	}
	p.serve(ln)
}

// DSNVia is m's DSN through p (a Proxy in front of m.Addr).
func (m *MariaDB) DSNVia(p *Proxy) string {
	cfg, err := mysql.ParseDSN(m.DSN)
	if err != nil {
		panic("testsvc: our own DSN does not parse: " + err.Error())
	}
	cfg.Addr = p.Addr
	return cfg.FormatDSN()
}
