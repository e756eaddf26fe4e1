package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

func withRetry(e *apierr.Error, ra int) *apierr.Error { e.RetryAfter = ra; return e }

func TestFail_RetryAfter(t *testing.T) {
	s := newTestServer(t, nil)
	for _, tc := range []struct {
		name     string
		err      error
		status   int // fail's override
		want     int
		retryHdr string
	}{
		{name: "503 without RetryAfter", err: apierr.New(canon.ErrOverloaded, "busy", "busy"), want: 503, retryHdr: "1"},
		{name: "503 with RetryAfter", err: withRetry(apierr.New(canon.ErrOverloaded, "busy", "busy"), 7), want: 503, retryHdr: "7"},
		{name: "429 without RetryAfter", err: apierr.New(canon.ErrRateLimit, "rate", "slow"), want: 429, retryHdr: "1"},
		{name: "429 with RetryAfter", err: withRetry(apierr.New(canon.ErrRateLimit, "rate", "slow"), 30), want: 429, retryHdr: "30"},
		{name: "400", err: apierr.New(canon.ErrInvalidRequest, "bad", "bad"), want: 400},
		{name: "502", err: apierr.New(canon.ErrBackend, "backend_error", "bad gateway"), want: 502},
		{name: "504", err: apierr.New(canon.ErrTimeout, "backend_timeout", "slow backend"), want: 504},
		{name: "status override to 503", err: apierr.New(canon.ErrInvalidRequest, "bad", "bad"), status: 503, want: 503, retryHdr: "1"},
		// Retry-After belongs to 429 and 503 only.
		{name: "400 carrying RetryAfter", err: withRetry(apierr.New(canon.ErrInvalidRequest, "bad", "bad"), 5), want: 400, retryHdr: ""},
		{name: "wrapped", err: fmt.Errorf("stage: %w", apierr.New(canon.ErrOverloaded, "busy", "busy")), want: 503, retryHdr: "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, ex := new(fasthttp.RequestCtx), newEx(s, nil)
			s.fail(ctx, ex, tc.err, tc.status)
			if ctx.Response.StatusCode() != tc.want {
				t.Fatalf("status %d, want %d", ctx.Response.StatusCode(), tc.want)
			}
			if got := string(ctx.Response.Header.Peek("Retry-After")); got != tc.retryHdr {
				t.Fatalf("Retry-After %q, want %q", got, tc.retryHdr)
			}
			if ex.out.Status != tc.want || ex.out.ErrorCode != apierr.Public(tc.err).Code || ex.out.Error == "" {
				t.Fatalf("outcome status %d code %q error %q", ex.out.Status, ex.out.ErrorCode, ex.out.Error)
			}
			if ct := string(ctx.Response.Header.ContentType()); ct != "application/json" {
				t.Fatalf("content type %q", ct)
			}
			msg, _, code := errorBody(t, ctx.Response.Body())
			if code != apierr.Public(tc.err).Code {
				t.Fatalf("code %q", code)
			}
			// 5xx names the request id (support finds the log line); 4xx not.
			if named := strings.HasSuffix(msg, " (request "+ex.id+")"); named != (tc.want >= 500) {
				t.Fatalf("status %d message %q", tc.want, msg)
			}
		})
	}
}

func TestFail_BoundsMessage(t *testing.T) {
	s := newTestServer(t, nil)
	huge := strings.Repeat("é", 2<<20) // 4 MB, multi-byte runes
	for _, status := range []int{400, 502} {
		ctx, ex := new(fasthttp.RequestCtx), newEx(s, nil)
		typ := canon.ErrInvalidRequest
		if status == 502 {
			typ = canon.ErrBackend
		}
		s.fail(ctx, ex, apierr.New(typ, "big", huge), 0)
		msg, _, _ := errorBody(t, ctx.Response.Body())
		if len(msg) > 1024+100 || len(msg) < 1000 {
			t.Fatalf("status %d: message of %d bytes, want about 1 KB", status, len(msg))
		}
		if !strings.Contains(msg, "more bytes)") {
			t.Fatalf("the cut is not marked: %q", msg[len(msg)-60:])
		}
		if status >= 500 && !strings.HasSuffix(msg, "(request "+ex.id+")") {
			t.Fatalf("the request id was cut off: %q", msg[len(msg)-80:])
		}
		if len(ctx.Response.Body()) > 2048 {
			t.Fatalf("body of %d bytes", len(ctx.Response.Body()))
		}
		if len(ex.out.Error) > 2100 {
			t.Fatalf("outcome error of %d bytes", len(ex.out.Error))
		}
	}
}

