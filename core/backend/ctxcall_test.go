package backend

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// ctxBackend is an HTTP backend whose paths behave as:
//
//	/ok     answers "ok" at once
//	/slow   answers nothing until its client goes away (as a generation
//	        that takes minutes), counting those it saw go
//	/sse    sends headers, then "a", "b", "c" as separately flushed chunks
//	/empty  answers 204
type ctxBackend struct {
	*httpBackend
	slowStarted chan struct{} // one value per /slow request begun
	gone        atomic.Int64  // /slow requests whose client went away
}

func startCtxBackend(t *testing.T) *ctxBackend {
	t.Helper()
	hb := startHTTPBackend(t, "127.0.0.1:0", time.Minute, 0)
	cb := &ctxBackend{httpBackend: hb, slowStarted: make(chan struct{}, 100)}
	hb.srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		hb.requests.Add(1)
		switch r.URL.Path {
		case "/slow":
			cb.slowStarted <- struct{}{}
			select {
			case <-r.Context().Done():
				cb.gone.Add(1)
			case <-time.After(30 * time.Second):
				_, _ = io.WriteString(w, "late")
			}
		case "/sse":
			f := w.(http.Flusher)
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			f.Flush()
			for _, s := range []string{"a", "b", "c"} {
				time.Sleep(5 * time.Millisecond)
				_, _ = io.WriteString(w, s)
				f.Flush()
			}
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		default:
			_, _ = io.WriteString(w, "ok")
		}
	})
	return cb
}

// call sends a POST to path through DoContext (stream false) or
// DoStreamContext (stream true) and returns the status and whole body.
func call(ctx context.Context, b *Backend, path string, stream bool) (int, string, error) {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(b.URL(path))
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.SetBodyString(`{"model":"m"}`)
	if !stream {
		if err := b.DoContext(ctx, req, resp, 10*time.Second); err != nil {
			return 0, "", err
		}
		return resp.StatusCode(), string(resp.Body()), nil
	}
	if err := b.DoStreamContext(ctx, req, resp); err != nil {
		return 0, "", err
	}
	if resp.BodyStream() == nil { // a bodiless answer
		return resp.StatusCode(), string(resp.Body()), nil
	}
	body, err := io.ReadAll(resp.BodyStream())
	_ = resp.CloseBodyStream()
	return resp.StatusCode(), string(body), err
}

func clientOf(b *Backend, stream bool) *fasthttp.HostClient {
	if stream {
		return b.stream
	}
	return b.client
}

// A client that goes away while the backend generates (or, streamed,
// before the backend sent the response head): cancelling ctx returns the
// call at once with context.Canceled, closes the backend connection (the
// backend sees its request context end) and leaves the slot accounting
// and the connection pool as they were; the next request succeeds.
func TestDoContext_CancelAbortsCall(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			cb := startCtxBackend(t)
			b := backendAt(t, "http://"+cb.addr, "10s")
			if err := b.AcquireContext(context.Background(), time.Second); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancelledAt := make(chan time.Time, 1)
			go func() {
				<-cb.slowStarted
				time.Sleep(50 * time.Millisecond)
				cancelledAt <- time.Now()
				cancel()
			}()
			_, _, err := call(ctx, b, "/slow", stream)
			since := time.Since(<-cancelledAt)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if since > 2*time.Second { // /slow answers after 30 s
				t.Fatalf("returned %v after the cancellation", since)
			}
			waitFor(t, func() bool { return cb.gone.Load() == 1 })
			b.Release()
			if b.InFlight() != 0 || len(b.slots) != 0 {
				t.Fatalf("in flight %d, slots held %d", b.InFlight(), len(b.slots))
			}
			if n := clientOf(b, stream).ConnsCount(); n != 0 {
				t.Fatalf("pool counts %d connections after the cancellation", n)
			}
			if code, body, err := call(context.Background(), b, "/ok", stream); err != nil || code != 200 || body != "ok" {
				t.Fatalf("next request: %d %q %v", code, body, err)
			}
			if code, body, err := call(ctx, b, "/ok", stream); !errors.Is(err, context.Canceled) {
				t.Fatalf("request with a cancelled ctx: %d %q %v", code, body, err)
			}
			if n := cb.requests.Load(); n != 2 {
				t.Fatalf("backend saw %d requests, want 2", n)
			}
		})
	}
}

