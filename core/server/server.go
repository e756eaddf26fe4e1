// Package server is the gateway's HTTP front: a fasthttp handler that
// authenticates, hands the body to the route's translator plugin, picks a
// backend, proxies through the backend's adapter plugin, and relays the
// answer (streamed or not) in the client's own format.
//
// *fasthttp.RequestCtx never leaves this package and is never kept after a
// handler returns; a streamed response's relay goroutine owns only the
// per-request exchange it was given.
package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Server serves the client APIs. Create with New.
type Server struct {
	cfg   *config.Config
	log   *slog.Logger
	host  *pluginhost.Host
	reg   *backend.Registry
	authn auth.Authenticator
	met   *metrics
	ready atomic.Bool

	exchanges sync.Pool
	baseCtx   context.Context
	srv       *fasthttp.Server
}

// Options are the Server's collaborators.
type Options struct {
	Config   *config.Config
	Host     *pluginhost.Host
	Registry *backend.Registry
	Auth     auth.Authenticator
	Logger   *slog.Logger
}

// New returns a Server; it is not ready until SetReady(true).
func New(ctx context.Context, o Options) *Server {
	s := &Server{cfg: o.Config, log: o.Logger.With("component", "server"), host: o.Host,
		reg: o.Registry, authn: o.Auth, met: newMetrics(), baseCtx: ctx}
	s.exchanges.New = func() any { return newExchange() }
	s.srv = &fasthttp.Server{
		Handler:                       s.Handle,
		ErrorHandler:                  s.handleTransportError,
		Name:                          "mindrouter",
		MaxRequestBodySize:            o.Config.Limits.MaxBodyBytes,
		ReadTimeout:                   2 * time.Minute,
		IdleTimeout:                   2 * time.Minute,
		NoDefaultServerHeader:         true,
		NoDefaultContentType:          true,
		DisableHeaderNamesNormalizing: false,
		CloseOnShutdown:               true,
	}
	return s
}

// SetReady flips /readyz.
func (s *Server) SetReady(v bool) { s.ready.Store(v) }

// Serve accepts connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error { return s.srv.Serve(ln) }

// Shutdown stops accepting and waits for open requests, up to ctx.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.ShutdownWithContext(ctx) }

// route is a translator route resolved for one request.
type route struct {
	plugin *pluginhost.Plugin
	r      sdk.Route
}

// findRoute finds the translator route serving method and path. There are a
// handful of translators with a few routes each: a linear scan of manifests
// costs less than keeping an index in step with hot reloads.
func (s *Server) findRoute(method, path []byte) (route, bool) {
	for _, p := range s.host.Plugins() {
		m := p.Manifest()
		if m.Kind != sdk.KindTranslator {
			continue
		}
		for _, r := range m.Routes {
			if r.Path == string(path) && (r.Method == "" || r.Method == string(method)) {
				return route{plugin: p, r: r}, true
			}
		}
	}
	return route{}, false
}

// Handle is the fasthttp handler.
func (s *Server) Handle(ctx *fasthttp.RequestCtx) {
	switch string(ctx.Path()) {
	case "/healthz":
		ctx.SetContentType("text/plain; charset=utf-8")
		ctx.SetBodyString("ok\n")
		return
	case "/readyz":
		ctx.SetContentType("text/plain; charset=utf-8")
		if !s.ready.Load() {
			ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
			ctx.SetBodyString("not ready\n")
			return
		}
		ctx.SetBodyString("ready\n")
		return
	case "/metrics":
		ctx.SetContentType("text/plain; version=0.0.4; charset=utf-8")
		s.met.write(ctx, s.reg)
		s.host.WriteMetrics(ctx)
		return
	}

	ex := s.exchanges.Get().(*exchange)
	ex.begin(s)
	defer s.recoverPanic(ctx, ex)
	ctx.Response.Header.Set("X-Request-ID", ex.id)
	rt, ok := s.findRoute(ctx.Method(), ctx.Path())
	if !ok {
		s.fail(ctx, ex, route{}, apierr.New(canon.ErrNotFound, "unknown_route",
			"no route for "+string(ctx.Method())+" "+string(ctx.Path())))
		s.finish(ctx, ex)
		return
	}
	ex.route = rt
	if _, err := s.authenticate(ctx); err != nil {
		s.fail(ctx, ex, rt, err)
		s.finish(ctx, ex)
		return
	}
	switch rt.r.Name {
	case "chat":
		if s.chat(ctx, ex) {
			return // a stream owns ex now and finishes it
		}
	case "models":
		s.models(ctx, ex)
	default:
		s.fail(ctx, ex, rt, apierr.New(canon.ErrNotFound, "unknown_route", "route "+rt.r.Name+" is not served by this gateway"))
	}
	s.finish(ctx, ex)
}

