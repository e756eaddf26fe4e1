package server

import (
	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// Admin serves the account and admin API (/api/admin/…, /api/me…) for a
// caller the server has authenticated; it checks scopes itself (an admin
// or auditor key needs no inference scope).
type Admin interface {
	Handles(path []byte) bool
	Serve(ctx *fasthttp.RequestCtx, p *auth.Principal, body []byte)
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