// A ctx deadline ends the call with context.DeadlineExceeded; a cause
// given to the cancellation is kept.
func TestDoContext_DeadlineAndCause(t *testing.T) {
	cb := startCtxBackend(t)
	b := backendAt(t, "http://"+cb.addr, "10s")
	for _, stream := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start := time.Now()
		_, _, err := call(ctx, b, "/slow", stream)
		cancel()
		// /slow answers after 30 s: a call that waited for it is what this
		// catches, not a slow scheduler (2 s leaves room for a loaded CI).
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
			t.Fatalf("stream=%v: err = %v after %v", stream, err, time.Since(start))
		}
		gone := errors.New("client went away")
		cctx, ccancel := context.WithCancelCause(context.Background())
		time.AfterFunc(50*time.Millisecond, func() { ccancel(gone) })
		_, _, err = call(cctx, b, "/slow", stream)
		if !errors.Is(err, context.Canceled) || !errors.Is(err, gone) {
			t.Fatalf("stream=%v: err = %v", stream, err)
		}
	}
	waitFor(t, func() bool { return cb.gone.Load() == 4 })
}

// fasthttp's timeout still ends DoContext's call with ErrTimeout, after
// one attempt.
func TestDoContext_TimeoutIsErrTimeout(t *testing.T) {
	release := make(chan struct{})
	rb := startRawBackend(t, func(net.Conn, *bufio.Reader) { <-release })
	defer close(release)
	b := backendAt(t, "http://"+rb.ln.Addr().String(), "10s")
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(b.URL("/v1/chat/completions"))
	req.Header.SetMethod(fasthttp.MethodPost)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := b.DoContext(ctx, req, resp, 100*time.Millisecond); !errors.Is(err, fasthttp.ErrTimeout) {
		t.Fatalf("err = %v", err)
	}
	if err := b.DoContext(ctx, req, resp, 0); !errors.Is(err, fasthttp.ErrTimeout) {
		t.Fatalf("zero timeout: err = %v", err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := rb.requests.Load(); n != 1 {
		t.Fatalf("backend saw %d attempts, want 1", n)
	}
}

// The stale-connection retry works through DoContext and DoStreamContext
// as through Do and DoStream: once on a fresh connection, POST included.
func TestDoContext_RetriesStaleConnection(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			hb := startHTTPBackend(t, "127.0.0.1:0", 50*time.Millisecond, 0)
			b := backendAt(t, "http://"+hb.addr, "10s")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			for i := 0; i < 3; i++ {
				if i > 0 {
					waitFor(t, func() bool { return hb.closed.Load() == int64(i) })
				}
				code, body, err := call(ctx, b, "/", stream)
				if err != nil || code != 200 || body != "ok" {
					t.Fatalf("request %d: %d %q %v", i, code, body, err)
				}
			}
			if n := hb.requests.Load(); n != 3 {
				t.Fatalf("backend saw %d requests, want 3", n)
			}
			// A backend that closes every connection unanswered: one retry.
			rb := startRawBackend(t, func(net.Conn, *bufio.Reader) {})
			b2 := backendAt(t, "http://"+rb.ln.Addr().String(), "10s")
			if _, _, err := call(ctx, b2, "/", stream); !errors.Is(err, fasthttp.ErrConnectionClosed) {
				t.Fatalf("err = %v", err)
			}
			if n := rb.requests.Load(); n != 2 {
				t.Fatalf("backend saw %d attempts, want 2", n)
			}
		})
	}
}

