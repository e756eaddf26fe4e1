package server

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/config"
)

// recAdmin serves every /api/ path, recording who called with what body.
type recAdmin struct {
	mu     sync.Mutex
	served []string
}

func (*recAdmin) Handles(path []byte) bool { return strings.HasPrefix(string(path), "/api/") }

func (a *recAdmin) Serve(ctx *fasthttp.RequestCtx, p *auth.Principal, body []byte) {
	a.mu.Lock()
	a.served = append(a.served, p.User+" "+string(body))
	a.mu.Unlock()
	ctx.SetContentType("application/json")
	ctx.SetBodyString(`{"ok":true}`)
}

func detailOf(t *testing.T, ctx *fasthttp.RequestCtx) string {
	t.Helper()
	var v struct {
		Detail *string `json:"detail"`
	}
	if err := json.Unmarshal(ctx.Response.Body(), &v); err != nil || v.Detail == nil {
		t.Fatalf("not {\"detail\": …} (%v):\n%s", err, ctx.Response.String())
	}
	return *v.Detail
}

func TestAdminLimiter(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	l := newAdminLimiter(config.AdminLimits{RequestsPerMinute: 3, MaxConcurrent: 2})
	l.now = func() time.Time { return now }
	alice, bob := &auth.Principal{User: "alice", UserID: 7}, &auth.Principal{User: "admin"}

	h1, err1 := l.admit(alice)
	h2, err2 := l.admit(alice)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	_, err := l.admit(alice)
	wantErr(t, err, 429, "concurrency_limit_exceeded")
	h1.Done(0)
	h3, err := l.admit(alice) // the third of the minute's three
	if err != nil {
		t.Fatal(err)
	}
	h2.Done(0)
	h3.Done(0)
	_, err = l.admit(alice)
	if e := wantErr(t, err, 429, "rate_limit_exceeded"); e.RetryAfter != 20 {
		t.Fatalf("retry after %d s, want 20 (one of 3 a minute)", e.RetryAfter)
	}
	if h, err := l.admit(bob); err != nil { // another user has their own
		t.Fatal(err)
	} else {
		h.Done(0)
	}
	now = now.Add(20 * time.Second)
	h, err := l.admit(alice)
	if err != nil {
		t.Fatalf("after 20 s: %v", err)
	}
	h.Done(0)
	// Idle users are forgotten once their bucket is full again.
	now = now.Add(2 * time.Minute)
	if h, err = l.admit(&auth.Principal{User: "carol", UserID: 9}); err != nil {
		t.Fatal(err)
	}
	if len(l.users) != 1 {
		t.Fatalf("%d users kept, want only carol's (in flight)", len(l.users))
	}
	h.Done(0)
	if newAdminLimiter(config.AdminLimits{MaxBodyBytes: 1 << 20}) != nil {
		t.Fatal("a limiter that limits nothing")
	}
}

