package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/jsonscan"
	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/core/quota"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// ---- keyFromHeaders ----

func TestKeyFromHeaders(t *testing.T) {
	type hv = [2]string
	for _, tc := range []struct {
		name      string
		hdrs      []hv
		key       string
		ambiguous bool
	}{
		{name: "bearer", hdrs: []hv{{"Authorization", "Bearer k1"}}, key: "k1"},
		{name: "bearer scheme case and spaces", hdrs: []hv{{"authorization", "bEaReR   k1  "}}, key: "k1"},
		{name: "x-api-key", hdrs: []hv{{"X-API-Key", " k2 "}}, key: "k2"},
		{name: "x-api-key lower case", hdrs: []hv{{"x-api-key", "k2"}}, key: "k2"},
		{name: "both equal", hdrs: []hv{{"Authorization", "Bearer k3"}, {"X-API-Key", "k3"}}, key: "k3"},
		{name: "both equal modulo spaces", hdrs: []hv{{"Authorization", "Bearer k3 "}, {"X-API-Key", " k3"}}, key: "k3"},
		{name: "both different", hdrs: []hv{{"Authorization", "Bearer k3"}, {"X-API-Key", "k4"}}, ambiguous: true},
		{name: "basic authorization and x-api-key", hdrs: []hv{{"Authorization", "Basic dXNlcjpwdw=="}, {"X-API-Key", "k4"}}, ambiguous: true},
		{name: "two authorization", hdrs: []hv{{"Authorization", "Bearer k5"}, {"Authorization", "Bearer k6"}}, ambiguous: true},
		{name: "two equal authorization", hdrs: []hv{{"Authorization", "Bearer k5"}, {"authorization", "Bearer k5"}}, ambiguous: true},
		{name: "two x-api-key", hdrs: []hv{{"X-API-Key", "k7"}, {"X-Api-Key", "k8"}}, ambiguous: true},
		{name: "none", hdrs: nil, key: ""},
		{name: "unrelated headers", hdrs: []hv{{"X-API-Keys", "k9"}, {"Authorizatio", "Bearer k9"}}, key: ""},
		{name: "authorization without bearer", hdrs: []hv{{"Authorization", "Basic dXNlcjpwdw=="}}, key: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h fasthttp.RequestHeader
			h.SetMethod("POST")
			h.SetRequestURI("/v1/chat/completions")
			for _, kv := range tc.hdrs {
				h.Add(kv[0], kv[1])
			}
			key, err := keyFromHeaders(&h)
			if tc.ambiguous {
				wantErr(t, err, 400, "ambiguous_credentials")
				if key != nil {
					t.Fatalf("key %q returned with the error", key)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(key) != tc.key {
				t.Fatalf("key %q, want %q", key, tc.key)
			}
		})
	}
}

// ---- authenticate ----

func authCtx(hdrs ...string) *fasthttp.RequestCtx {
	ctx := new(fasthttp.RequestCtx)
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/chat/completions")
	for i := 0; i+1 < len(hdrs); i += 2 {
		ctx.Request.Header.Add(hdrs[i], hdrs[i+1])
	}
	return ctx
}

func TestAuthenticate(t *testing.T) {
	s := newTestServer(t, nil)
	st := authenticate{s.authn}
	if st.stage().String() != "auth" {
		t.Fatalf("stage %s", st.stage())
	}

	t.Run("missing key", func(t *testing.T) {
		ctx, ex := authCtx(), newEx(s, nil)
		e := wantErr(t, st.run(ctx, ex), 401, "invalid_api_key")
		if !strings.Contains(e.Msg, "missing API key") || !errors.Is(e, auth.ErrNoKey) {
			t.Fatalf("message %q cause %v", e.Msg, e.Err)
		}
		if !ctx.Response.ConnectionClose() {
			t.Fatal("no Connection: close: the unread body would be parsed as the next request")
		}
		s.fail(ctx, ex, e, 0)
		if ctx.Response.StatusCode() != 401 || !strings.Contains(ctx.Response.String(), "Connection: close") {
			t.Fatalf("response:\n%s", ctx.Response.String())
		}
		if ex.out.Status != 401 || ex.out.ErrorCode != "invalid_api_key" || ex.out.KeyID != "" {
			t.Fatalf("outcome %+v", ex.out)
		}
	})
	t.Run("bad key", func(t *testing.T) {
		ctx, ex := authCtx("Authorization", "Bearer mr2_nope"), newEx(s, nil)
		e := wantErr(t, st.run(ctx, ex), 401, "invalid_api_key")
		if e.Msg != "invalid API key" || strings.Contains(e.Msg, "mr2_nope") {
			t.Fatalf("message %q", e.Msg)
		}
		if !ctx.Response.ConnectionClose() {
			t.Fatal("no Connection: close")
		}
		if ex.principal != (auth.Principal{}) {
			t.Fatalf("principal recorded for a bad key: %+v", ex.principal)
		}
	})
	t.Run("ambiguous", func(t *testing.T) {
		ctx, ex := authCtx("Authorization", "Bearer "+testKey, "X-API-Key", testNoScope), newEx(s, nil)
		wantErr(t, st.run(ctx, ex), 400, "ambiguous_credentials")
	})
	t.Run("without inference scope", func(t *testing.T) {
		ctx, ex := authCtx("X-API-Key", testNoScope), newEx(s, nil)
		wantErr(t, st.run(ctx, ex), 403, "insufficient_scope")
		if !ctx.Response.ConnectionClose() {
			t.Fatal("no Connection: close")
		}
		if ex.out.KeyID != "" || ex.principal.User != "" {
			t.Fatalf("a refused principal was recorded: %+v", ex.out)
		}
	})
	t.Run("good", func(t *testing.T) {
		ctx, ex := authCtx("Authorization", "Bearer "+testKey), newEx(s, nil)
		if err := st.run(ctx, ex); err != nil {
			t.Fatal(err)
		}
		if ctx.Response.ConnectionClose() {
			t.Fatal("Connection: close on success")
		}
		if ex.principal.User != "alice" || ex.principal.Group != "lab" {
			t.Fatalf("principal %+v", ex.principal)
		}
		if ex.out.KeyID != "mr2_test…" || ex.out.User != "alice" || ex.out.Group != "lab" {
			t.Fatalf("outcome %+v", ex.out)
		}
	})
}

// ---- limitStage ----

type fakeLimiter struct {
	saw *auth.Principal
	err error
	t   *fakeTicket
}

type fakeTicket struct {
	done, used int64
	min, want  int64
	grant      int64
}

func (t *fakeTicket) Reserve(_ context.Context, lo, want int64) (int64, error) {
	t.min, t.want = lo, want
	if t.grant < lo {
		return 0, &quota.Denied{Kind: "tokens", Msg: "token budget spent", RetryAfter: 90 * time.Second,
			Status: quota.Status{LimitTokens: 100, RemainingTokens: t.grant, ResetTokens: 90 * time.Second}}
	}
	return min(t.grant, want), nil
}
func (t *fakeTicket) Done(used int64) { t.done++; t.used = used }
func (t *fakeTicket) Status() quota.Status {
	return quota.Status{LimitRequests: 60, RemainingRequests: 59, ResetRequests: 1500 * time.Millisecond,
		LimitTokens: 100, RemainingTokens: t.grant, ResetTokens: time.Hour}
}

func (l *fakeLimiter) Admit(_ context.Context, p *auth.Principal) (Ticket, error) {
	l.saw = p
	if l.err != nil {
		return nil, l.err
	}
	return l.t, nil
}

func TestLimitStage(t *testing.T) {
	s := newTestServer(t, nil)
	l := &fakeLimiter{t: &fakeTicket{grant: 100}}
	ex := newEx(s, nil)
	ex.principal.User = "alice"
	ex.principal.Limits = auth.Limits{RPM: 60, TokenBudget: 100}
	rc := new(fasthttp.RequestCtx)
	if err := (limitStage{l}).run(rc, ex); err != nil {
		t.Fatal(err)
	}
	if l.saw == nil || l.saw.User != "alice" {
		t.Fatalf("limiter saw %+v", l.saw)
	}
	for k, v := range map[string]string{"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "59",
		"x-ratelimit-reset-requests": "2s", "x-ratelimit-limit-tokens": "100", "x-ratelimit-remaining-tokens": "100",
		"x-ratelimit-reset-tokens": "3600s"} {
		if got := string(rc.Response.Header.Peek(k)); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	// A chat request without max_tokens reserves the default output and
	// is capped to what the budget grants.
	ex.body = []byte(`{"model":"m","messages":[{"role":"user","content":"hello there"}]}`)
	if err := (budget{}).run(rc, ex); err != nil {
		t.Fatal(err)
	}
	if est := inputEstimate(ex.body); l.t.min != est+1 || l.t.want != est+int64(s.cfg.Quota.DefaultMaxTokens) || ex.maxOutput != int(100-est) {
		t.Errorf("reserve min %d want %d cap %d (estimate %d)", l.t.min, l.t.want, ex.maxOutput, est)
	}
	ex.out.Usage = outcome.Usage{Prompt: 7, Completion: 5, Reported: true}
	ex.releaseHeld()
	ex.releaseHeld()
	if l.t.done != 1 || l.t.used != 12 {
		t.Fatalf("Done ran %d times with %d, want once with 12", l.t.done, l.t.used)
	}

	// A request the budget cannot cover is a 429 with the token headers.
	l.t = &fakeTicket{grant: 1}
	ex = newEx(s, nil)
	ex.principal.Limits = auth.Limits{TokenBudget: 100}
	ex.body = ex.body[:0]
	ex.body = append(ex.body, `{"model":"m","messages":[{"role":"user","content":"hello there"}]}`...)
	rc = new(fasthttp.RequestCtx)
	if err := (limitStage{l}).run(rc, ex); err != nil {
		t.Fatal(err)
	}
	err := (budget{}).run(rc, ex)
	wantErr(t, err, 429, "insufficient_quota")
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.RetryAfter != 90 || string(rc.Response.Header.Peek("x-ratelimit-remaining-tokens")) != "1" {
		t.Errorf("denied: %+v, remaining %q", ae, rc.Response.Header.Peek("x-ratelimit-remaining-tokens"))
	}
	ex.releaseHeld()
	if l.t.done != 1 || l.t.used != 0 {
		t.Errorf("a refused reservation settles with %d (done %d), want 0", l.t.used, l.t.done)
	}

	l = &fakeLimiter{err: &quota.Denied{Kind: "requests", Msg: "slow down", RetryAfter: 1500 * time.Millisecond,
		Status: quota.Status{LimitRequests: 60}}}
	ex = newEx(s, nil)
	ex.principal.Limits = auth.Limits{RPM: 60}
	rc = new(fasthttp.RequestCtx)
	err = (limitStage{l}).run(rc, ex)
	wantErr(t, err, 429, "rate_limit_exceeded")
	if !errors.As(err, &ae) || ae.RetryAfter != 2 || string(rc.Response.Header.Peek("x-ratelimit-remaining-requests")) != "0" {
		t.Errorf("rpm denied: %+v", ae)
	}
	if ex.ticket != nil {
		t.Fatal("a refused request holds a ticket")
	}
	if err := (limitStage{NoLimits{}}).run(nil, newEx(s, nil)); err != nil {
		t.Fatal(err)
	}
}

// ---- readLimited ----

func TestReadLimited(t *testing.T) {
	data := func(n int) []byte { return bytes.Repeat([]byte("x"), n) }
	errBoom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		r       io.Reader
		dst     []byte
		max     int
		hint    int
		wantLen int
		wantErr error
	}{
		{name: "exact max with hint", r: bytes.NewReader(data(1000)), max: 1000, hint: 1000, wantLen: 1000},
		{name: "max+1 with hint", r: bytes.NewReader(data(1001)), max: 1000, hint: 1001, wantErr: errTooLarge},
		{name: "max+1 with a lying hint", r: bytes.NewReader(data(1001)), max: 1000, hint: 10, wantErr: errTooLarge},
		{name: "hint larger than the body", r: bytes.NewReader(data(10)), max: 1000, hint: 500, wantLen: 10},
		{name: "chunked exact max", r: iotest.OneByteReader(bytes.NewReader(data(10000))), max: 10000, hint: -1, wantLen: 10000},
		{name: "chunked max+1", r: iotest.HalfReader(bytes.NewReader(data(10001))), max: 10000, hint: -1, wantErr: errTooLarge},
		{name: "chunked large", r: bytes.NewReader(data(1 << 20)), max: 1 << 20, hint: -1, wantLen: 1 << 20},
		{name: "data with EOF", r: iotest.DataErrReader(bytes.NewReader(data(77))), max: 100, hint: -1, wantLen: 77},
		{name: "reader error", r: io.MultiReader(bytes.NewReader(data(5)), iotest.ErrReader(errBoom)), max: 100, hint: -1, wantLen: 5, wantErr: errBoom},
		{name: "reader error at once", r: iotest.ErrReader(errBoom), max: 100, hint: 20, wantErr: errBoom},
		{name: "empty", r: bytes.NewReader(nil), max: 100, hint: 0, wantLen: 0},
		{name: "nil reader", r: nil, max: 100, hint: 0, wantLen: 0},
		{name: "zero max, empty", r: bytes.NewReader(nil), max: 0, hint: -1, wantLen: 0},
		{name: "zero max, one byte", r: bytes.NewReader(data(1)), max: 0, hint: -1, wantErr: errTooLarge},
		// A pooled buffer larger than max must not let more than max through.
		{name: "big pooled dst, over", r: bytes.NewReader(data(11)), dst: make([]byte, 0, 1<<16), max: 10, hint: -1, wantErr: errTooLarge},
		{name: "big pooled dst, exact", r: bytes.NewReader(data(10)), dst: make([]byte, 0, 1<<16), max: 10, hint: 10, wantLen: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readLimited(tc.r, tc.dst, tc.max, tc.hint)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == errTooLarge {
				if len(got) <= tc.max {
					t.Fatalf("errTooLarge with only %d bytes read (max %d)", len(got), tc.max)
				}
				if len(got) > tc.max+1 && cap(tc.dst) == 0 {
					t.Fatalf("read %d bytes past max %d: the buffer must stop at max+1", len(got), tc.max)
				}
				return
			}
			if len(got) != tc.wantLen {
				t.Fatalf("len %d, want %d", len(got), tc.wantLen)
			}
			if tc.wantLen > 0 && !bytes.Equal(got, data(tc.wantLen)) {
				t.Fatal("content differs")
			}
		})
	}
}

