// Package server is the gateway's HTTP front: a fasthttp handler that
// resolves each request to one chain of native stages (chain.go) and runs
// it, then answers or relays a stream in the client's own format and
// hands the request's Outcome to the registered observers.
//
// Every route runs through a chain; nothing goes around it:
//   - a plugin route runs its endpoint kind's chain (stages.go
//     buildChains): chat and responses are authenticate, limit, read,
//     check, (keep: the stored history, for responses,) decode, budget,
//     admit, attempt, respond; embeddings, rerank and score the same with
//     their unary decode, attempt and respond; tokenize authenticate,
//     limit, read, check, tokenize; models authenticate, read and check
//     (a one-model route only), models;
//   - the account and admin API (/api/admin/…, /api/me…): authenticate
//     (any scope: the Admin checks scopes), the admin limits
//     (limits.admin), read under limits.admin.max_body_bytes, serve;
//     errors as {"detail": "…"};
//   - the Keeper's Responses and Conversations state: authenticate,
//     limit, read, serve;
//   - /healthz, /readyz, /status and /metrics: one serve stage, no
//     exchange;
//   - the web console under its prefix (console.go): one serve stage, no
//     exchange (it has its own sessions); a browser's GET / or /admin
//     (Accept: text/html) is redirected there, an API client's GET / is
//     not (Ollama's probe).
//
// The same resolution answers "Expect: 100-continue", with the checks
// each chain makes before it reads a body.
//
// A request's working set is a pooled exchange made of parts owned by the
// phase that fills them, each with its own reset (exchange.go): inbound
// (body, scan, routing fields, principal, limiter ticket), upstream
// (scheduler request, lease, backend, plugin pins, backend request and
// response) and stream (splitter, plugin states, buffers). Each attempt
// picks one translation strategy — fused, canonical or unary
// (translation.go) — and the retry loop only follows a pure decision
// (retry.go: tried.verdict), which also names the breaker's report.
//
// The pipeline knows endpoint kinds, not route names: a translator's
// manifest declares each route's kind, and the kind selects the chain.
// *fasthttp.RequestCtx never leaves this package and is never kept after a
// handler returns; a streamed response's relay goroutine owns only the
// per-request exchange it was given.
package server

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/pprofhandler"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/fetchguard"
	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/core/sched"
	"github.com/mindrouter/mindrouter/core/tokencount"
	"github.com/mindrouter/mindrouter/core/tokens"
	"github.com/mindrouter/mindrouter/core/version"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// Server serves the client APIs. Create with New.
type Server struct {
	cfg       *config.Config
	log       *slog.Logger
	host      *pluginhost.Host
	reg       *backend.Registry
	authn     auth.Authenticator
	limiter   Limiter
	admitter  sched.Admitter
	admin     Admin
	console   Console // the web console (nil: none on this listener)
	consoleAt string  // its prefix, where browsers asking for / go
	keeper    Keeper
	observers []outcome.Observer
	starters  []outcome.Starter // the observers told at admission too (started.go)
	extraMet  []func(io.Writer)
	met       *metrics
	ready     atomic.Bool
	routes    routeTable
	chains    map[sdk.Endpoint][]stage // the plugin routes' chains, by endpoint kind
	own       ownChains                // the other routes' chains (chain.go)
	adminLim  *adminLimiter            // limits.admin; nil: none
	cors      *cors                    // config cors; nil: off
	models    *config.ModelPolicy      // config models: per-model thinking default

	health     atomic.Pointer[func(context.Context) map[string]error]
	buffered   atomic.Int64 // request body bytes held by all requests
	metricsKey []byte

	// keep is how much request and response content the observers get
	// (audit.max_content_bytes; 0: none); proxies are audit.trusted_proxies.
	keep    int
	proxies []netip.Prefix
	// recordDecisions: the scheduler's decisions go to the observers.
	recordDecisions bool

	fetcher *fetchguard.Fetcher // nil: images.fetch is off
	images  *fetchguard.Budget  // images.max_buffered_bytes: every request's fetched images
	tokens  *tokens.Counter
	// counts: backends' own token counts near the context limit, through
	// their adapters' count ops (ABI 2.7), memoised (core/tokencount).
	counts *tokencount.Counter

	exchanges sync.Pool
	baseCtx   context.Context
	// streamCtx is baseCtx for a streaming relay's plugin calls: they wait
	// for a free instance without pool.wait_ms's bound
	// (pluginhost.WithoutWaitLimit), since a stream already streaming must
	// not be cut because the process was short of CPU for a moment.
	streamCtx context.Context
	// live are the requests in flight, cancelled when baseCtx ends;
	// reqValues is baseCtx without its cancellation, their Values
	// (reqctx.go). liveInit sets both up on the first request.
	live      liveSet
	reqValues context.Context
	liveInit  sync.Once
	srv       *fasthttp.Server
}