// The key risk: a cancellation arriving after the call has given its
// connection back to the pool must not close it under the next request.
// The hook cancels the finished call's ctx right after its connection went
// back to the pool; the next request takes that same connection, and
// neither it nor the backend sees it closed.
func TestDoContext_LateCancelSparesPooledConnection(t *testing.T) {
	cb := startCtxBackend(t)
	b := backendAt(t, "http://"+cb.addr, "10s")
	var cancels sync.Map // ctx -> cancel
	testHookReleased = func(ctx context.Context) {
		if f, ok := cancels.Load(ctx); ok {
			f.(context.CancelFunc)()
			time.Sleep(5 * time.Millisecond) // let the AfterFunc callback run
		}
	}
	t.Cleanup(func() { testHookReleased = nil })
	for i := 0; i < 20; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		cancels.Store(ctx, cancel)
		if code, body, err := call(ctx, b, "/", false); err != nil || code != 200 || body != "ok" {
			t.Fatalf("request %d: %d %q %v", i, code, body, err)
		}
		cancel()
	}
	if cb.conns.Load() != 1 || cb.closed.Load() != 0 {
		t.Fatalf("backend saw %d connections, %d closed; want 1, 0", cb.conns.Load(), cb.closed.Load())
	}
	// And a stream: cancelling after DoStreamContext returned leaves the
	// body readable and the connection pooled for the next request.
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		req := fasthttp.AcquireRequest()
		resp := fasthttp.AcquireResponse()
		req.SetRequestURI(b.URL("/sse"))
		if err := b.DoStreamContext(ctx, req, resp); err != nil {
			t.Fatal(err)
		}
		cancel()
		body, err := io.ReadAll(resp.BodyStream())
		if err != nil || string(body) != "abc" || resp.StatusCode() != 200 ||
			string(resp.Header.ContentType()) != "text/event-stream" {
			t.Fatalf("stream %d: %d %q %q %v", i, resp.StatusCode(), resp.Header.ContentType(), body, err)
		}
		_ = resp.CloseBodyStream()
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
	}
	if c := cb.conns.Load(); c != 2 { // one per client
		t.Fatalf("backend saw %d connections, want 2", c)
	}
}

// Many requests, sequential and concurrent, with cancellations racing
// their completion: every request not cancelled succeeds, every cancelled
// one either succeeds or fails with context.Canceled, nothing else, and
// connections keep being reused.
func TestDoContext_CancelRacingCompletion(t *testing.T) {
	cb := startCtxBackend(t)
	b := backendAt(t, "http://"+cb.addr, "10s")
	var failed atomic.Int64
	run := func(t *testing.T, n int, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, 1))
		for i := 0; i < n; i++ {
			stream := rng.IntN(2) == 0
			path := "/"
			if stream && rng.IntN(2) == 0 {
				path = "/sse"
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancelled := rng.IntN(2) == 0
			if cancelled {
				time.AfterFunc(time.Duration(rng.IntN(1000))*time.Microsecond, cancel)
			}
			code, body, err := call(ctx, b, path, stream)
			cancel()
			want := "ok"
			if path == "/sse" {
				want = "abc"
			}
			switch {
			case err == nil && code == 200 && body == want:
			case cancelled && errors.Is(err, context.Canceled):
				failed.Add(1)
			default:
				t.Errorf("request %d (stream %v %s, cancelled %v): %d %q %v", i, stream, path, cancelled, code, body, err)
			}
		}
	}
	t.Run("sequential", func(t *testing.T) { run(t, 300, 1) })
	t.Run("concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		for g := 0; g < 12; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				run(t, 100, uint64(g)+2)
			}()
		}
		wg.Wait()
	})
	reqs := cb.requests.Load()
	t.Logf("%d requests reached the backend on %d connections; %d calls cancelled", reqs, cb.conns.Load(), failed.Load())
	// Each cancelled call may cost its connection; every other request
	// must have found one in the pools (12 goroutines, 2 clients).
	if c := cb.conns.Load(); c > failed.Load()+2*12 {
		t.Errorf("connections are not being reused: %d for %d requests, %d cancelled", c, reqs, failed.Load())
	}
	for _, stream := range []bool{false, true} {
		if n := clientOf(b, stream).ConnsCount(); n > 16+8 {
			t.Errorf("stream=%v: pool counts %d connections", stream, n)
		}
	}
}

