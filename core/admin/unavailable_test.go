package admin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
	"github.com/mindrouter/mindrouter/core/store/sqlstore"
)

// TestStoreDown: with MariaDB unreachable, the admin API and key creation
// answer 503 with Retry-After (the client should retry), not a 500
// "internal error"; they answer again once it is back.
func TestStoreDown(t *testing.T) {
	db := testsvc.StartMariaDB(t)
	px := testsvc.StartProxy(t, db.Addr)
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, "mysql", db.DSNVia(px))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := newEnvStore(t, st, envOpts{})
	// Authenticated while the store answers: the server's cache would
	// hold them through the outage.
	root, err := e.authenticate(ctx, []byte(e.adminKey))
	if err != nil {
		t.Fatal(err)
	}
	alice, err := e.authenticate(ctx, []byte(e.aliceKey))
	if err != nil {
		t.Fatal(err)
	}
	serve := func(p auth.Principal, method, path, body string) *fasthttp.Response {
		var req fasthttp.Request
		req.Header.SetMethod(method)
		req.SetRequestURI(path)
		var rc fasthttp.RequestCtx
		rc.Init(&req, nil, nil)
		e.h.Serve(&rc, &p, []byte(body))
		var resp fasthttp.Response
		rc.Response.CopyTo(&resp)
		return &resp
	}
	px.Cut()
	for _, r := range []struct {
		p                  auth.Principal
		method, path, body string
	}{
		{root, "GET", "/api/admin/users", ""},
		{root, "POST", "/api/admin/users", `{"username":"carol","group":"students"}`},
		{root, "PATCH", "/api/admin/groups/1", `{"rpm_limit":5}`},
		{root, "GET", "/api/admin/api-keys", ""},
		{alice, "POST", "/api/me/api-keys", `{"name":"k"}`},
		{alice, "GET", "/api/me", ""},
	} {
		resp := serve(r.p, r.method, r.path, r.body)
		var d detail
		_ = json.Unmarshal(resp.Body(), &d)
		if resp.StatusCode() != 503 || string(resp.Header.Peek("Retry-After")) == "" || !strings.Contains(d.Detail, "unavailable") {
			t.Errorf("%s %s with the store down: %d Retry-After %q %s; want 503 with Retry-After", r.method, r.path,
				resp.StatusCode(), resp.Header.Peek("Retry-After"), resp.Body())
		}
	}
	px.Restore(t)
	testutil.WaitFor(t, "the admin API back", 10*time.Second, func() bool {
		return serve(root, "GET", "/api/admin/users", "").StatusCode() == 200
	})
}