func TestFail_InternalErrorDoesNotLeak(t *testing.T) {
	s := newTestServer(t, nil)
	ctx, ex := new(fasthttp.RequestCtx), newEx(s, nil)
	s.fail(ctx, ex, errors.New("dial tcp 10.1.2.3:8000: secret internals"), 0)
	msg, typ, code := errorBody(t, ctx.Response.Body())
	if ctx.Response.StatusCode() != 500 || code != "internal_error" || typ != "server_error" ||
		strings.Contains(string(ctx.Response.Body()), "10.1.2.3") || msg != "internal error (request "+ex.id+")" {
		t.Fatalf("status %d body %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	// The log keeps the cause.
	if !strings.Contains(ex.out.Error, "10.1.2.3") {
		t.Fatalf("outcome error %q", ex.out.Error)
	}
}

// An error already recorded (a backend's raw answer) is not overwritten.
func TestFail_KeepsEarlierOutcomeError(t *testing.T) {
	s := newTestServer(t, nil)
	ctx, ex := new(fasthttp.RequestCtx), newEx(s, nil)
	ex.out.Error = "backend b answered HTTP 500: <html>"
	s.fail(ctx, ex, apierr.New(canon.ErrBackend, "backend_error", "the backend failed"), 0)
	if ex.out.Error != "backend b answered HTTP 500: <html>" || ex.out.ErrorCode != "backend_error" {
		t.Fatalf("outcome %q %q", ex.out.Error, ex.out.ErrorCode)
	}
}

func TestFail_ClientGone(t *testing.T) {
	s := newTestServer(t, nil)
	ctx, ex := new(fasthttp.RequestCtx), newEx(s, nil)
	s.fail(ctx, ex, errClientGone(context.Canceled), 0)
	if ex.out.Status != statusClientClosed || !ex.out.ClientGone || ex.out.ErrorCode != "client_closed_request" {
		t.Fatalf("outcome %+v", ex.out)
	}
	if len(ctx.Response.Body()) != 0 || len(ctx.Response.Header.Peek("Retry-After")) != 0 ||
		strings.Contains(ctx.Response.String(), "Content-Type") {
		t.Fatalf("something was written for a 499:\n%s", ctx.Response.String())
	}
	if ctx.Response.Header.StatusCode() == statusClientClosed {
		t.Fatal("499 set as the response status")
	}
	if !ctx.Response.ConnectionClose() {
		t.Fatal("no Connection: close")
	}
	// Bug: nothing set the status, so fasthttp sent its default 200 with
	// an empty body, which a client that only half-closed reads as a
	// successful answer. The connection must close with no response.
	if !ctx.Hijacked() {
		t.Fatal("the connection is left to fasthttp, which answers 200 with an empty body")
	}
	// Same through an explicit status.
	ctx, ex = new(fasthttp.RequestCtx), newEx(s, nil)
	s.fail(ctx, ex, apierr.New(canon.ErrInvalidRequest, "x", "x"), statusClientClosed)
	if len(ctx.Response.Body()) != 0 || !ctx.Response.ConnectionClose() || !ex.out.ClientGone || !ctx.Hijacked() {
		t.Fatalf("explicit 499:\n%s", ctx.Response.String())
	}
}

// With a route, the translator renders the error in its dialect; its
// status meta overrides the gateway's.
func TestFail_TranslatorRenders(t *testing.T) {
	rt := sdk.Route{Name: "chat", Kind: sdk.EndpointChat, Method: "POST", Path: "/v1/chat/completions"}
	plain := translator(t, "fake", fakeTranslator{}, rt)
	override := translator(t, "fake422", fakeTranslator{status: "422"}, rt)
	s := newTestServer(t, nil, plain)

	ctx, ex := new(fasthttp.RequestCtx), newEx(s, nil)
	ex.setRoute(&s.routes.index().byPath["/v1/chat/completions"].routes[0])
	s.fail(ctx, ex, apierr.New(canon.ErrOverloaded, "busy", "try later"), 0)
	var got struct {
		Msg    string `json:"fake_error"`
		Code   string `json:"code"`
		Status int    `json:"status"`
	}
	if err := json.Unmarshal(ctx.Response.Body(), &got); err != nil {
		t.Fatalf("%v: %s", err, ctx.Response.Body())
	}
	if ctx.Response.StatusCode() != 503 || got.Status != 503 || got.Code != "busy" ||
		got.Msg != "try later (request "+ex.id+")" || string(ctx.Response.Header.ContentType()) != "application/x-fake" ||
		string(ctx.Response.Header.Peek("Retry-After")) != "1" {
		t.Fatalf("response:\n%s", ctx.Response.String())
	}

	ix := buildIndex([]*pluginhost.Plugin{override}, 0)
	ctx, ex = new(fasthttp.RequestCtx), newEx(s, nil)
	ex.setRoute(&ix.byPath["/v1/chat/completions"].routes[0])
	s.fail(ctx, ex, apierr.New(canon.ErrInvalidRequest, "bad", "bad"), 0)
	if ctx.Response.StatusCode() != 422 {
		t.Fatalf("status %d, want the translator's 422", ctx.Response.StatusCode())
	}
	if ex.out.Status != 400 {
		t.Fatalf("outcome status %d: the gateway's status is recorded", ex.out.Status)
	}

	// A translator that cannot render errors: native fallback.
	unimpl := translator(t, "unimpl", sdk.Unimplemented{}, rt)
	ix = buildIndex([]*pluginhost.Plugin{unimpl}, 0)
	ctx, ex = new(fasthttp.RequestCtx), newEx(s, nil)
	ex.setRoute(&ix.byPath["/v1/chat/completions"].routes[0])
	s.fail(ctx, ex, apierr.New(canon.ErrNotFound, "model_not_found", "no such model"), 0)
	if msg, _, code := errorBody(t, ctx.Response.Body()); ctx.Response.StatusCode() != 404 || code != "model_not_found" || msg != "no such model" {
		t.Fatalf("fallback:\n%s", ctx.Response.String())
	}
}

// TestNativeError: OpenAI's shape with OpenAI's type names, never the
// canonical ones.
func TestNativeError(t *testing.T) {
	b := nativeError(nil, &canon.Error{Message: "a \"quoted\"\nline", Type: canon.ErrInvalidRequest})
	if string(b) != `{"error":{"message":"a \"quoted\"\nline","type":"invalid_request_error","param":null,"code":null}}` {
		t.Fatalf("%s", b)
	}
	b = nativeError([]byte("keep:"), &canon.Error{Message: "m", Type: canon.ErrBackend, Param: "temperature", Code: "c"})
	if string(b) != `keep:{"error":{"message":"m","type":"server_error","param":"temperature","code":"c"}}` {
		t.Fatalf("%s", b)
	}
	for typ, want := range map[canon.ErrorType]string{canon.ErrPermission: "permission_error", canon.ErrNotFound: "invalid_request_error",
		canon.ErrAuthentication: "authentication_error", canon.ErrRateLimit: "rate_limit_error", canon.ErrOverloaded: "server_error"} {
		if b := nativeError(nil, &canon.Error{Type: typ}); !strings.Contains(string(b), `"type":"`+want+`"`) {
			t.Errorf("%s: %s", typ, b)
		}
	}
}

func TestNativeStreamError(t *testing.T) {
	e := &canon.Error{Message: "backend \"died\"\n", Type: canon.ErrBackend, Code: "backend_error"}
	sse := string(nativeStreamError(nil, e, false))
	if !strings.HasPrefix(sse, "data: {") || !strings.HasSuffix(sse, "}\n\n") || strings.Count(sse, "\n") != 2 {
		t.Fatalf("SSE frame %q", sse)
	}
	msg, _, code := errorBody(t, []byte(strings.TrimSuffix(strings.TrimPrefix(sse, "data: "), "\n\n")))
	if msg != e.Message || code != "backend_error" {
		t.Fatalf("SSE payload %q", sse)
	}
	nd := string(nativeStreamError([]byte("prev\n"), e, true))
	if !strings.HasPrefix(nd, "prev\n{") || !strings.HasSuffix(nd, "}\n") || strings.Count(nd, "\n") != 2 {
		t.Fatalf("NDJSON line %q", nd)
	}
	var v struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(nd, "prev\n")), &v); err != nil || v.Error != e.Message {
		t.Fatalf("NDJSON %q: %v", nd, err)
	}
}