// requestValues is the base of a request's context (reqCtx): the
// server's, whose end cancels the requests in flight (live).
func (s *Server) requestValues() context.Context {
	s.liveInit.Do(func() {
		base := s.baseCtx
		if base == nil {
			base = context.Background()
		}
		s.reqValues = context.WithoutCancel(base)
		context.AfterFunc(base, s.live.end)
	})
	return s.reqValues
}

// Options are the Server's collaborators.
type Options struct {
	Config   *config.Config
	Host     *pluginhost.Host
	Registry *backend.Registry
	Auth     auth.Authenticator
	Limiter  Limiter        // nil: NoLimits
	Admitter sched.Admitter // nil: sched.NewLeastLoaded over Registry
	Admin    Admin          // nil: no account or admin API
	Keeper   Keeper         // nil: the Responses API keeps no state
	// Console serves the web console under ConsolePrefix (nil: none on
	// this listener).
	Console       Console
	ConsolePrefix string
	// RecordDecisions asks the Admitter for its decisions (sched.Decision)
	// and hands them to the observers as JSON (the audit).
	RecordDecisions bool
	// Observers are told about every finished request, in order.
	Observers []outcome.Observer
	// Metrics write more of /metrics (Prometheus text), after the
	// server's own: the audit spool, the scheduler fleet.
	Metrics []func(io.Writer)
	Logger  *slog.Logger
}

// New returns a Server; it is not ready until SetReady(true).
func New(ctx context.Context, o Options) *Server {
	s := &Server{cfg: o.Config, log: o.Logger.With("component", "server"), host: o.Host,
		reg: o.Registry, authn: o.Auth, limiter: o.Limiter, admitter: o.Admitter, admin: o.Admin, keeper: o.Keeper,
		console: o.Console, consoleAt: o.ConsolePrefix,
		observers: o.Observers, extraMet: o.Metrics, met: newMetrics(), baseCtx: ctx}
	if ctx != nil {
		s.streamCtx = pluginhost.WithoutWaitLimit(ctx)
	}
	if s.limiter == nil {
		s.limiter = NoLimits{}
	}
	if s.admitter == nil {
		s.admitter = sched.NewLeastLoaded(o.Registry, o.Config.Timeouts.QueueWait.D())
	}
	if k := o.Config.Metrics.Key; k != "" {
		s.metricsKey = []byte(k)
	}
	s.tokens = tokens.New(o.Config.Limits.TokenizeMaxChars)
	s.counts = tokencount.New(tokencount.DefaultSize)
	if len(s.observers) > 0 && o.Config.AuditContent() {
		s.keep = o.Config.Audit.MaxContentBytes
	}
	s.proxies = parseProxies(o.Config.Audit.TrustedProxies)
	s.recordDecisions = len(s.observers) > 0 && o.RecordDecisions
	s.images = fetchguard.NewSharedBudget(o.Config.Images.MaxBufferedBytes)
	s.starters = starters(s.observers)
	var err error
	if s.fetcher, err = newFetcher(o.Config.Images); err != nil { // validated with the config: not expected
		s.log.Error("image fetching is off: the images config was refused", slog.String("error", err.Error()))
	}
	s.routes.host = o.Host
	s.chains = s.buildChains()
	s.adminLim = newAdminLimiter(o.Config.Limits.Admin)
	s.cors = newCORS(o.Config.CORS)
	s.models = config.NewModelPolicy(o.Config.Models)
	s.own = s.buildOwnChains()
	s.exchanges.New = func() any { return newExchange() }
	lim := o.Config.Limits
	s.srv = &fasthttp.Server{
		Handler:      s.Handle,
		ErrorHandler: s.handleTransportError,
		// fasthttp logs connection errors with raw request bytes, which can
		// carry credentials: they go through the redacting logger at debug.
		Logger:                        fasthttpLogger{s.log},
		Name:                          "mindrouter",
		ReadBufferSize:                lim.MaxHeaderBytes,
		ReadTimeout:                   o.Config.Timeouts.HeaderRead.D(),
		WriteTimeout:                  o.Config.Timeouts.ClientWrite.D(), // per write of an answer: clientwrite.go
		IdleTimeout:                   2 * time.Minute,
		NoDefaultServerHeader:         true,
		NoDefaultContentType:          true,
		DisableHeaderNamesNormalizing: false,
		CloseOnShutdown:               true,
		// The body is read by the read stage, after the key was checked:
		// fasthttp prefetches only small bodies (up to prefetchBytes).
		StreamRequestBody:  true,
		MaxRequestBodySize: prefetchBytes,
		HeaderReceived: func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
			return fasthttp.RequestConfig{ReadTimeout: o.Config.Timeouts.BodyRead.D()}
		},
		ExpectHandler: s.expect,
	}
	return s
}