// readLimited appends to dst's existing bytes.
func TestReadLimited_Appends(t *testing.T) {
	got, err := readLimited(strings.NewReader("def"), []byte("abc"), 10, -1)
	if err != nil || string(got) != "abcdef" {
		t.Fatalf("%q %v", got, err)
	}
}

// ---- readBody ----

// countingReader fails the test when read, if forbidden.
type countingReader struct {
	r     io.Reader
	reads int
	onRd  func()
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	if c.onRd != nil {
		c.onRd()
	}
	return c.r.Read(p)
}

// bodyCtx is a request whose body arrives from r; size is its
// Content-Length (-1: chunked).
func bodyCtx(r io.Reader, size int) *fasthttp.RequestCtx {
	ctx := new(fasthttp.RequestCtx)
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/chat/completions")
	ctx.Request.SetBodyStream(r, size)
	return ctx
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var _ net.Error = timeoutErr{}

func TestReadBody(t *testing.T) {
	s := newTestServer(t, func(c *config.Config) {
		c.Limits.MaxBodyBytes = 100
		c.Limits.MaxBufferedBodyBytes = 1000
	})
	st := readBody{s}

	t.Run("content-length over the limit is refused unread", func(t *testing.T) {
		cr := &countingReader{r: strings.NewReader(strings.Repeat("x", 101))}
		ctx, ex := bodyCtx(cr, 101), newEx(s, nil)
		e := wantErr(t, st.run(ctx, ex), 413, "request_too_large")
		if !strings.Contains(e.Msg, "100 bytes") {
			t.Fatalf("message %q", e.Msg)
		}
		if cr.reads != 0 {
			t.Fatalf("the body was read (%d reads)", cr.reads)
		}
		if !ctx.Response.ConnectionClose() || s.buffered.Load() != 0 || ex.bodyHeld != 0 {
			t.Fatalf("close %v buffered %d held %d", ctx.Response.ConnectionClose(), s.buffered.Load(), ex.bodyHeld)
		}
	})
	t.Run("exact limit", func(t *testing.T) {
		body := strings.Repeat("y", 100)
		ctx, ex := bodyCtx(strings.NewReader(body), 100), newEx(s, nil)
		if err := st.run(ctx, ex); err != nil {
			t.Fatal(err)
		}
		if string(ex.body) != body || ex.out.BytesIn != 100 {
			t.Fatalf("body %d bytes, BytesIn %d", len(ex.body), ex.out.BytesIn)
		}
		if s.buffered.Load() != 100 || ex.bodyHeld != 100 {
			t.Fatalf("buffered %d held %d", s.buffered.Load(), ex.bodyHeld)
		}
		ex.releaseHeld()
		if s.buffered.Load() != 0 || ex.bodyHeld != 0 {
			t.Fatalf("after release: buffered %d held %d", s.buffered.Load(), ex.bodyHeld)
		}
	})
	t.Run("chunked counts its bytes as they arrive", func(t *testing.T) {
		// Bug: a chunked body reserved the whole limits.max_body_bytes of
		// the gateway-wide budget before its first byte arrived, so idle
		// chunked uploads exhausted it. Each read must find exactly the
		// bytes delivered before it counted.
		const body = `{"model":"m"}`
		src := iotest.OneByteReader(strings.NewReader(body))
		delivered, bad := int64(0), ""
		cr := &countingReader{r: readerFunc(func(p []byte) (int, error) {
			n, err := src.Read(p)
			delivered += int64(n)
			return n, err
		})}
		cr.onRd = func() {
			if got := s.buffered.Load(); got != delivered && bad == "" {
				bad = fmt.Sprintf("read %d: buffered %d with %d bytes delivered", cr.reads, got, delivered)
			}
		}
		ctx, ex := bodyCtx(cr, -1), newEx(s, nil)
		if ctx.Request.Header.ContentLength() != -1 {
			t.Fatalf("content length %d: not chunked", ctx.Request.Header.ContentLength())
		}
		if err := st.run(ctx, ex); err != nil {
			t.Fatal(err)
		}
		if bad != "" {
			t.Fatal(bad)
		}
		if cr.reads < len(body) {
			t.Fatalf("%d reads: the body did not arrive a byte at a time", cr.reads)
		}
		if s.buffered.Load() != 13 || ex.bodyHeld != 13 || string(ex.body) != body {
			t.Fatalf("buffered %d held %d body %q", s.buffered.Load(), ex.bodyHeld, ex.body)
		}
		ex.releaseHeld()
		if s.buffered.Load() != 0 {
			t.Fatalf("after release: buffered %d", s.buffered.Load())
		}
	})
	t.Run("chunked over the limit", func(t *testing.T) {
		ctx, ex := bodyCtx(strings.NewReader(strings.Repeat("z", 101)), -1), newEx(s, nil)
		wantErr(t, st.run(ctx, ex), 413, "request_too_large")
		if !ctx.Response.ConnectionClose() {
			t.Fatal("no Connection: close")
		}
		ex.releaseHeld()
		if s.buffered.Load() != 0 {
			t.Fatalf("after release: buffered %d", s.buffered.Load())
		}
	})
	t.Run("read timeout is 408", func(t *testing.T) {
		for _, cause := range []error{os.ErrDeadlineExceeded, timeoutErr{}, &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}} {
			r := io.MultiReader(strings.NewReader("partial"), iotest.ErrReader(cause))
			ctx, ex := bodyCtx(r, 50), newEx(s, nil)
			e := wantErr(t, st.run(ctx, ex), 408, "request_timeout")
			if e.Type != canon.ErrInvalidRequest || !ctx.Response.ConnectionClose() {
				t.Fatalf("%v: type %s close %v", cause, e.Type, ctx.Response.ConnectionClose())
			}
			ex.releaseHeld()
		}
		if s.buffered.Load() != 0 {
			t.Fatalf("after release: buffered %d", s.buffered.Load())
		}
	})
	t.Run("other read error is 400", func(t *testing.T) {
		ctx, ex := bodyCtx(iotest.ErrReader(io.ErrUnexpectedEOF), 50), newEx(s, nil)
		wantErr(t, st.run(ctx, ex), 400, "bad_request")
		if !ctx.Response.ConnectionClose() {
			t.Fatal("no Connection: close")
		}
		ex.releaseHeld()
	})
	t.Run("no body", func(t *testing.T) {
		ctx, ex := bodyCtx(nil, 0), newEx(s, nil)
		if err := st.run(ctx, ex); err != nil || len(ex.body) != 0 {
			t.Fatalf("%v %q", err, ex.body)
		}
		ex.releaseHeld()
	})
	if s.buffered.Load() != 0 {
		t.Fatalf("buffered %d at the end", s.buffered.Load())
	}
}