func (s *Server) authenticate(ctx *fasthttp.RequestCtx) (auth.Principal, error) {
	key := auth.KeyFromHeaders(ctx.Request.Header.Peek("Authorization"), ctx.Request.Header.Peek("X-API-Key"))
	p, err := s.authn.Authenticate(s.baseCtx, key)
	if err != nil {
		msg := "invalid API key"
		if errors.Is(err, auth.ErrNoKey) {
			msg = "missing API key: send Authorization: Bearer mr2_... or X-API-Key"
		}
		return p, apierr.Wrap(canon.ErrAuthentication, "invalid_api_key", msg, err)
	}
	return p, nil
}

// handleTransportError answers requests fasthttp could not parse, such as a
// body over the limit, in the route's dialect when the path is known.
func (s *Server) handleTransportError(ctx *fasthttp.RequestCtx, err error) {
	ex := s.exchanges.Get().(*exchange)
	ex.begin(s)
	ctx.Response.Header.Set("X-Request-ID", ex.id)
	rt, _ := s.findRoute(ctx.Method(), ctx.Path())
	ex.route = rt
	var e *apierr.Error
	if errors.Is(err, fasthttp.ErrBodyTooLarge) {
		e = apierr.Wrap(canon.ErrRequestTooLarge, "request_too_large",
			"request body is larger than the limit of "+strconv.Itoa(s.cfg.Limits.MaxBodyBytes)+" bytes", err)
	} else {
		e = apierr.Wrap(canon.ErrInvalidRequest, "bad_request", "malformed HTTP request", err)
	}
	s.fail(ctx, ex, rt, e)
	ctx.SetConnectionClose()
	s.finish(ctx, ex)
}

// models answers the model list through the translator.
func (s *Server) models(ctx *fasthttp.RequestCtx, ex *exchange) {
	list := s.reg.Models()
	ex.buf = list.AppendJSON(ex.buf[:0])
	if err := ex.route.plugin.Call(s.baseCtx, opModelsEncode, pluginhost.CallInput{RequestID: ex.num, Payload: ex.buf}, &ex.tres); err != nil {
		s.fail(ctx, ex, ex.route, pluginFailure(err))
		return
	}
	ctx.SetContentType(contentType(ex.tres.Meta, "application/json"))
	ctx.SetBody(ex.tres.Payload)
}

// recoverPanic turns a bug that panics while serving one request into a
// 500 for that request (fasthttp would let it kill the process). The
// exchange gives back its slot and plugin pins but is not pooled again:
// its state is unknown.
func (s *Server) recoverPanic(ctx *fasthttp.RequestCtx, ex *exchange) {
	r := recover()
	if r == nil {
		return
	}
	s.log.LogAttrs(s.baseCtx, slog.LevelError, "panic serving request",
		slog.String("req_id", ex.id), slog.Any("panic", r), slog.String("stack", string(debug.Stack())))
	ctx.ResetBody()
	ctx.SetStatusCode(fasthttp.StatusInternalServerError)
	ctx.SetContentType("application/json")
	ctx.SetBodyString(`{"error":{"message":"internal error (request ` + ex.id + `)","type":"server_error","param":null,"code":"internal_error"}}`)
	func() {
		defer func() { _ = recover() }() // already failing: do not fail twice
		ex.releaseHeld()
		s.met.observe(ex.route.r.Name, 500, 0)
	}()
}