// prefetchBytes is how much body fasthttp reads before the handler runs.
const prefetchBytes = 16 << 10

type fasthttpLogger struct{ log *slog.Logger }

func (l fasthttpLogger) Printf(format string, args ...any) {
	// Parse and connection errors; their text may quote request bytes, so
	// they are logged at debug (the redacting handler removes keys) and
	// the client gets a classified error from handleTransportError.
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug("http transport", "detail", fmt.Sprintf(format, args...))
	}
}

// SetReady flips /readyz.
func (s *Server) SetReady(v bool) { s.ready.Store(v) }

// SetHealth sets the component health checks /readyz reports (nil error:
// healthy); without it /readyz checks the backends only.
func (s *Server) SetHealth(f func(context.Context) map[string]error) { s.health.Store(&f) }

// Serve accepts connections on ln until Shutdown. At most
// limits.max_connections are served at once; beyond that a connection gets
// a 503 with Retry-After and is closed.
func (s *Server) Serve(ln net.Listener) error {
	return s.srv.Serve(newLimitListener(ln, s.cfg.Limits.MaxConnections, &s.met.connRefused))
}

// Shutdown stops accepting and waits for open requests, up to ctx.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.ShutdownWithContext(ctx) }

// Handle is the fasthttp handler: it runs the request's chain.
func (s *Server) Handle(ctx *fasthttp.RequestCtx) {
	if s.cors != nil && s.cors.handle(ctx) {
		return // a preflight: answered before any chain, as it carries no key
	}
	if s.browserHome(ctx) {
		return
	}
	c, rt := s.resolve(ctx)
	if c.bare {
		c.run(s, ctx, nil)
		return
	}
	ex := s.exchanges.Get().(*exchange)
	ex.begin(s, ctx)
	defer s.recoverPanic(ctx, ex)
	if len(s.observers) > 0 {
		ex.noteClient(ctx)
	}
	ctx.Response.Header.Set("X-Request-ID", ex.id)
	if rt != nil {
		ex.setRoute(rt)
		ex.noteRouteInputs(ctx)
	} else if c.route != "" {
		ex.out.Route, ex.out.Kind = c.route, c.kind
	}
	if c.run(s, ctx, ex) {
		s.finish(ctx, ex)
	}
}

// status answers GET /status in the reference implementation's shape, so
// its users' probes keep working: {service, version, timestamp,
// backends{total, healthy}, models[], queue{waiting, in_flight}}. Public,
// like /healthz, so it names nothing by default: model_count replaces
// models[] unless status.models is on (the reference's shape).
func (s *Server) status(ctx *fasthttp.RequestCtx) {
	var healthy int
	var waiting, inFlight int64
	backends := s.reg.Backends()
	for _, b := range backends {
		if b.Routable() {
			healthy++
		}
		waiting += b.Waiting()
		inFlight += b.InFlight()
	}
	// The fair scheduler queues per model, not on backends (whose count
	// only least_loaded keeps).
	if q, ok := s.admitter.(interface{ Queues() []sched.QueueStat }); ok {
		waiting = 0
		for _, st := range q.Queues() {
			waiting += int64(st.Waiting)
		}
	}
	var w jsonw.W
	w.Obj()
	w.Key("service")
	w.Str("mindrouter")
	w.Key("version")
	w.Str(buildVersion())
	w.Key("timestamp")
	w.Int(time.Now().Unix())
	w.Key("backends")
	w.Obj()
	w.Key("total")
	w.Int(int64(len(backends)))
	w.Key("healthy")
	w.Int(int64(healthy))
	w.EndObj()
	if models := s.reg.Models().Models; s.cfg.Status.Models {
		w.Key("models")
		w.Arr()
		for _, m := range models {
			w.Str(m.ID)
		}
		w.EndArr()
	} else {
		w.Key("model_count")
		w.Int(int64(len(models)))
	}
	w.Key("queue")
	w.Obj()
	w.Key("waiting")
	w.Int(waiting)
	w.Key("in_flight")
	w.Int(inFlight)
	w.EndObj()
	w.EndObj()
	ctx.SetContentType("application/json")
	ctx.SetBody(w.B)
}

