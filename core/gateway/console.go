package gateway

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/mindrouter/mindrouter/core/audit"
	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/console"
	"github.com/mindrouter/mindrouter/core/store"
)

// consoleFront adapts the console (a net/http handler) to server.Console
// and to a listener of its own.
type consoleFront struct {
	c      *console.Console
	prefix []byte
	h      fasthttp.RequestHandler
}

// consoleMaxBody bounds a console request's body; the largest is an
// admin's CSV import.
const consoleMaxBody = 8 << 20

func (f *consoleFront) Handles(path []byte) bool {
	return bytes.HasPrefix(path, f.prefix) || bytes.Equal(path, f.prefix[:len(f.prefix)-1])
}

func (f *consoleFront) MaxBodyBytes() int { return consoleMaxBody }

// Serve answers a console request. The adaptor buffers the whole body, so
// its size is checked first; browsers always send Content-Length with a
// form, so a chunked body is refused rather than read without a bound.
func (f *consoleFront) Serve(ctx *fasthttp.RequestCtx) {
	switch n := ctx.Request.Header.ContentLength(); {
	case n > consoleMaxBody:
		ctx.Error("request body too large", fasthttp.StatusRequestEntityTooLarge)
		return
	case n == -1: // chunked
		ctx.Error("a console request needs a Content-Length", fasthttp.StatusLengthRequired)
		return
	}
	f.h(ctx)
}

// serveOwn is the console's own listener: the console under its prefix,
// browsers' / sent there, 404 for anything else.
func (f *consoleFront) serveOwn(ctx *fasthttp.RequestCtx) {
	switch {
	case f.Handles(ctx.Path()):
		f.Serve(ctx)
	case string(ctx.Path()) == "/":
		ctx.Redirect(string(f.prefix), fasthttp.StatusFound)
	default:
		ctx.Error("not found", fasthttp.StatusNotFound)
	}
}

// newConsole builds the console when console.enabled: sessions in Redis
// when configured, else in the store.
func newConsole(ctx context.Context, cfg *config.Config, acct *accountsPart, search audit.Searcher,
	reg *backend.Registry, apiTLS bool, log *slog.Logger) (*consoleFront, error) {
	if !cfg.ConsoleOn() {
		return nil, nil
	}
	var sess console.SessionStore
	switch ss, ok := acct.st.(store.Sessions); {
	case acct.rdb != nil:
		sess = console.RedisSessions(acct.rdb)
	case ok:
		sess = console.StoreSessions(ss, time.Now)
		go pruneSessions(ctx, ss, log)
	default:
		log.Warn("console off: the store keeps no sessions and no Redis is configured")
		return nil, nil
	}
	cc := cfg.Console
	tlsOn := apiTLS && cc.Listen == ""
	base := ""
	if cc.Listen != "" { // snippets name the API listener, not the console's
		scheme := "http"
		if apiTLS {
			scheme = "https"
		}
		base = scheme + "://" + advertised(cfg.Listen)
	}
	c, err := console.New(ctx, console.Options{Config: cc, Store: acct.st, Sessions: sess, Auth: acct.authn,
		Admin: acct.admin, Audit: search, Models: reg, TLS: tlsOn, BaseURL: base, Log: log})
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	return &consoleFront{c: c, prefix: []byte(c.Prefix()), h: fasthttpadaptor.NewFastHTTPHandler(detached{c})}, nil
}

// consoleTimeout bounds one console request's store, Redis and identity
// provider calls.
const consoleTimeout = 30 * time.Second

// detached gives each console request a context of its own: the adaptor's
// is the fasthttp RequestCtx, which must not be a parent (context's
// watcher reads it after the handler returned and fasthttp reset it for
// the next request: a data race, as in admin.Handler.Serve).
type detached struct{ h http.Handler }

func (d detached) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(context.Background(), consoleTimeout)
	defer cancel()
	d.h.ServeHTTP(w, r.WithContext(ctx))
}

// pruneSessions deletes expired console sessions from the store hourly
// (Redis expires its own) until ctx ends; every replica does it, which is
// harmless: a DELETE of rows already gone.
func pruneSessions(ctx context.Context, ss store.Sessions, log *slog.Logger) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			pctx, cancel := context.WithTimeout(ctx, time.Minute)
			if _, err := ss.PruneSessions(pctx, time.Now()); err != nil {
				log.Warn("prune console sessions", "err", err.Error())
			}
			cancel()
		}
	}
}

// advertised is host:port as a client writes it: a wildcard host becomes
// 127.0.0.1.
func advertised(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// consoleListener serves the console on console.listen.
func consoleListener(g *Gateway, f *consoleFront, addr string, tlsCfg *tls.Config) Component {
	var srv *fasthttp.Server
	return &funcComponent{name: "console-listener",
		start: func(context.Context) error {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("listen on console.listen %s: %w", addr, err)
			}
			g.ConsoleAddr = ln.Addr()
			srv = &fasthttp.Server{Handler: f.serveOwn, Name: "mindrouter", ReadTimeout: 30 * time.Second,
				MaxRequestBodySize: consoleMaxBody, NoDefaultServerHeader: true, Logger: discardLogger{}}
			if tlsCfg != nil {
				ln = tls.NewListener(ln, tlsCfg)
			}
			go func() { _ = srv.Serve(ln) }()
			return nil
		},
		close: func(ctx context.Context) error { return srv.ShutdownWithContext(ctx) },
	}
}

// consoleURL is the console's address for the start-up log line.
func (g *Gateway) consoleURL(cfg *config.Config, tlsOn bool) string {
	if g.console == nil {
		return ""
	}
	addr := g.Addr
	if g.ConsoleAddr != nil {
		addr = g.ConsoleAddr
	}
	scheme := "http"
	if tlsOn {
		scheme = "https"
	}
	return scheme + "://" + advertised(addr.String()) + strings.TrimSuffix(cfg.Console.Prefix, "/") + "/"
}
