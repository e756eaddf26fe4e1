package backend

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

// backendAt builds a one-backend registry pointing at url and returns it.
func backendAt(t testing.TB, url, idle string) *Backend {
	t.Helper()
	cfg, err := config.Parse(fmt.Appendf(nil, `backends:
  - {name: t, engine: vllm, url: %q, max_concurrent: 16, idle_conn_timeout: %q}
`, url, idle), ".")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r.Backend("t")
}

// post sends a POST with a small body through Do (stream false) or
// DoStream (stream true) and returns the status and body.
func post(b *Backend, stream bool) (int, string, error) {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(b.URL("/v1/chat/completions"))
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.SetBodyString(`{"model":"m"}`)
	if !stream {
		if err := b.Do(req, resp, 5*time.Second); err != nil {
			return 0, "", err
		}
		return resp.StatusCode(), string(resp.Body()), nil
	}
	if err := b.DoStream(req, resp); err != nil {
		return 0, "", err
	}
	body, err := io.ReadAll(resp.BodyStream())
	_ = resp.CloseBodyStream()
	return resp.StatusCode(), string(body), err
}

// httpBackend serves "ok" on addr ("127.0.0.1:0" for any port) with the
// given server-side idle timeout, and counts requests and connections.
type httpBackend struct {
	srv      *http.Server
	addr     string
	requests atomic.Int64
	conns    atomic.Int64
	closed   atomic.Int64
	delay    time.Duration
}

func startHTTPBackend(t *testing.T, addr string, idle, delay time.Duration) *httpBackend {
	t.Helper()
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ { // the old listener's port may take a moment to free up
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	hb := &httpBackend{addr: ln.Addr().String(), delay: delay}
	hb.srv = &http.Server{
		IdleTimeout: idle,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			hb.requests.Add(1)
			if hb.delay > 0 {
				time.Sleep(hb.delay)
			}
			_, _ = io.WriteString(w, "ok")
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			switch s {
			case http.StateNew:
				hb.conns.Add(1)
			case http.StateClosed:
				hb.closed.Add(1)
			}
		},
	}
	go func() { _ = hb.srv.Serve(ln) }()
	t.Cleanup(func() { _ = hb.srv.Close() })
	return hb
}

// A backend that closes idle keep-alive connections sooner than the
// gateway drops them (uvicorn after 5 s): the next request on the pooled
// connection meets a closed socket and must be retried once on a fresh
// one, POST included.
func TestBackend_RetriesConnectionClosedWhileIdle(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			hb := startHTTPBackend(t, "127.0.0.1:0", 50*time.Millisecond, 0)
			b := backendAt(t, "http://"+hb.addr, "10s")
			for i := 0; i < 3; i++ {
				if i > 0 {
					// Wait until the backend has closed the idle connection.
					waitFor(t, func() bool { return hb.closed.Load() == int64(i) })
				}
				code, body, err := post(b, stream)
				if err != nil || code != 200 || body != "ok" {
					t.Fatalf("request %d: %d %q %v", i, code, body, err)
				}
			}
			if n := hb.requests.Load(); n != 3 {
				t.Fatalf("backend saw %d requests, want 3", n)
			}
		})
	}
}

// A backend restarted on the same port between requests: every pooled
// connection is dead, and the retry must use a fresh one, not the next
// dead connection from the pool.
func TestBackend_SurvivesBackendRestart(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			hb := startHTTPBackend(t, "127.0.0.1:0", time.Minute, 30*time.Millisecond)
			b := backendAt(t, "http://"+hb.addr, "10s")
			const n = 8
			fill(t, b, n, stream)
			if c := hb.conns.Load(); c < 2 {
				t.Fatalf("only %d pooled connections", c)
			}
			_ = hb.srv.Close()
			hb2 := startHTTPBackend(t, hb.addr, time.Minute, 0)
			for i := 0; i < n; i++ {
				if code, _, err := post(b, stream); err != nil || code != 200 {
					t.Fatalf("request %d after restart: %d %v", i, code, err)
				}
			}
			if got := hb2.requests.Load(); got != n {
				t.Fatalf("restarted backend saw %d requests, want %d", got, n)
			}
		})
	}
}

