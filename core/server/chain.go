package server

import (
	"context"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// chain is what one route runs: its ordered stages and the dialect its
// errors are answered in. Every request runs exactly one chain, found by
// resolve, and the same resolution answers "Expect: 100-continue".
type chain struct {
	stages []stage
	// fail answers a stage's error in the route's dialect.
	fail failFunc
	// route and kind name the Outcome of a chain that no plugin route
	// names ("admin", "responses-state").
	route, kind string
	// bare chains serve the gateway's own endpoints (/healthz, /readyz,
	// /status, /metrics) with no exchange: no request id, Outcome, log
	// line or observer, as probes and scrapes always were.
	bare bool
}

type failFunc func(s *Server, ctx *fasthttp.RequestCtx, ex *exchange, err error)

// ownChains are the chains of the routes no plugin declares.
type ownChains struct {
	healthz, readyz, status, metrics chain
	// admin serves the account and admin API (/api/admin/…, /api/me…),
	// kept the Keeper's own routes (Responses and Conversations state).
	admin, kept chain
	// noRoute answers a path or method no route has; unserved a plugin
	// route whose endpoint kind has no chain here.
	noRoute, unserved chain
	// probe serves a plugin's public models routes (probe.go): no key.
	probe chain
	// console serves the web console (console.go): its own sessions.
	console chain
}

func (s *Server) buildOwnChains() ownChains {
	own := func(fn func(*Server, *fasthttp.RequestCtx), metrics bool) chain {
		return chain{stages: []stage{serveOwn{s: s, fn: fn, metrics: metrics}}, fail: failBare, bare: true}
	}
	return ownChains{
		healthz: own((*Server).healthz, false),
		readyz:  own((*Server).readyz, false),
		status:  own((*Server).status, false),
		metrics: own((*Server).ServeMetrics, true),
		// Admin checks scopes itself (an admin or auditor key needs no
		// inference scope); its errors are {"detail": "…"}, as the
		// reference implementation's clients expect.
		admin: chain{stages: []stage{identify{s.authn}, adminLimit{s.adminLim},
			readCapped{s, s.cfg.Limits.Admin.MaxBodyBytes}, serveAdmin{s}},
			fail: failDetail, route: "admin", kind: "admin"},
		// The Keeper's routes count against the user's inference quotas
		// and answer in OpenAI's shape (no translator: native).
		kept: chain{stages: []stage{authenticate{s.authn}, limitStage{s.limiter}, readBody{s}, serveKept{s}},
			fail: failRoute, route: "responses-state", kind: string(sdk.EndpointResponses)},
		noRoute:  chain{stages: []stage{noRoute{}}, fail: failRoute},
		unserved: chain{stages: []stage{unserved{}}, fail: failRoute},
		probe:    chain{stages: []stage{probe{}}, fail: failRoute},
		console:  chain{stages: []stage{serveConsole{s.console}}, fail: failBare, bare: true},
	}
}

// resolve finds the chain of a request, and its plugin route when it has
// one: the gateway's own endpoints first, then the admin API, the
// Keeper's routes, and the plugins' routes by endpoint kind.
func (s *Server) resolve(ctx *fasthttp.RequestCtx) (chain, *route) {
	method, path := ctx.Method(), ctx.Path()
	switch string(path) {
	case "/healthz":
		return s.own.healthz, nil
	case "/readyz":
		return s.own.readyz, nil
	case "/status":
		return s.own.status, nil
	case "/metrics":
		if s.cfg.Metrics.Listen == "" { // else served on its own listener only: 404 here
			return s.own.metrics, nil
		}
	}
	if s.console != nil && s.console.Handles(path) {
		return s.own.console, nil
	}
	if s.admin != nil && s.admin.Handles(path) {
		return s.own.admin, nil
	}
	if s.keeper != nil && s.keeper.Serves(method, path) {
		return s.own.kept, nil
	}
	rt, _, _ := s.routes.index().lookup(method, path, &ctx.Request)
	if rt == nil {
		return s.own.noRoute, nil
	}
	stages, ok := s.chains[rt.kind]
	if !ok {
		return s.own.unserved, rt
	}
	if rt.public() {
		return s.own.probe, rt
	}
	return chain{stages: stages, fail: failRoute}, rt
}

// run runs c's stages in order, recording each one's time on the Outcome,
// until one fails (answered in c's dialect) or a stream takes the
// exchange over (errHandedOff). It reports whether the caller still owns
// ex and must finish it. ex is nil for a bare chain.
func (c *chain) run(s *Server, ctx *fasthttp.RequestCtx, ex *exchange) bool {
	for _, st := range c.stages {
		t0 := time.Now()
		err := st.run(ctx, ex)
		if err == errHandedOff {
			return false // a stream owns ex now (its time included) and finishes it
		}
		if sn := st.stage(); ex != nil && sn < outcome.NumStages {
			ex.out.Stages[sn] += time.Since(t0)
		}
		if err != nil {
			c.fail(s, ctx, ex, err)
			break
		}
	}
	return true
}

// expecter is a stage with something to check before a request's body is
// sent: its answer to "Expect: 100-continue", fasthttp.StatusContinue to
// go on. rt is the request's plugin route (nil: none).
type expecter interface {
	expect(s *Server, ctx *fasthttp.RequestCtx, rt *route) int
}

// expect answers "Expect: 100-continue" with the checks the request's own
// chain makes before it reads the body (the key, the route's body cap),
// so a client that would be refused never gets to send its body.
func (s *Server) expect(ctx *fasthttp.RequestCtx) int {
	c, rt := s.resolve(ctx)
	for _, st := range c.stages {
		if e, ok := st.(expecter); ok {
			if code := e.expect(s, ctx, rt); code != fasthttp.StatusContinue {
				s.refusalHeaders(ctx, code)
				return code
			}
		}
	}
	return fasthttp.StatusContinue
}

// refusalHeaders gives an answer fasthttp sends without running the
// handler (a refused "Expect: 100-continue": the status and these headers,
// no body) what the chain's answer of that status would carry: the CORS
// headers, so a browser page can read the status, WWW-Authenticate on a
// 401, Retry-After on a 429 or 503.
func (s *Server) refusalHeaders(ctx *fasthttp.RequestCtx, status int) {
	if s.cors != nil {
		s.cors.refusal(ctx)
	}
	challenge(ctx, status)
	if status == fasthttp.StatusServiceUnavailable || status == fasthttp.StatusTooManyRequests {
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(apierr.DefaultRetryAfter))
	}
}

