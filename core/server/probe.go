package server

import (
	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// public reports whether rt answers without a key (sdk.Route.Public): a
// models route about no one model. Public on any other route is ignored,
// so a plugin cannot open a route that reads a body or reaches a backend.
func (rt *route) public() bool {
	return rt.r.Public && rt.kind == sdk.EndpointModels && !rt.oneModel()
}

// probe serves a public models route (Ollama's GET / and /api/version,
// which clients send as connectivity checks before they have a key): the
// translator encodes an empty model list, so the answer names nothing the
// gateway serves. The body is not read.
type probe struct{}

func (probe) stage() outcome.Stage { return outcome.StageRespond }

func (probe) run(ctx *fasthttp.RequestCtx, ex *exchange) error {
	if err := ex.pinTranslator(); err != nil {
		return err
	}
	var none canon.ModelList
	ex.buf = none.AppendJSON(ex.buf[:0])
	if err := ex.calls.EncodeModels(ex.ctx, ex.tver, "", ex.buf, &ex.enc); err != nil {
		return pluginFailure(err)
	}
	ctx.SetContentType(orDefault(ex.enc.ContentType, "application/json"))
	ctx.SetBody(ex.enc.Body)
	return nil
}

// expect: a probe reads no body.
func (probe) expect(_ *Server, ctx *fasthttp.RequestCtx, _ *route) int {
	if ctx.Request.Header.ContentLength() != 0 {
		return fasthttp.StatusRequestEntityTooLarge
	}
	return fasthttp.StatusContinue
}

// challenge names the scheme a 401 asks for (RFC 9110 §11.6.1 requires
// WWW-Authenticate on every 401; HTTP clients and proxies look for it).
func challenge(ctx *fasthttp.RequestCtx, status int) {
	if status == fasthttp.StatusUnauthorized {
		ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="mindrouter"`)
	}
}