func TestReadBody_BufferedBudget(t *testing.T) {
	s := newTestServer(t, func(c *config.Config) {
		c.Limits.MaxBodyBytes = 100
		c.Limits.MaxBufferedBodyBytes = 100
	})
	st := readBody{s}
	s.buffered.Store(90) // other requests hold 90 bytes

	// 20 more would exceed 100: 503 with Retry-After, nothing read or kept.
	cr := &countingReader{r: strings.NewReader(strings.Repeat("a", 20))}
	ctx, ex := bodyCtx(cr, 20), newEx(s, nil)
	e := wantErr(t, st.run(ctx, ex), 503, "gateway_busy")
	if e.RetryAfterSeconds() != 1 || cr.reads != 0 || !ctx.Response.ConnectionClose() {
		t.Fatalf("retry-after %d reads %d close %v", e.RetryAfterSeconds(), cr.reads, ctx.Response.ConnectionClose())
	}
	if s.buffered.Load() != 90 || ex.bodyHeld != 0 {
		t.Fatalf("buffered %d held %d after a refusal", s.buffered.Load(), ex.bodyHeld)
	}
	s.fail(ctx, ex, e, 0)
	if ctx.Response.StatusCode() != 503 || string(ctx.Response.Header.Peek("Retry-After")) != "1" {
		t.Fatalf("response:\n%s", ctx.Response.String())
	}

	// A chunked body counts what arrives: one byte fits beside the 90...
	small := newEx(s, nil)
	if err := st.run(bodyCtx(strings.NewReader("x"), -1), small); err != nil {
		t.Fatalf("a 1-byte chunked body beside 90 of 100 bytes held: %v", err)
	}
	small.releaseHeld()
	// ...and one that outgrows the room is refused as it arrives.
	over := newEx(s, nil)
	wantErr(t, st.run(bodyCtx(strings.NewReader(strings.Repeat("x", 11)), -1), over), 503, "gateway_busy")
	over.releaseHeld()
	if s.buffered.Load() != 90 {
		t.Fatalf("buffered %d after the chunked bodies, want 90", s.buffered.Load())
	}

	// Exactly filling the budget is allowed.
	ctx, held := bodyCtx(strings.NewReader(strings.Repeat("b", 10)), 10), newEx(s, nil)
	if err := st.run(ctx, held); err != nil {
		t.Fatal(err)
	}
	if s.buffered.Load() != 100 {
		t.Fatalf("buffered %d, want 100", s.buffered.Load())
	}
	third := newEx(s, nil)
	wantErr(t, st.run(bodyCtx(strings.NewReader("c"), 1), third), 503, "gateway_busy")

	// finish (via releaseHeld) gives the budget back; the next one fits.
	s.finish(ctx, held)
	if s.buffered.Load() != 90 {
		t.Fatalf("buffered %d after finish, want 90", s.buffered.Load())
	}
	third = newEx(s, nil)
	if err := st.run(bodyCtx(strings.NewReader("c"), 1), third); err != nil {
		t.Fatal(err)
	}
	third.releaseHeld()
	third.releaseHeld() // twice: given back once
	if s.buffered.Load() != 90 {
		t.Fatalf("buffered %d, want 90", s.buffered.Load())
	}
}

