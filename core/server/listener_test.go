package server

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/config"
)

// acceptLoop accepts on l until it fails, handing over each connection.
func acceptLoop(t testing.TB, l net.Listener) <-chan net.Conn {
	t.Helper()
	ch := make(chan net.Conn, 16)
	go func() {
		defer close(ch)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			ch <- c
		}
	}()
	return ch
}

func dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func accepted(t testing.TB, ch <-chan net.Conn) net.Conn {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(2 * time.Second):
		t.Fatal("no connection accepted")
		return nil
	}
}

func noAccept(t testing.TB, ch <-chan net.Conn) {
	t.Helper()
	select {
	case c := <-ch:
		t.Fatalf("connection %v accepted over the limit", c.RemoteAddr())
	case <-time.After(100 * time.Millisecond):
	}
}

// wantRefused reads the overload answer the client gets and the close
// that follows it.
func wantRefused(t testing.TB, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no HTTP response on a refused connection: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" || !resp.Close ||
		resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("refusal: %d %v", resp.StatusCode, resp.Header)
	}
	if cl, _ := strconv.Atoi(resp.Header.Get("Content-Length")); cl != len(body) {
		t.Fatalf("Content-Length %d, body %d bytes", cl, len(body))
	}
	var v struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.Error.Type != "server_error" || v.Error.Message == "" {
		t.Fatalf("body %q: %v", body, err)
	}
	if n, err := br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("the refused connection stayed open: %d %v", n, err)
	}
}

func TestLimitListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var refused atomic.Uint64
	l := newLimitListener(inner, 2, &refused)
	defer l.Close()
	ll := l.(*limitListener)
	ch := acceptLoop(t, l)
	addr := inner.Addr().String()

	dial(t, addr)
	dial(t, addr)
	a, b := accepted(t, ch), accepted(t, ch)
	if ll.open.Load() != 2 {
		t.Fatalf("open %d", ll.open.Load())
	}

	// The third gets the 503 and is closed; it is never handed out.
	wantRefused(t, dial(t, addr))
	noAccept(t, ch)
	if refused.Load() != 1 || ll.open.Load() != 2 {
		t.Fatalf("refused %d open %d", refused.Load(), ll.open.Load())
	}

	// Closing one frees its slot; closing it again frees nothing more.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	_ = a.Close()
	_ = a.Close()
	if ll.open.Load() != 1 {
		t.Fatalf("open %d after closing one connection three times", ll.open.Load())
	}
	d := dial(t, addr)
	c := accepted(t, ch)
	if ll.open.Load() != 2 {
		t.Fatalf("open %d", ll.open.Load())
	}
	// The admitted connection works.
	if _, err := c.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2)
	_ = d.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.ReadFull(d, buf); err != nil || string(buf) != "hi" {
		t.Fatalf("%q %v", buf, err)
	}

	wantRefused(t, dial(t, addr))
	if refused.Load() != 2 {
		t.Fatalf("refused %d", refused.Load())
	}
	b.Close()
	c.Close()
	if ll.open.Load() != 0 {
		t.Fatalf("open %d after closing all", ll.open.Load())
	}
}

// Accept returns the inner listener's error (the server's Serve ends).
func TestLimitListener_CloseEndsAccept(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var refused atomic.Uint64
	l := newLimitListener(inner, 1, &refused)
	done := make(chan error, 1)
	go func() { _, err := l.Accept(); done <- err }()
	time.Sleep(20 * time.Millisecond)
	l.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Accept returned no error after Close")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Accept did not return after Close")
	}
}

// Through the server: max_connections caps what Serve accepts.
func TestServe_MaxConnections(t *testing.T) {
	s := newTestServer(t, func(c *config.Config) { c.Limits.MaxConnections = 1 })
	addr := serve(t, s)
	idle := dial(t, addr) // holds the only slot (keep-alive, no request yet)
	_ = idle
	time.Sleep(50 * time.Millisecond)
	wantRefused(t, dial(t, addr))
	if s.met.connRefused.Load() != 1 {
		t.Fatalf("connRefused %d", s.met.connRefused.Load())
	}
}