// DoStreamContext on a bodiless answer, and the ctx methods with a ctx
// that can never end (the plain calls).
func TestDoContext_EdgeCases(t *testing.T) {
	cb := startCtxBackend(t)
	b := backendAt(t, "http://"+cb.addr, "10s")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, c := range []context.Context{ctx, context.Background()} {
		if code, body, err := call(c, b, "/empty", true); err != nil || code != 204 || body != "" {
			t.Fatalf("204 stream: %d %q %v", code, body, err)
		}
		if code, body, err := call(c, b, "/sse", true); err != nil || code != 200 || body != "abc" {
			t.Fatalf("sse: %d %q %v", code, body, err)
		}
		if code, body, err := call(c, b, "/", false); err != nil || code != 200 || body != "ok" {
			t.Fatalf("ok: %d %q %v", code, body, err)
		}
	}
	// A stream closed before its end discards its connection; one read
	// to its end goes back to the pool.
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(b.URL("/sse"))
	if err := b.DoStreamContext(ctx, req, resp); err != nil {
		t.Fatal(err)
	}
	closed := cb.closed.Load()
	_ = resp.CloseBodyStream()
	waitFor(t, func() bool { return cb.closed.Load() == closed+1 })
	if n := b.stream.ConnsCount(); n != 0 {
		t.Fatalf("stream pool counts %d connections", n)
	}
}

// startFastBackend serves "ok" from an in-process fasthttp server, which
// allocates nothing per request, and returns its address.
func startFastBackend(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(rc *fasthttp.RequestCtx) { rc.SetBodyString("ok") }}
	go func() { _ = srv.Serve(ln) }()
	tb.Cleanup(func() { _ = srv.Shutdown() })
	return ln.Addr().String()
}

// BenchmarkDo compares Do and DoContext (with a cancellable ctx) against
// an in-process backend over loopback TCP.
func BenchmarkDo(b *testing.B) {
	be := backendAt(b, "http://"+startFastBackend(b), "10s")
	var err error
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, withCtx := range []bool{false, true} {
		name := "Do"
		if withCtx {
			name = "DoContext"
		}
		b.Run(name, func(b *testing.B) {
			req := fasthttp.AcquireRequest()
			resp := fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			req.SetRequestURI(be.URL("/v1/chat/completions"))
			req.Header.SetMethod(fasthttp.MethodPost)
			req.SetBodyString(`{"model":"m"}`)
			b.ReportAllocs()
			for b.Loop() {
				if withCtx {
					err = be.DoContext(ctx, req, resp, 5*time.Second)
				} else {
					err = be.Do(req, resp, 5*time.Second)
				}
				if err != nil || resp.StatusCode() != 200 {
					b.Fatal(resp.StatusCode(), err)
				}
			}
		})
	}
}

// Cancelling while the request body is still being written (a backend
// that reads nothing) aborts the write at once.
func TestDoContext_CancelDuringWrite(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		select {
		case c := <-accepted:
			_ = c.Close()
		default:
		}
	})
	b := backendAt(t, "http://"+ln.Addr().String(), "10s")
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(b.URL("/v1/chat/completions"))
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetBody(make([]byte, 32<<20)) // far more than the socket buffers hold
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	err = b.DoContext(ctx, req, resp, 10*time.Second)
	t.Logf("returned after %v", time.Since(start))
	if !errors.Is(err, context.Canceled) || time.Since(start) > 2*time.Second { // vs the call's 10 s timeout
		t.Fatalf("err = %v after %v", err, time.Since(start))
	}
	if n := b.client.ConnsCount(); n != 0 {
		t.Fatalf("pool counts %d connections", n)
	}
}