// failRoute answers in the route's dialect: its translator's, OpenAI's
// without one.
func failRoute(s *Server, ctx *fasthttp.RequestCtx, ex *exchange, err error) { s.fail(ctx, ex, err, 0) }

// failDetail answers the admin API's shape, {"detail": "…"}, with
// Retry-After on a 429 or 503.
func failDetail(_ *Server, ctx *fasthttp.RequestCtx, ex *exchange, err error) {
	ctx.SetConnectionClose()
	e := apierr.Public(err)
	ex.out.Status, ex.out.ErrorCode, ex.out.Error = e.Status, e.Code, e.Error()
	writeDetail(ctx, e.Status, e.Msg)
	challenge(ctx, e.Status)
	if e.Status == fasthttp.StatusTooManyRequests || e.Status == fasthttp.StatusServiceUnavailable {
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(max(e.RetryAfterSeconds(), 1)))
	}
}

// failBare answers a bare chain's error (its stages have none) without an
// exchange.
func failBare(_ *Server, ctx *fasthttp.RequestCtx, _ *exchange, err error) {
	e := apierr.Public(err)
	ce := e.Canon("")
	ctx.SetStatusCode(e.Status)
	ctx.SetContentType("application/json")
	ctx.SetBody(nativeError(nil, &ce))
}

// serveOwn serves one of the gateway's own endpoints. Public, like
// /healthz, except /metrics with metrics.key.
type serveOwn struct {
	s       *Server
	fn      func(*Server, *fasthttp.RequestCtx)
	metrics bool // fn checks metrics.key
}

func (serveOwn) stage() outcome.Stage { return outcome.StageRespond }

func (o serveOwn) run(ctx *fasthttp.RequestCtx, _ *exchange) error {
	o.fn(o.s, ctx)
	return nil
}

// expect: these endpoints read no body.
func (o serveOwn) expect(s *Server, ctx *fasthttp.RequestCtx, _ *route) int {
	if o.metrics && !s.metricsKeyOK(ctx) {
		return fasthttp.StatusUnauthorized
	}
	if ctx.Request.Header.ContentLength() != 0 {
		return fasthttp.StatusRequestEntityTooLarge
	}
	return fasthttp.StatusContinue
}