// buildVersion is the gateway's build stamp (core/version): the
// Makefile's version, else the module version, else "dev".
var buildVersion = version.String

// readyz answers {"status":"ready"|"not_ready","checks":{name:"ok"|reason}}
// (the reference's shape), 503 when any check fails.
func (s *Server) readyz(ctx *fasthttp.RequestCtx) {
	checks := map[string]error{}
	if !s.ready.Load() {
		checks["started"] = errors.New("starting or stopping")
	} else {
		checks["started"] = nil
	}
	if f := s.health.Load(); f != nil {
		for k, v := range (*f)(s.baseCtx) {
			checks[k] = v
		}
	} else if !s.reg.Serving() {
		checks["backends"] = errors.New("no healthy backend serves a model")
	} else {
		checks["backends"] = nil
	}
	names := make([]string, 0, len(checks))
	ok := true
	for k, v := range checks {
		names = append(names, k)
		ok = ok && v == nil
	}
	sort.Strings(names)
	var w jsonw.W
	w.Obj()
	w.Key("status")
	if ok {
		w.Str("ready")
	} else {
		w.Str("not_ready")
		ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
		ctx.Response.Header.Set("Retry-After", "5")
	}
	w.Key("checks")
	w.Obj()
	for _, k := range names {
		w.Key(k)
		if err := checks[k]; err != nil {
			w.Str(err.Error())
		} else {
			w.Str("ok")
		}
	}
	w.EndObj()
	w.EndObj()
	ctx.SetContentType("application/json")
	ctx.SetBody(w.B)
}

// ServeMetrics answers a Prometheus scrape; with metrics.key set it wants
// "Authorization: Bearer <key>". On the metrics listener with
// metrics.pprof, /debug/pprof/ serves Go's profiles behind the same key.
func (s *Server) ServeMetrics(ctx *fasthttp.RequestCtx) {
	if !s.metricsAuthorized(ctx) {
		return
	}
	if bytes.HasPrefix(ctx.Path(), []byte("/debug/pprof/")) {
		if !s.cfg.Metrics.Pprof || s.cfg.Metrics.Listen == "" {
			ctx.SetStatusCode(fasthttp.StatusNotFound)
			return
		}
		pprofhandler.PprofHandler(ctx)
		return
	}
	ctx.SetContentType("text/plain; version=0.0.4; charset=utf-8")
	s.met.write(ctx, s.reg, s.buffered.Load())
	s.writeImageMetrics(ctx)
	s.host.WriteMetrics(ctx)
	for _, m := range s.extraMet {
		m(ctx)
	}
}

// metricsAuthorized checks metrics.key, answering 401 when it is wrong.
func (s *Server) metricsAuthorized(ctx *fasthttp.RequestCtx) bool {
	if !s.metricsKeyOK(ctx) {
		ctx.SetStatusCode(fasthttp.StatusUnauthorized)
		challenge(ctx, fasthttp.StatusUnauthorized)
		ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="metrics"`)
		return false
	}
	return true
}

// metricsKeyOK reports whether the request carries metrics.key (or none
// is set).
func (s *Server) metricsKeyOK(ctx *fasthttp.RequestCtx) bool {
	if s.metricsKey == nil {
		return true
	}
	got := auth.KeyFromHeaders(ctx.Request.Header.Peek("Authorization"), nil)
	return subtle.ConstantTimeCompare(got, s.metricsKey) == 1
}

// recoverPanic turns a bug that panics while serving one request into a
// 500 for that request (fasthttp would let it kill the process). The
// exchange gives back what it holds but is not pooled again: its state is
// unknown.
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
	func() {
		defer func() { _ = recover() }()
		s.observePanic(ctx, ex, r) // the audit's row ends as a panic
	}()
}