// The admin API runs its chain: any valid key (the Admin checks scopes),
// the admin limits, the body under limits.admin.max_body_bytes, errors as
// {"detail": …} with Retry-After on a 429.
func TestHandle_AdminChain(t *testing.T) {
	s := newTestServer(t, func(c *config.Config) {
		c.Limits.Admin = config.AdminLimits{MaxBodyBytes: 2048, RequestsPerMinute: 2}
	})
	a := &recAdmin{}
	s.admin = a

	ctx := handleReq(s, "GET", "/api/me")
	if ctx.Response.StatusCode() != 401 || !strings.Contains(detailOf(t, ctx), "API key") || len(a.served) != 0 {
		t.Fatalf("no key:\n%s", ctx.Response.String())
	}
	post := func(key string, body string, size int) (*fasthttp.RequestCtx, *countingReader) {
		cr := &countingReader{r: strings.NewReader(body)}
		ctx := bodyCtx(cr, size)
		ctx.Request.SetRequestURI("/api/me/api-keys")
		ctx.Request.Header.Set("Authorization", "Bearer "+key)
		s.Handle(ctx)
		return ctx, cr
	}
	// An admin-only key (no inference scope) is served.
	ctx, _ = post(testNoScope, `{"name":"k"}`, 12)
	if ctx.Response.StatusCode() != 200 || len(a.served) != 1 || a.served[0] != `bob {"name":"k"}` {
		t.Fatalf("served %q:\n%s", a.served, ctx.Response.String())
	}
	// Over the admin cap (not limits.max_body_bytes): 413, nothing read.
	ctx, cr := post(testKey, strings.Repeat("a", 4096), 4096)
	if ctx.Response.StatusCode() != 413 || !strings.Contains(detailOf(t, ctx), "2048") || cr.reads != 0 {
		t.Fatalf("over the cap (%d reads):\n%s", cr.reads, ctx.Response.String())
	}
	// bob's second request is his last of the minute.
	if ctx, _ = post(testNoScope, `{}`, 2); ctx.Response.StatusCode() != 200 {
		t.Fatalf("second:\n%s", ctx.Response.String())
	}
	ctx, _ = post(testNoScope, `{}`, 2)
	if ctx.Response.StatusCode() != 429 || string(ctx.Response.Header.Peek("Retry-After")) != "30" ||
		!strings.Contains(detailOf(t, ctx), "requests_per_minute") || len(a.served) != 2 {
		t.Fatalf("third:\n%s", ctx.Response.String())
	}
	if s.buffered.Load() != 0 {
		t.Fatalf("%d bytes still held", s.buffered.Load())
	}

	// A chunked body reserves the admin cap, not limits.max_body_bytes:
	// it fits where an inference body would not.
	s.buffered.Store(s.cfg.Limits.MaxBufferedBodyBytes - 2048)
	ctx, _ = post(testKey, `{"name":"c"}`, -1)
	if ctx.Response.StatusCode() != 200 {
		t.Fatalf("chunked under the admin cap:\n%s", ctx.Response.String())
	}
	if s.buffered.Load() != s.cfg.Limits.MaxBufferedBodyBytes-2048 {
		t.Fatalf("buffered %d after the request", s.buffered.Load())
	}
}

// Expect is answered with the checks of the request's own chain.
func TestExpect_EveryRoute(t *testing.T) {
	s := newTestServer(t, func(c *config.Config) { c.Limits.Admin.MaxBodyBytes = 2048 },
		translator(t, "openai", fakeTranslator{}, chatPOST, modelsGET))
	s.admin = &recAdmin{}
	s.keeper = &recKeeper{}
	s.chains = s.buildChains()
	cases := []struct {
		method, path, key string
		size, want        int
	}{
		{"POST", "/api/me/api-keys", testKey, 20, 100},
		{"POST", "/api/me/api-keys", testNoScope, 20, 100}, // the Admin checks scopes
		{"POST", "/api/me/api-keys", testKey, -1, 100},     // chunked: capped while read
		{"POST", "/api/me/api-keys", "", 20, 401},
		{"POST", "/api/me/api-keys", "mr2_wrong_key_000000000", 20, 401},
		{"POST", "/api/admin/users", testKey, 4096, 413},
		{"GET", "/v1/state/resp_1", testKey, 20, 100},
		{"GET", "/v1/state/resp_1", testNoScope, 20, 403},
		{"GET", "/v1/state/resp_1", "", 20, 401},
		{"POST", "/v1/chat/completions", testKey, 4096, 100},
		{"POST", "/v1/chat/completions", testKey, 32 << 20, 413},
		{"POST", "/v1/chat/completions", "", 20, 401},
		{"POST", "/v1/nowhere", testKey, 20, 404},
		{"DELETE", "/v1/chat/completions", testKey, 20, 405},
		{"GET", "/healthz", "", 0, 100},
		{"GET", "/healthz", "", 20, 413},
	}
	for _, tc := range cases {
		ctx := new(fasthttp.RequestCtx)
		ctx.Request.Header.SetMethod(tc.method)
		ctx.Request.SetRequestURI(tc.path)
		ctx.Request.Header.SetContentLength(tc.size)
		if tc.key != "" {
			ctx.Request.Header.Set("Authorization", "Bearer "+tc.key)
		}
		if got := s.expect(ctx); got != tc.want {
			t.Errorf("%s %s key %q length %d: %d, want %d", tc.method, tc.path, tc.key, tc.size, got, tc.want)
		}
	}
}