// ---- precheck / checkModel ----

func chatRoute(routing *sdk.Routing) *route {
	rt := &route{r: sdk.Route{Name: "chat", Kind: sdk.EndpointChat, Method: "POST", Path: "/v1/chat/completions", Routing: routing},
		kind: sdk.EndpointChat, dialect: "openai"}
	if routing != nil {
		rt.spec, rt.marks = routingSpec(routing)
	}
	return rt
}

func TestPrecheck(t *testing.T) {
	s := newTestServer(t, func(c *config.Config) {
		c.Limits.MaxJSONDepth = 3
		c.Limits.MaxJSONValues = 12
	})
	openai := &sdk.Routing{Model: "model", Stream: "stream", IncludeUsage: "stream_options.include_usage",
		MaxTokens: []string{"max_completion_tokens", "max_tokens"}}
	long := func(n int) string { return strings.Repeat("m", n) }
	for _, tc := range []struct {
		name    string
		routing *sdk.Routing
		body    string
		status  int
		code    string
	}{
		{name: "route without routing skips", routing: nil, body: `not json at all {{{`},
		{name: "ok", routing: openai, body: `{"model":"llama-3","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{name: "no model field", routing: openai, body: `{"messages":[]}`},
		{name: "model not a string", routing: openai, body: `{"model":42}`},
		{name: "model null", routing: openai, body: `{"model":null}`},
		{name: "invalid json", routing: openai, body: `{"model":"m",}`, status: 400, code: "invalid_json"},
		{name: "not an object", routing: openai, body: `["model"]`, status: 400, code: "invalid_json"},
		{name: "empty body", routing: openai, body: ``, status: 400, code: "invalid_json"},
		{name: "too deep", routing: openai, body: `{"a":{"b":{"c":{}}}}`, status: 400, code: "invalid_json"},
		{name: "depth at the limit", routing: openai, body: `{"a":{"b":{"c":1}}}`},
		{name: "too many values", routing: openai, body: `{"a":[1,2,3,4,5,6,7,8,9,10,11,12]}`, status: 413, code: "request_too_large"},
		{name: "model with \\u0000", routing: openai, body: `{"model":"lla\u0000ma"}`, status: 400, code: "invalid_model"},
		{name: "model with escaped newline", routing: openai, body: `{"model":"llama\n"}`, status: 400, code: "invalid_model"},
		{name: "model with DEL", routing: openai, body: "{\"model\":\"llama\x7f\"}", status: 400, code: "invalid_model"},
		{name: "model with raw control byte", routing: openai, body: "{\"model\":\"lla\x01ma\"}", status: 400, code: "invalid_json"},
		{name: "model 256 bytes", routing: openai, body: `{"model":"` + long(256) + `"}`},
		{name: "model 257 bytes", routing: openai, body: `{"model":"` + long(257) + `"}`, status: 400, code: "invalid_model"},
		{name: "model 4 KB", routing: openai, body: `{"model":"` + long(4096) + `"}`, status: 400, code: "invalid_model"},
		{name: "escaped model key", routing: openai, body: `{"mo\u0064el":"a\u0000"}`, status: 400, code: "invalid_model"},
		{name: "last duplicate model wins", routing: openai, body: `{"model":"a\u0000","model":"ok"}`},
		// A routing spec that does not compile keeps the depth and size checks.
		{name: "uncompilable spec still checks depth", routing: &sdk.Routing{Model: "a.b.c.d.e"}, body: `{"a":{"b":{"c":{}}}}`, status: 400, code: "invalid_json"},
		{name: "uncompilable spec passes a good body", routing: &sdk.Routing{Model: "a.b.c.d.e"}, body: `{"model":"a\u0000"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := newEx(s, nil)
			ex.setRoute(chatRoute(tc.routing))
			ex.body = append(ex.body[:0], tc.body...)
			err := precheck{s}.run(nil, ex)
			if tc.status == 0 {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			e := wantErr(t, err, tc.status, tc.code)
			if len(e.Msg) > 300 {
				t.Fatalf("message of %d bytes", len(e.Msg))
			}
		})
	}
}

// routingSpec keeps each routing field at its fixed index, empty paths
// included.
func TestRoutingSpec(t *testing.T) {
	spec, _ := routingSpec(&sdk.Routing{Model: "model", MaxTokens: []string{"max_tokens", "options.num_predict"}, Choices: "n"})
	if spec == nil {
		t.Fatal("no spec")
	}
	if spec.Len() != 7 || spec.Index("model") != fieldModel || spec.Index("n") != fieldChoices ||
		spec.Index("max_tokens") != fieldMaxTokens || spec.Index("options.num_predict") != fieldMaxTokens+1 {
		t.Fatalf("spec len %d, indexes %d %d %d", spec.Len(), spec.Index("model"), spec.Index("max_tokens"), spec.Index("options.num_predict"))
	}
	if spec, _ := routingSpec(&sdk.Routing{Model: "a.b.c.d.e"}); spec != nil {
		t.Fatal("a path of 5 keys compiled")
	}
}

// A key that could not be checked (the store down, the key not cached) is
// a 503 with Retry-After, not a 401 that would make the client drop a
// good key; a wrapped bad-key error is still a 401.
func TestAuthFailure(t *testing.T) {
	wantErr(t, authFailure(fmt.Errorf("revoked: %w", auth.ErrBadKey)), 401, "invalid_api_key")
	e := wantErr(t, authFailure(errors.New("store: connection refused")), 503, "authentication_unavailable")
	if e.RetryAfter != 1 || strings.Contains(e.Msg, "refused") {
		t.Errorf("503: %+v", e)
	}
}

// A request for n choices reserves n times its output and caps each
// choice to its share of the grant.
func TestBudget_Choices(t *testing.T) {
	s := newTestServer(t, nil)
	for _, tc := range []struct {
		name           string
		choices, maxTo int
		grant          int64
		refused        bool
	}{
		{"n 20 max_tokens 1000", 20, 1000, 3000, false},
		{"n 50 default output", 50, 0, 3000, false},
		{"less than a token each", 50, 100, 40, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &fakeLimiter{t: &fakeTicket{grant: tc.grant}}
			ex := newEx(s, nil)
			ex.principal.Limits = auth.Limits{TokenBudget: 3000}
			ex.body = append(ex.body[:0], `{"model":"m","messages":[{"role":"user","content":"hi"}]}`...)
			ex.req.Choices, ex.req.MaxTokens = tc.choices, tc.maxTo
			rc := new(fasthttp.RequestCtx)
			if err := (limitStage{l}).run(rc, ex); err != nil {
				t.Fatal(err)
			}
			err := (budget{}).run(rc, ex)
			if tc.refused {
				wantErr(t, err, 429, "insufficient_quota")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out := int64(tc.maxTo)
			if out == 0 {
				out = int64(s.cfg.Quota.DefaultMaxTokens)
			}
			est, n := inputEstimate(ex.body), int64(tc.choices)
			if l.t.want != est+n*out || l.t.min != est+n {
				t.Errorf("reserved min %d want %d; want min %d want %d", l.t.min, l.t.want, est+n, est+n*out)
			}
			if got, want := int64(ex.maxOutput), (tc.grant-est)/n; got != want || got*n+est > tc.grant {
				t.Errorf("each choice capped at %d, want %d", got, want)
			}
		})
	}
}

// The native scan reads how many sequences a request generates: n, times
// the prompts of a text completion's prompt list.
func TestRouteFields_Choices(t *testing.T) {
	rt := &sdk.Routing{Model: "model", Stream: "stream", Choices: "n", Prompts: "prompt", MaxTokens: []string{"max_tokens"}}
	spec, _ := routingSpec(rt)
	s := newTestServer(t, nil)
	for _, tc := range []struct {
		body   string
		want   int
		routed bool
	}{
		{`{"model":"m","messages":[]}`, 1, true},
		{`{"model":"m","n":20,"max_tokens":1000}`, 20, true},
		{`{"model":"m","prompt":"one"}`, 1, true},
		{`{"model":"m","prompt":["a","b, \"c\"",  "[d]"],"n":5}`, 15, true},
		{`{"model":"m","prompt":[]}`, 1, true},
		{`{"model":"m","n":"3"}`, 0, false}, // the translator says what is wrong
		{`{"model":"m","n":0}`, 0, false},
	} {
		ex := newEx(s, nil)
		ex.route.spec, ex.route.r.Routing = spec, rt
		ex.body = append(ex.body[:0], tc.body...)
		if err := jsonscan.Scan(ex.body, spec, jsonscan.Limits{}, &ex.scan); err != nil {
			t.Fatal(err)
		}
		ex.buf = append(ex.buf[:0], 'm')
		ex.routeFields()
		if ex.routed != tc.routed || tc.routed && ex.req.Choices != tc.want {
			t.Errorf("%s: routed %v, choices %d; want %v, %d", tc.body, ex.routed, ex.req.Choices, tc.routed, tc.want)
		}
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