func TestPluginFailure(t *testing.T) {
	badInput := &pluginhost.StatusError{Plugin: "vllm", Op: abi.OpResponseDecode, Status: abi.StatusBadInput, Msg: "unexpected token at 3: <html>"}
	for _, tc := range []struct {
		name   string
		err    error
		status int
		code   string
		retry  int
	}{
		{name: "bad backend bytes", err: badInput, status: 502, code: "bad_backend_response"},
		{name: "pool timeout", err: fmt.Errorf("%w: waited 2s", pluginhost.ErrPoolTimeout), status: 503, code: "plugin_busy", retry: 1},
		{name: "client gone", err: fmt.Errorf("call: %w", context.Canceled), status: 499, code: "client_closed_request"},
		{name: "trap", err: fmt.Errorf("plugin x: %w: wasm error: unreachable", pluginhost.ErrTrap), status: 502, code: "plugin_error"},
		{name: "plugin gone", err: errPluginGone, status: 502, code: "plugin_error"},
		{name: "other status", err: &pluginhost.StatusError{Status: abi.StatusBadInput + 1, Msg: "internal detail"}, status: 502, code: "plugin_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := wantErr(t, pluginFailure(tc.err), tc.status, tc.code)
			if e.RetryAfter != tc.retry {
				t.Fatalf("RetryAfter %d, want %d", e.RetryAfter, tc.retry)
			}
			if !errors.Is(e, tc.err) {
				t.Fatal("the cause is not kept for the log")
			}
			if strings.Contains(e.Msg, "<html>") || strings.Contains(e.Msg, "internal detail") || strings.Contains(e.Msg, "wasm") {
				t.Fatalf("plugin internals reach the client: %q", e.Msg)
			}
		})
	}
}

