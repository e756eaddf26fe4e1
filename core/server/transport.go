package server

import (
	"errors"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// handleTransportError answers requests fasthttp could not read: headers
// over limits.max_header_bytes (414 when the request line alone is too
// long, else 431), a read timeout (408), a body over the limit (413), or
// malformed HTTP (400). The route's dialect is used when the path is
// known. The error's own text, which quotes raw request bytes (possibly a
// key), is never logged or echoed: only its class is.
func (s *Server) handleTransportError(ctx *fasthttp.RequestCtx, err error) {
	ex := s.exchanges.Get().(*exchange)
	ex.begin(s, nil)
	ctx.Response.Header.Set("X-Request-ID", ex.id)
	// Only a request whose header was parsed (it has its Host) names its
	// route: otherwise ctx's method and path are fasthttp's defaults
	// (GET /), which a plugin may serve (Ollama's probe) and would answer
	// in its dialect.
	if len(ctx.Request.Header.Host()) > 0 {
		if rt, _, _ := s.routes.index().lookup(ctx.Method(), ctx.Path(), &ctx.Request); rt != nil {
			ex.setRoute(rt)
		}
	}
	var e *apierr.Error
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.As(err, &small):
		if requestLineTooLong(err.Error()) {
			e = apierr.New(canon.ErrInvalidRequest, "uri_too_long", "the request URL is too long").WithStatus(fasthttp.StatusRequestURITooLong)
		} else {
			e = apierr.New(canon.ErrInvalidRequest, "headers_too_large",
				"the request headers are larger than "+strconv.Itoa(s.cfg.Limits.MaxHeaderBytes)+" bytes").WithStatus(fasthttp.StatusRequestHeaderFieldsTooLarge)
		}
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		e = tooLarge(s.cfg.Limits.MaxBodyBytes).(*apierr.Error)
	case isTimeout(err):
		e = apierr.New(canon.ErrInvalidRequest, "request_timeout", "the request did not arrive in time").WithStatus(fasthttp.StatusRequestTimeout)
	default:
		e = apierr.New(canon.ErrInvalidRequest, "bad_request", "malformed HTTP request")
	}
	ex.out.Error = "transport: " + e.Code // never err.Error(): it quotes the raw request
	s.fail(ctx, ex, e, 0)
	ctx.SetConnectionClose()
	s.finish(ctx, ex)
}

// requestLineTooLong reads fasthttp's ErrSmallBuffer text, which quotes
// the start of the buffer: no line break in it means the request line
// itself filled the buffer. Only this yes/no leaves the function.
func requestLineTooLong(msg string) bool {
	i := strings.Index(msg, "contents: \"")
	if i < 0 {
		i = strings.Index(msg, "buffer: \"")
	}
	if i < 0 {
		return false
	}
	// The quote is the buffer's first and last 200 bytes: a line break in
	// either means the request line ended inside the buffer.
	return !strings.Contains(msg[i:], `\n`)
}