// fill sends n concurrent requests so the pool holds several connections.
func fill(t *testing.T, b *Backend, n int, stream bool) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := post(b, stream); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// The pool closes connections idle longer than idle_conn_timeout.
func TestBackend_IdleConnTimeoutHonoured(t *testing.T) {
	hb := startHTTPBackend(t, "127.0.0.1:0", time.Minute, 0)
	b := backendAt(t, "http://"+hb.addr, "100ms")
	if b.client.MaxIdleConnDuration != 100*time.Millisecond || b.stream.MaxIdleConnDuration != 100*time.Millisecond {
		t.Fatalf("MaxIdleConnDuration = %v / %v", b.client.MaxIdleConnDuration, b.stream.MaxIdleConnDuration)
	}
	for _, stream := range []bool{false, true} {
		if _, _, err := post(b, stream); err != nil {
			t.Fatal(err)
		}
	}
	// Both clients' connections are closed by the gateway, not the backend
	// (whose own idle timeout is a minute).
	waitFor(t, func() bool { return hb.closed.Load() == 2 })
	if hb.conns.Load() != 2 {
		t.Fatalf("connections = %d", hb.conns.Load())
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, "the condition", 5*time.Second, cond)
}

// rawBackend accepts connections and runs serve on each, counting the
// requests whose head it read.
type rawBackend struct {
	ln       net.Listener
	requests atomic.Int64
}

func startRawBackend(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) *rawBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rb := &rawBackend{ln: ln}
	var wg sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				rb.requests.Add(1)
				serve(c, br)
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	return rb
}

// A backend that closes every connection without answering gets exactly
// one retry, even for POST.
func TestBackend_RetriesOnlyOnce(t *testing.T) {
	for _, stream := range []bool{false, true} {
		rb := startRawBackend(t, func(net.Conn, *bufio.Reader) {})
		b := backendAt(t, "http://"+rb.ln.Addr().String(), "10s")
		_, _, err := post(b, stream)
		if !errors.Is(err, fasthttp.ErrConnectionClosed) {
			t.Fatalf("stream=%v: err = %v", stream, err)
		}
		if n := rb.requests.Load(); n != 2 {
			t.Fatalf("stream=%v: backend saw %d attempts, want 2", stream, n)
		}
	}
}

// Once response bytes have arrived the request is never retried: the
// backend may have started generating.
func TestBackend_NoRetryAfterResponseBytes(t *testing.T) {
	rb := startRawBackend(t, func(c net.Conn, _ *bufio.Reader) {
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Ty")
	})
	b := backendAt(t, "http://"+rb.ln.Addr().String(), "10s")
	if _, _, err := post(b, false); err == nil {
		t.Fatal("no error for a truncated response head")
	}
	rb2 := startRawBackend(t, func(c net.Conn, _ *bufio.Reader) {
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
	})
	b2 := backendAt(t, "http://"+rb2.ln.Addr().String(), "10s")
	if _, _, err := post(b2, false); err == nil {
		t.Fatal("no error for a truncated body")
	}
	if rb.requests.Load() != 1 || rb2.requests.Load() != 1 {
		t.Fatalf("attempts = %d, %d; want 1, 1", rb.requests.Load(), rb2.requests.Load())
	}
}

// A timeout is never retried.
func TestBackend_NoRetryOnTimeout(t *testing.T) {
	release := make(chan struct{})
	rb := startRawBackend(t, func(net.Conn, *bufio.Reader) { <-release })
	defer close(release)
	b := backendAt(t, "http://"+rb.ln.Addr().String(), "10s")
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(b.URL("/v1/chat/completions"))
	req.Header.SetMethod(fasthttp.MethodGet)
	if err := b.Do(req, resp, 100*time.Millisecond); !errors.Is(err, fasthttp.ErrTimeout) {
		t.Fatalf("err = %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := rb.requests.Load(); n != 1 {
		t.Fatalf("backend saw %d attempts, want 1", n)
	}
}