func TestClientInput(t *testing.T) {
	e := wantErr(t, clientInput(&pluginhost.StatusError{Status: abi.StatusBadInput, Msg: "messages: required"}), 400, "invalid_request")
	if e.Msg != "messages: required" {
		t.Fatalf("message %q", e.Msg)
	}
	e = wantErr(t, clientInput(&pluginhost.StatusError{Status: abi.StatusBadInput, Msg: strings.Repeat("x", 1<<20)}), 400, "invalid_request")
	if len(e.Msg) > 1100 {
		t.Fatalf("message of %d bytes", len(e.Msg))
	}
	wantErr(t, clientInput(pluginhost.ErrTrap), 502, "plugin_error")
	wantErr(t, clientInput(fmt.Errorf("%w: waited", pluginhost.ErrPoolTimeout)), 503, "plugin_busy")
	wantErr(t, clientInput(context.Canceled), 499, "client_closed_request")
}

func TestBackendUnreachable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		name      string
		err       error
		status    int
		code      string
		retryable bool
	}{
		{name: "fasthttp timeout", err: fasthttp.ErrTimeout, status: 504, code: "backend_timeout"},
		// The backend never saw the request: another one may serve it.
		{name: "dial timeout", err: fasthttp.ErrDialTimeout, status: 504, code: "backend_timeout", retryable: true},
		{name: "deadline", err: fmt.Errorf("read: %w", os.ErrDeadlineExceeded), status: 504, code: "backend_timeout"},
		{name: "net timeout", err: &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}, status: 504, code: "backend_timeout"},
		{name: "refused", err: refused, status: 502, code: "backend_unreachable", retryable: true},
		{name: "connection closed", err: fasthttp.ErrConnectionClosed, status: 502, code: "backend_unreachable", retryable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := wantErr(t, backendUnreachable("gpu-1", tc.err), tc.status, tc.code)
			if !strings.Contains(e.Msg, "gpu-1") || !errors.Is(e, tc.err) {
				t.Fatalf("message %q cause %v", e.Msg, e.Err)
			}
			if retryable(tc.err) != tc.retryable {
				t.Fatalf("retryable %v", retryable(tc.err))
			}
		})
	}
	if retryable(context.Canceled) {
		t.Fatal("a cancelled call is retried")
	}
}

