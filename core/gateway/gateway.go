// Package gateway wires the gateway's parts together: configuration, the
// plugin host, the backend registry and its discovery, authentication and
// the HTTP server, each a Component with a lifecycle (lifecycle.go).
// cmd/mindrouter calls Start; tests call Start.
package gateway

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/admin"
	"github.com/mindrouter/mindrouter/core/audit"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/logredact"
	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/core/server"
	"github.com/mindrouter/mindrouter/core/store"
	"github.com/mindrouter/mindrouter/core/tlscert"
	"github.com/mindrouter/mindrouter/sdk"
)

// Gateway is a running gateway.
type Gateway struct {
	Addr net.Addr
	// MetricsAddr is where /metrics is served when metrics.listen is set.
	MetricsAddr net.Addr
	// ConsoleAddr is where the console is served when console.listen is
	// set (else on Addr, under console.prefix).
	ConsoleAddr net.Addr
	console     *consoleFront // nil: console.enabled is false
	metrics     *fasthttp.Server
	Server      *server.Server
	Host        *pluginhost.Host
	Reg         *backend.Registry
	// Store holds users, keys, quotas and backends.
	Store store.Store
	// GeneratedAdminKey is the admin key this start made because the
	// store had none and ADMIN_API_KEY was unset; "" otherwise.
	GeneratedAdminKey string

	cancel        context.CancelFunc
	done          chan error
	log           *slog.Logger
	life          lifecycle
	stopDiscovery func()
}

// Options configure Start.
type Options struct {
	Config   *config.Config
	AdminKey string
	Logger   *slog.Logger
	// Listener, when set, is used instead of binding Config.Listen.
	Listener net.Listener
	// WatchPlugins polls plugins.yaml and the .wasm files for changes at
	// this interval (0: no hot reload except through Host.Reload).
	WatchPlugins time.Duration
	// Observers are told about every finished request (audit, quotas).
	Observers []outcome.Observer
	// Store, when set, is used instead of opening the configured one (the
	// caller closes it).
	Store store.Store
	// Replica names this process among replicas sharing Redis (default:
	// random).
	Replica string
	// AdminKeyFile, when set, receives an admin key generated at this
	// start (mode 0600), written before the store keeps the key's hash.
	AdminKeyFile string
	// ConfigPath names the config file in the start-up log line ("" for
	// the embedded defaults).
	ConfigPath string
}

