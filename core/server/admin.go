package server

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// Admin serves the account and admin API (/api/admin/…, /api/me…) for a
// caller the server has authenticated; it checks scopes itself (an admin
// or auditor key needs no inference scope).
type Admin interface {
	Handles(path []byte) bool
	Serve(ctx *fasthttp.RequestCtx, p *auth.Principal, body []byte)
}

// serveAdmin authenticates, reads the body within the usual limits and
// hands the request to the Admin. Its errors use the admin API's shape,
// {"detail": "…"}, as the reference implementation's clients expect.
func (s *Server) serveAdmin(ctx *fasthttp.RequestCtx, ex *exchange) {
	ex.out.Route, ex.out.Kind = "admin", "admin"
	t0 := time.Now()
	key, err := keyFromHeaders(&ctx.Request.Header)
	if err == nil {
		var p auth.Principal
		if p, err = s.authn.Authenticate(ex.ctx, key); err == nil {
			ex.principal = p
			ex.out.KeyID, ex.out.User, ex.out.Group = p.KeyID, p.User, p.Group
		} else {
			err = authFailure(err)
		}
	}
	ex.out.Stages[outcome.StageAuth] = time.Since(t0)
	if err == nil {
		t0 = time.Now()
		err = readBody{s}.run(ctx, ex)
		ex.out.Stages[outcome.StageRead] = time.Since(t0)
	}
	if err != nil {
		ctx.SetConnectionClose()
		e := apierr.Public(err)
		ex.out.Status, ex.out.ErrorCode, ex.out.Error = e.Status, e.Code, e.Error()
		writeDetail(ctx, e.Status, e.Msg)
		if e.Status == fasthttp.StatusTooManyRequests || e.Status == fasthttp.StatusServiceUnavailable {
			ctx.Response.Header.Set("Retry-After", strconv.Itoa(max(e.RetryAfterSeconds(), 1)))
		}
		return
	}
	t0 = time.Now()
	s.admin.Serve(ctx, &ex.principal, ex.body)
	ex.out.Stages[outcome.StageRespond] = time.Since(t0)
}

// writeDetail answers {"detail": msg}.
func writeDetail(ctx *fasthttp.RequestCtx, status int, msg string) {
	var w jsonw.W
	w.Obj()
	w.Key("detail")
	w.Str(msg)
	w.EndObj()
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(w.B)
}