// finish tells every observer once, with the filled Outcome, and gives
// back what the exchange held.
func TestFinish_Observers(t *testing.T) {
	s := newTestServer(t, nil)
	var got [2][]outcome.Outcome
	s.observers = []outcome.Observer{
		outcome.ObserverFunc(func(o *outcome.Outcome) { got[0] = append(got[0], *o) }),
		outcome.ObserverFunc(func(o *outcome.Outcome) { got[1] = append(got[1], *o) }),
	}

	ctx, ex := new(fasthttp.RequestCtx), newEx(s, nil)
	ex.setRoute(chatRoute(nil))
	ex.out.KeyID, ex.out.Model, ex.out.Backend, ex.out.Attempts = "mr2_k…", "llama", "gpu-1", 1
	ex.out.Stages[outcome.StageAuth] = 5
	s.buffered.Add(40)
	ex.bodyHeld = 40
	id, reqCtx := ex.id, ex.ctx
	ctx.SetStatusCode(201)
	s.finish(ctx, ex)
	for i := range got {
		if len(got[i]) != 1 {
			t.Fatalf("observer %d called %d times", i, len(got[i]))
		}
		o := got[i][0]
		if o.RequestID != id || o.Status != 201 || o.Route != "chat" || o.Kind != "chat" || o.Dialect != "openai" ||
			o.KeyID != "mr2_k…" || o.Model != "llama" || o.Backend != "gpu-1" || o.Attempts != 1 ||
			o.Duration <= 0 || o.Start.IsZero() || o.Stages[outcome.StageAuth] != 5 {
			t.Fatalf("observer %d saw %+v", i, o)
		}
	}
	if s.buffered.Load() != 0 {
		t.Fatalf("buffered %d after finish", s.buffered.Load())
	}
	if reqCtx.Err() == nil {
		t.Fatal("the request's context is not cancelled at finish")
	}

	// A failed request: the observers see the error's status and code.
	ctx, ex = new(fasthttp.RequestCtx), newEx(s, nil)
	s.fail(ctx, ex, apierr.New(canon.ErrOverloaded, "backend_busy", "busy"), 0)
	s.finish(ctx, ex)
	// A relay's finish has no ctx.
	ex = newEx(s, nil)
	ex.out.Status = 200
	s.finish(nil, ex)
	for i := range got {
		if len(got[i]) != 3 {
			t.Fatalf("observer %d called %d times", i, len(got[i]))
		}
		if o := got[i][1]; o.Status != 503 || o.ErrorCode != "backend_busy" || o.Error == "" {
			t.Fatalf("observer %d saw %+v", i, o)
		}
		if o := got[i][2]; o.Status != 200 {
			t.Fatalf("observer %d saw %+v", i, o)
		}
	}
}

// A connection whose next request's first byte the watcher consumed is
// closed after the response.
func TestFinish_StolenByteClosesConnection(t *testing.T) {
	s := newTestServer(t, nil)
	ctx, ex := new(fasthttp.RequestCtx), newEx(s, nil)
	ex.watch.stole = true
	s.finish(ctx, ex)
	if !ctx.Response.ConnectionClose() {
		t.Fatal("no Connection: close after a stolen byte")
	}
	ctx, ex = new(fasthttp.RequestCtx), newEx(s, nil)
	s.finish(ctx, ex)
	if ctx.Response.ConnectionClose() {
		t.Fatal("Connection: close without a stolen byte")
	}
}
