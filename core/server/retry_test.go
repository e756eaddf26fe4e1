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

// TestTriedVerdict is the retry decision's table: whether an attempt is
// made again, why, what the backend's breaker hears, and the client's
// answer when the request ends there (0/"": the backend's own answer is
// relayed).
func TestTriedVerdict(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	notWritten := wantErr(t, clientInput(errors.New("bad")), 502, "plugin_error")
	answer := func(status int) tried { return tried{backend: "gpu-1", attempts: 1, max: 3, status: status} }
	failed := func(err error) tried { return tried{backend: "gpu-1", attempts: 1, max: 3, err: err} }
	with := func(t tried, f func(*tried)) tried { f(&t); return t }
	for _, tc := range []struct {
		name   string
		t      tried
		again  bool
		report breakerReport
		why    string
		status int    // the answer's status when the request ends here
		code   string // and its code
	}{
		{"200", answer(200), false, reportSuccess, whyAnswered, 0, ""},
		{"200 stream: the relay reports", with(answer(200), func(t *tried) { t.stream = true }), false, reportNone, whyAnswered, 0, ""},
		{"404 stream", with(answer(404), func(t *tried) { t.stream = true }), false, reportSuccess, whyAnswered, 0, ""},
		{"400 never retried", answer(400), false, reportSuccess, whyAnswered, 0, ""},
		{"429 never retried", answer(429), false, reportSuccess, whyAnswered, 0, ""},
		{"501 is not a failure worth another", answer(501), false, reportSuccess, whyAnswered, 0, ""},
		{"503 with another backend", with(answer(503), func(t *tried) { t.alternative = true }), true, reportFailure, whyServerError, 502, "backend_error"},
		{"500 with another backend", with(answer(500), func(t *tried) { t.alternative = true }), true, reportFailure, whyServerError, 502, "backend_error"},
		{"503, none other: relayed", answer(503), false, reportFailure, whyNoOther, 0, ""},
		{"502 on the last attempt: relayed", with(answer(502), func(t *tried) { t.alternative, t.attempts = true, 3 }), false, reportFailure, whyLastAttempt, 0, ""},
		{"504 after bytes reached the client", with(answer(504), func(t *tried) { t.alternative, t.sent = true, true }), false, reportFailure, whySent, 0, ""},
		{"refused", failed(refused), true, reportFailure, whyCallFailed, 502, "backend_unreachable"},
		{"refused on the last attempt", with(failed(refused), func(t *tried) { t.attempts = 3 }), false, reportFailure, whyLastAttempt, 502, "backend_unreachable"},
		{"refused, max_attempts 1", with(failed(refused), func(t *tried) { t.max = 1 }), false, reportFailure, whyLastAttempt, 502, "backend_unreachable"},
		{"refused after bytes reached the client", with(failed(refused), func(t *tried) { t.sent = true }), false, reportFailure, whySent, 502, "backend_unreachable"},
		{"closed", failed(fasthttp.ErrConnectionClosed), true, reportFailure, whyCallFailed, 502, "backend_unreachable"},
		{"first-event timeout", failed(fmt.Errorf("%w: %w", errAttemptTimeout, context.DeadlineExceeded)), true, reportFailure, whyCallFailed, 504, "backend_timeout"},
		{"read timeout: the backend may be generating", failed(fasthttp.ErrTimeout), false, reportFailure, whyNotRetried, 504, "backend_timeout"},
		{"body too large", failed(fasthttp.ErrBodyTooLarge), false, reportAbandoned, whyNotRetried, 502, "backend_unreachable"},
		{"client left", with(failed(refused), func(t *tried) { t.reqErr = context.Canceled }), false, reportAbandoned, whyClientGone, statusClientClosed, "client_closed_request"},
		{"request deadline", with(failed(fasthttp.ErrTimeout), func(t *tried) { t.reqErr = context.DeadlineExceeded }), false, reportFailure, whyDeadline, 504, "backend_timeout"},
		{"not written", tried{backend: "gpu-1", attempts: 1, max: 3, encodeErr: notWritten}, false, reportAbandoned, whyNotWritten, 502, "plugin_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.t.verdict()
			if v.again != tc.again || v.report != tc.report || v.why != tc.why {
				t.Fatalf("verdict again=%v report=%d why=%q, want %v %d %q", v.again, v.report, v.why, tc.again, tc.report, tc.why)
			}
			if tc.status == 0 {
				if v.err != nil {
					t.Fatalf("answer %v, want the backend's relayed", v.err)
				}
				return
			}
			wantErr(t, v.err, tc.status, tc.code)
		})
	}
}