// Over TLS the cancellation closes the socket under the TLS connection.
func TestDoContext_CancelOverTLS(t *testing.T) {
	var gone atomic.Int64
	started := make(chan struct{}, 1)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // else the server does not watch the connection
		if r.URL.Path != "/slow" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		started <- struct{}{}
		select {
		case <-r.Context().Done():
			gone.Add(1)
		case <-time.After(30 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	b := backendAt(t, srv.URL, "10s")
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	for _, hc := range []*fasthttp.HostClient{b.client, b.stream} {
		hc.TLSConfig = &tls.Config{RootCAs: roots, ServerName: "example.com"}
	}
	for _, stream := range []bool{false, true} {
		if code, body, err := call(context.Background(), b, "/", stream); err != nil || code != 200 || body != "ok" {
			t.Fatalf("stream=%v: %d %q %v", stream, code, body, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-started
			time.Sleep(20 * time.Millisecond)
			cancel()
		}()
		start := time.Now()
		if _, _, err := call(ctx, b, "/slow", stream); !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
			t.Fatalf("stream=%v: err = %v after %v", stream, err, time.Since(start))
		}
	}
	waitFor(t, func() bool { return gone.Load() == 2 })
}

// notifyCtx is a cancellable context that is a backend.EndNotifier, as
// the gateway's request context is: cancel runs its hooks.
type notifyCtx struct {
	context.Context
	cancelCtx context.CancelFunc
	mu        sync.Mutex
	hooks     map[uint64]func()
	next      uint64
	ended     bool
}

func newNotifyCtx() *notifyCtx {
	ctx, cancel := context.WithCancel(context.Background())
	return &notifyCtx{Context: ctx, cancelCtx: cancel, hooks: map[uint64]func(){}}
}

func (c *notifyCtx) OnEnd(f func()) (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return 0, false
	}
	c.next++
	c.hooks[c.next] = f
	return c.next, true
}

func (c *notifyCtx) Unhook(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.hooks[id]
	delete(c.hooks, id)
	return ok
}

func (c *notifyCtx) cancel() {
	c.cancelCtx()
	c.mu.Lock()
	c.ended = true
	hooks := c.hooks
	c.hooks = nil
	c.mu.Unlock()
	for _, f := range hooks {
		f()
	}
}

// With a context that is an EndNotifier, DoContext registers its
// cancellation through OnEnd (not context.AfterFunc): ending the context
// aborts the call in flight as before, closing its connection, the hook
// is unregistered after a call that finished, and an ended context fails
// the call before it is sent.
func TestDoContext_EndNotifier(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			cb := startCtxBackend(t)
			b := backendAt(t, "http://"+cb.addr, "10s")
			ctx := newNotifyCtx()
			if code, body, err := call(ctx, b, "/ok", stream); err != nil || code != 200 || body != "ok" {
				t.Fatalf("ok: %d %q %v", code, body, err)
			}
			if n := len(ctx.hooks); n != 0 {
				t.Fatalf("%d hooks left after a finished call", n)
			}
			go func() {
				<-cb.slowStarted
				time.Sleep(20 * time.Millisecond)
				ctx.cancel()
			}()
			start := time.Now()
			_, _, err := call(ctx, b, "/slow", stream)
			if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
				t.Fatalf("err = %v after %v, want context.Canceled at once", err, time.Since(start))
			}
			waitFor(t, func() bool { return cb.gone.Load() == 1 })
			if _, _, err := call(ctx, b, "/ok", stream); !errors.Is(err, context.Canceled) {
				t.Fatalf("ended ctx: %v", err)
			}
			if n := cb.requests.Load(); n != 2 {
				t.Fatalf("backend saw %d requests, want 2", n)
			}
		})
	}
}