// healthz answers {"status":"alive","timestamp":<unix seconds>}.
func (s *Server) healthz(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("application/json")
	ctx.SetBodyString(`{"status":"alive","timestamp":` + strconv.FormatInt(time.Now().Unix(), 10) + "}")
}

// identify checks the key like authenticate, with no scope required: the
// admin API checks scopes itself.
type identify struct{ authn auth.Authenticator }

func (identify) stage() outcome.Stage { return outcome.StageAuth }

func (a identify) run(ctx *fasthttp.RequestCtx, ex *exchange) error {
	return authenticateScope(ctx, ex, a.authn, 0)
}

func (a identify) expect(s *Server, ctx *fasthttp.RequestCtx, _ *route) int {
	return expectKey(s.baseCtx, ctx, nil, a.authn, 0)
}

// expectKey is the key check of authenticate and identify, as a status;
// rt (nil: none) may declare where else its key is.
func expectKey(c context.Context, ctx *fasthttp.RequestCtx, rt *route, authn auth.Authenticator, scope auth.Scope) int {
	var pl routePlaces
	if rt != nil {
		pl = rt.places
	}
	key, err := keyFromRequest(&ctx.Request, &pl)
	if err != nil {
		return fasthttp.StatusBadRequest
	}
	p, err := authn.Authenticate(c, key)
	if err != nil {
		if st := apierr.Public(authFailure(err)).Status; st < 500 && st != statusClientClosed {
			return st
		}
		return fasthttp.StatusServiceUnavailable
	}
	if !p.Has(scope) {
		return fasthttp.StatusForbidden
	}
	return fasthttp.StatusContinue
}

// serveAdmin hands an authenticated, admitted request and its body to the
// Admin.
type serveAdmin struct{ s *Server }

func (serveAdmin) stage() outcome.Stage { return outcome.StageRespond }

func (a serveAdmin) run(ctx *fasthttp.RequestCtx, ex *exchange) error {
	a.s.admin.Serve(ctx, &ex.principal, ex.body)
	return nil
}

// serveKept hands one of the Keeper's own routes to the Keeper.
type serveKept struct{ s *Server }

func (serveKept) stage() outcome.Stage { return outcome.StageRespond }

func (k serveKept) run(ctx *fasthttp.RequestCtx, ex *exchange) error {
	k.s.keeper.Serve(ctx, &ex.principal, ex.body)
	return nil
}

// noRoute refuses a path no route has (404) or a method its routes do not
// take (405 with Allow). The body, if any, is not read.
type noRoute struct{}

func (noRoute) stage() outcome.Stage { return outcome.NumStages }

func (noRoute) run(ctx *fasthttp.RequestCtx, ex *exchange) error {
	ctx.SetConnectionClose()
	_, allow, known := ex.s.routes.index().lookup(ctx.Method(), ctx.Path(), &ctx.Request)
	if known {
		ctx.Response.Header.Set("Allow", allow)
		return apierr.New(canon.ErrInvalidRequest, "method_not_allowed",
			"method "+logTrunc(ctx.Method())+" is not allowed on "+logTrunc(ctx.Path())+"; allowed: "+allow).
			WithStatus(fasthttp.StatusMethodNotAllowed)
	}
	return apierr.New(canon.ErrNotFound, "unknown_route", "no route for "+logTrunc(ctx.Method())+" "+logTrunc(ctx.Path()))
}

func (noRoute) expect(s *Server, ctx *fasthttp.RequestCtx, _ *route) int {
	if _, allow, known := s.routes.index().lookup(ctx.Method(), ctx.Path(), &ctx.Request); known {
		ctx.Response.Header.Set("Allow", allow)
		return fasthttp.StatusMethodNotAllowed
	}
	return fasthttp.StatusNotFound
}

// unserved refuses a plugin route of an endpoint kind this gateway has no
// chain for.
type unserved struct{}

func (unserved) stage() outcome.Stage { return outcome.NumStages }

func (unserved) run(ctx *fasthttp.RequestCtx, ex *exchange) error {
	ctx.SetConnectionClose()
	return apierr.New(canon.ErrNotFound, "unknown_route",
		"route "+ex.route.r.Name+" ("+string(ex.route.kind)+") is not served by this gateway")
}

func (unserved) expect(*Server, *fasthttp.RequestCtx, *route) int { return fasthttp.StatusNotFound }
