package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
)

func TestRetryableStatus(t *testing.T) {
	for code, want := range map[int]bool{
		500: true, 502: true, 503: true, 504: true,
		200: false, 400: false, 401: false, 404: false, 422: false, 429: false, 501: false,
	} {
		if got := retryableStatus(code); got != want {
			t.Errorf("retryableStatus(%d) = %v, want %v", code, got, want)
		}
	}
}

func TestRetryable_AttemptTimeout(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		name            string
		err             error
		retry, breakerF bool
	}{
		// A stream's first-event wait that passed the attempt timeout with the
		// request's time left goes to another backend.
		{"attempt timeout", fmt.Errorf("%w: %w", errAttemptTimeout, context.DeadlineExceeded), true, true},
		{"refused", refused, true, true},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true, true},
		{"closed", fasthttp.ErrConnectionClosed, true, true},
		// A read timeout: the backend may be generating; not re-sent, but
		// it counts against the backend.
		{"read timeout", fasthttp.ErrTimeout, false, true},
		{"client cancelled", fmt.Errorf("call: %w", context.Canceled), false, false},
		{"body too large", fasthttp.ErrBodyTooLarge, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := retryable(tc.err); got != tc.retry {
				t.Errorf("retryable = %v, want %v", got, tc.retry)
			}
			if got := liveFailure(tc.err); got != tc.breakerF {
				t.Errorf("liveFailure = %v, want %v", got, tc.breakerF)
			}
		})
	}
	// All attempts timed out: the client's answer is a timeout (504).
	e := wantErr(t, backendUnreachable("gpu-1", fmt.Errorf("%w: %w", errAttemptTimeout, context.DeadlineExceeded)), 504, "backend_timeout")
	if !errors.Is(e, errAttemptTimeout) {
		t.Fatalf("cause %v", e.Err)
	}
}

func TestErrNoBackendLeft(t *testing.T) {
	e := wantErr(t, errNoBackendLeft("gpu-1"), 503, "backend_unavailable")
	if e.RetryAfterSeconds() <= 0 {
		t.Fatal("no Retry-After")
	}
}

// A stream whose backend accepts the request but sends no headers within
// the attempt timeout fails with errAttemptTimeout (retryable) while the
// request has time left.
func TestStreamCall_AttemptTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var conns []net.Conn
	defer func() {
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // read nothing, answer nothing
			mu.Unlock()
		}
	}()
	cfg := config.Default()
	cfg.Backends = []config.Backend{{Name: "silent", Engine: "vllm", URL: "http://" + ln.Addr().String(), MaxConcurrent: 1}}
	reg, err := backend.NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := reg.Backend("silent")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ex := &exchange{ctx: ctx}
	ex.breq, ex.bresp = fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(ex.breq)
	defer fasthttp.ReleaseResponse(ex.bresp)
	ex.breq.SetRequestURI(b.URL("/v1/chat/completions"))
	ex.breq.Header.SetMethod("POST")
	ex.breq.SetBodyString(`{"stream":true}`)

	done := make(chan error, 1)
	go func() { done <- ex.streamCall(b, 200*time.Millisecond) }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second): // a hang, not a speed bound
		t.Fatal("streamCall did not return after its attempt timeout")
	}
	if !errors.Is(err, errAttemptTimeout) || !retryable(err) {
		t.Fatalf("error %v: want a retryable attempt timeout", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the request's context ended: the attempt timeout must be the attempt's own")
	}
}
