package server

import (
	"bytes"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/outcome"
)

// Console serves the web console (core/console) under its prefix; it
// authenticates with its own session cookie, so its chain is bare: no
// key, exchange or Outcome.
type Console interface {
	Handles(path []byte) bool
	Serve(ctx *fasthttp.RequestCtx)
	// MaxBodyBytes bounds a console request's body (413 beyond).
	MaxBodyBytes() int
}

// serveConsole is the console's one stage.
type serveConsole struct{ c Console }

func (serveConsole) stage() outcome.Stage { return outcome.StageRespond }

func (sc serveConsole) run(ctx *fasthttp.RequestCtx, _ *exchange) error {
	sc.c.Serve(ctx)
	return nil
}

// expect: the body cap, before the body is sent.
func (sc serveConsole) expect(_ *Server, ctx *fasthttp.RequestCtx, _ *route) int {
	if ctx.Request.Header.ContentLength() > sc.c.MaxBodyBytes() {
		return fasthttp.StatusRequestEntityTooLarge
	}
	return fasthttp.StatusContinue
}

// browserHome redirects a browser's GET / or /admin to the console; an
// API client's (Ollama probes GET /) is answered as before.
func (s *Server) browserHome(ctx *fasthttp.RequestCtx) bool {
	if s.console == nil || !ctx.IsGet() {
		return false
	}
	p := ctx.Path()
	if !bytes.Equal(p, []byte("/")) && !bytes.Equal(p, []byte("/admin")) && !bytes.Equal(p, []byte("/admin/")) {
		return false
	}
	if !bytes.Contains(ctx.Request.Header.Peek("Accept"), []byte("text/html")) {
		return false
	}
	ctx.Redirect(s.consoleAt, fasthttp.StatusFound)
	return true
}