// Start loads plugins, starts discovery and serves until Close. Each part
// is a Component; they start in this order and Close stops them in
// reverse: plugin host, discovery, metrics listener, API listener.
func Start(ctx context.Context, o Options) (*Gateway, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	log := slog.New(logredact.Handler(o.Logger.Handler()))
	if o.AdminKey != "" {
		if _, err := auth.NewAdminKey(o.AdminKey); err != nil { // the shape check
			return nil, err
		}
	}
	if o.Replica == "" {
		// Unique per gateway, not per process: quota leases in Redis are
		// keyed by replica, and two gateways sharing one would share one
		// lease (tests run several in one process).
		h, _ := os.Hostname()
		var r [3]byte
		_, _ = rand.Read(r[:])
		o.Replica = h + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(r[:])
	}
	pcfg, err := pluginhost.LoadConfig(o.Config.PluginsPath())
	if err != nil {
		return nil, fmt.Errorf("load plugins: %w", err)
	}
	apiTLSCert, apiTLS, err := listenerTLS(o.Config, "api", o.Config.TLS, log)
	if err != nil {
		return nil, err
	}
	metTLSCert, metTLS, err := listenerTLS(o.Config, "metrics", o.Config.Metrics.TLS, log)
	if err != nil {
		return nil, err
	}
	acct, backends, err := openAccounts(ctx, &o, log)
	if err != nil {
		return nil, err
	}
	rcfg := *o.Config
	rcfg.Backends = backends
	reg, err := backend.NewRegistry(&rcfg)
	if err == nil {
		reg.SetBreakerLogger(log)
		err = applyStore(ctx, acct.st, reg)
	}
	if err != nil {
		_ = acct.close(context.Background())
		return nil, err
	}
	aud, err := openAudit(ctx, o.Config, o.Replica, log)
	if err != nil {
		_ = acct.close(context.Background())
		return nil, err
	}
	observers := o.Observers
	var searcher audit.Searcher
	if aud != nil {
		observers = append(append([]outcome.Observer(nil), observers...), aud.rec)
		searcher = aud.search
	}
	tel := openTelemetry(o.Config, aud, acct.st, reg, o.Replica, log)
	admitter, kick, fleetC := newScheduler(o.Config, reg, aud != nil, acct.rdb, o.Replica, log)
	metrics := []func(io.Writer){queueMetrics(admitter, reg)}
	if aud != nil {
		metrics = append(metrics, auditMetrics(aud.rec))
	}
	if fc, ok := fleetC.(*fleetComponent); ok && fc.fl != nil {
		metrics = append(metrics, fleetMetrics(fc.fl))
	}
	var rdb redis.UniversalClient
	if acct.rdb != nil {
		rdb = acct.rdb
	}
	metrics = append(metrics, healthMetrics(reg, acct.st, rdb, o.Config.Redis.Timeout.D()))
	var certs []*tlscert.Reloader
	for _, c := range []*tlscert.Reloader{apiTLSCert, metTLSCert} {
		if c != nil {
			certs = append(certs, c)
		}
	}
	if len(certs) > 0 {
		metrics = append(metrics, tlsMetrics(certs))
	}
	live := newLiveBackends(reg, acct.st, o.Config.Backends, log)
	acctC := &funcComponent{name: "accounts", start: func(context.Context) error { return nil }, close: acct.close}
	// The audit closes after the listener drained: the last requests are
	// recorded (or left in the spool for the next start).
	auditC := &funcComponent{name: "audit", start: func(context.Context) error { return nil }, close: aud.close}
	// The telemetry recorder writes to the audit's ClickHouse connection
	// or the store: it closes before either (components close in reverse).
	telC := &funcComponent{name: "telemetry", start: func(ctx context.Context) error { tel.start(ctx); return nil }, close: tel.close}
	// The gateway's own context outlives the caller's: a signal that asks
	// the process to stop must let open requests finish (Close drains them
	// first), not cancel their plugin calls mid-way.
	gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	g := &Gateway{Reg: reg, cancel: cancel, done: make(chan error, 1), log: log, life: lifecycle{log: log},
		Store: acct.st, GeneratedAdminKey: acct.generatedKey}

	hostC := &funcComponent{name: "plugins",
		start: func(ctx context.Context) error {
			h, err := pluginhost.New(gctx, pcfg, filepath.Dir(o.Config.PluginsPath()), log)
			if err != nil {
				return err
			}
			g.Host = h
			if o.WatchPlugins > 0 {
				go h.Watch(gctx, o.WatchPlugins)
			}
			// Backends name engines; the loaded adapters say which exist.
			return reg.CheckEngines(adapterFormats(h))
		},
		close: func(ctx context.Context) error { return g.Host.Close(ctx) },
	}
	var disc *backend.Discoverer
	discC := &funcComponent{name: "discovery",
		start: func(context.Context) error {
			disc = backend.NewDiscoverer(reg, g.Host, o.Config.Discovery.Timeout.D(), log)
			disc.AfterRound, disc.BeforeRound = tel.afterRound(kick), live.sync
			live.disc = disc
			dctx, stop := context.WithCancel(gctx)
			done := make(chan struct{})
			go func() { defer close(done); disc.Run(dctx, o.Config.Discovery.Interval.D()) }()
			g.stopDiscovery = func() { stop(); <-done }
			return nil
		},
		health: func(context.Context) error {
			if !reg.Serving() {
				return errors.New("no healthy backend serves a model")
			}
			return nil
		},
		close: func(context.Context) error { g.stopDiscovery(); return nil },
	}
	if err := g.life.start(ctx, acctC, auditC, telC, fleetC, hostC, discC); err != nil {
		g.abort()
		return nil, err
	}
	queueView, _ := admitter.(admin.Queue) // nil for least_loaded
	acct.admin = admin.New(admin.Options{Store: acct.st, Keys: acct.authn, Quotas: acct.limiter, Backends: live,
		Audit: searcher, Queue: queueView, Telemetry: tel.reader(), Cluster: clusterView{reg}, Log: log})
	if g.console, err = newConsole(gctx, o.Config, acct, searcher, reg, apiTLS != nil, log); err != nil {
		g.abort()
		return nil, err
	}
	var consoleOnAPI server.Console // no typed nil in the interface
	if g.console != nil && o.Config.Console.Listen == "" {
		consoleOnAPI = g.console
	}
	g.Server = server.New(gctx, server.Options{Config: o.Config, Host: g.Host, Registry: reg, Auth: acct.authn,
		Limiter: limiter{acct.limiter}, Admin: adminAPI{acct.admin}, Admitter: admitter, RecordDecisions: aud != nil,
		Keeper: newKeeper(gctx, o.Config, acct.st, log), Logger: log, Observers: observers, Metrics: metrics,
		Console: consoleOnAPI, ConsolePrefix: o.Config.Console.Prefix})
	var comps []Component
	if addr := o.Config.Console.Listen; addr != "" && g.console != nil {
		comps = append(comps, consoleListener(g, g.console, addr, apiTLS))
	}
	if addr := o.Config.Metrics.Listen; addr != "" {
		comps = append(comps, &funcComponent{name: "metrics-listener",
			start: func(context.Context) error {
				mln, err := net.Listen("tcp", addr)
				if err != nil {
					return fmt.Errorf("listen on metrics.listen %s: %w", addr, err)
				}
				g.MetricsAddr = mln.Addr()
				g.metrics = &fasthttp.Server{Handler: g.Server.ServeMetrics, Name: "mindrouter", ReadTimeout: 10 * time.Second,
					NoDefaultServerHeader: true, Logger: discardLogger{}}
				if metTLS != nil {
					mln = tls.NewListener(mln, metTLS)
				}
				go func() { _ = g.metrics.Serve(mln) }()
				return nil
			},
			close: func(ctx context.Context) error { return g.metrics.ShutdownWithContext(ctx) },
		})
	}
	comps = append(comps, &funcComponent{name: "api-listener",
		start: func(context.Context) error {
			ln := o.Listener
			if ln == nil {
				var err error
				if ln, err = net.Listen("tcp", o.Config.Listen); err != nil {
					return fmt.Errorf("listen on %s: %w", o.Config.Listen, err)
				}
			}
			g.Addr = ln.Addr()
			if apiTLS != nil {
				go func() { g.done <- g.Server.ServeTLS(ln, apiTLS) }()
				return nil
			}
			go func() { g.done <- g.Server.Serve(ln) }()
			return nil
		},
		close: func(ctx context.Context) error {
			g.Server.SetReady(false)
			return g.Server.Shutdown(ctx)
		},
	})
	// The listeners start once every backend was probed once (or the
	// round's time is up), so the first request can be routed: one served
	// before would get 404 model_not_found for a model the backends serve
	// (no backend known yet), a client error where a restarting replica's
	// refused connections had sent the load balancer's requests elsewhere.
	// Meanwhile connections wait in the listener's backlog (a listener
	// given in Options) or are refused.
	select {
	case <-disc.FirstRound():
	case <-time.After(o.Config.Discovery.Timeout.D() + time.Second):
		log.Warn("first discovery round still running; serving anyway")
	}
	if err := g.life.start(ctx, comps...); err != nil {
		g.abort()
		return nil, err
	}
	g.Server.SetHealth(g.life.health)
	g.Server.SetReady(true)
	g.logStarted(o, apiTLS != nil, metTLS != nil)
	return g, nil
}

// abort undoes a failed Start.
func (g *Gateway) abort() {
	_ = g.life.close(context.Background())
	g.cancel()
}

// Close stops serving, waits for open requests up to ctx, and unloads the
// plugins: components close in the reverse of their start order.
func (g *Gateway) Close(ctx context.Context) error {
	err := g.life.close(ctx)
	g.cancel()
	return err
}

// adapterFormats are the formats of the loaded adapters, modules of one
// component or a bundle's components: the engines a backend may name.
func adapterFormats(h *pluginhost.Host) map[string]bool {
	f := map[string]bool{}
	for _, p := range h.Plugins() {
		for _, m := range p.Manifest().Parts() {
			if m.Kind == sdk.KindAdapter {
				f[m.Format] = true
			}
		}
	}
	return f
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// Done reports the server's exit.
func (g *Gateway) Done() <-chan error { return g.done }
