// Package gateway wires the gateway's parts together: configuration, the
// plugin host, the backend registry and its discovery, authentication and
// the HTTP server. cmd/mindrouter calls Run; tests call Start.
package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/logredact"
	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/core/server"
	"github.com/mindrouter/mindrouter/sdk"
)

// Gateway is a running gateway.
type Gateway struct {
	Addr net.Addr
	// MetricsAddr is where /metrics is served when metrics.listen is set.
	MetricsAddr net.Addr
	metrics     *fasthttp.Server
	Server      *server.Server
	Host        *pluginhost.Host
	Reg         *backend.Registry

	cancel context.CancelFunc
	done   chan error
	log    *slog.Logger
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
}

// Start loads plugins, starts discovery and serves until Close.
func Start(ctx context.Context, o Options) (*Gateway, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	log := slog.New(logredact.Handler(o.Logger.Handler()))
	authn, err := auth.NewAdminKey(o.AdminKey)
	if err != nil {
		return nil, err
	}
	pcfg, err := pluginhost.LoadConfig(o.Config.PluginsPath())
	if err != nil {
		return nil, fmt.Errorf("load plugins: %w", err)
	}
	// The gateway's own context outlives the caller's: a signal that asks
	// the process to stop must let open requests finish (Close drains them
	// first), not cancel their plugin calls mid-way.
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	host, err := pluginhost.New(ctx, pcfg, filepath.Dir(o.Config.PluginsPath()), log)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("start plugin host: %w", err)
	}
	reg, err := backend.NewRegistry(o.Config)
	if err != nil {
		cancel()
		_ = host.Close(context.Background())
		return nil, err
	}
	if err := reg.CheckEngines(adapterFormats(host)); err != nil {
		cancel()
		_ = host.Close(context.Background())
		return nil, err
	}
	srv := server.New(ctx, server.Options{Config: o.Config, Host: host, Registry: reg, Auth: authn, Logger: log, Observers: o.Observers})
	ln := o.Listener
	if ln == nil {
		ln, err = net.Listen("tcp", o.Config.Listen)
		if err != nil {
			cancel()
			_ = host.Close(context.Background())
			return nil, fmt.Errorf("listen on %s: %w", o.Config.Listen, err)
		}
	}
	g := &Gateway{Addr: ln.Addr(), Server: srv, Host: host, Reg: reg, cancel: cancel, done: make(chan error, 1), log: log}
	if addr := o.Config.Metrics.Listen; addr != "" {
		mln, err := net.Listen("tcp", addr)
		if err != nil {
			cancel()
			_ = ln.Close()
			_ = host.Close(context.Background())
			return nil, fmt.Errorf("listen on metrics.listen %s: %w", addr, err)
		}
		g.MetricsAddr = mln.Addr()
		g.metrics = &fasthttp.Server{Handler: srv.ServeMetrics, Name: "mindrouter", ReadTimeout: 10 * time.Second,
			NoDefaultServerHeader: true, Logger: discardLogger{}}
		go func() { _ = g.metrics.Serve(mln) }()
	}
	disc := backend.NewDiscoverer(reg, host, o.Config.Discovery.Timeout.D(), log)
	go disc.Run(ctx, o.Config.Discovery.Interval.D())
	if o.WatchPlugins > 0 {
		go host.Watch(ctx, o.WatchPlugins)
	}
	go func() { g.done <- srv.Serve(ln) }()
	// Ready once every backend was probed once, so the first request after
	// /readyz turns 200 can be routed.
	select {
	case <-disc.FirstRound():
	case <-time.After(o.Config.Discovery.Timeout.D() + time.Second):
		log.Warn("first discovery round still running; serving anyway")
	}
	srv.SetReady(true)
	return g, nil
}

// Close stops serving, waits for open requests up to ctx, and unloads the
// plugins: components close in the reverse of their start order.
func (g *Gateway) Close(ctx context.Context) error {
	g.Server.SetReady(false)
	err := g.Server.Shutdown(ctx)
	if g.metrics != nil {
		_ = g.metrics.ShutdownWithContext(ctx)
	}
	g.cancel()
	if herr := g.Host.Close(ctx); err == nil {
		err = herr
	}
	return err
}

// adapterFormats are the formats of the loaded adapter plugins: the
// engines a backend may name.
func adapterFormats(h *pluginhost.Host) map[string]bool {
	f := map[string]bool{}
	for _, p := range h.Plugins() {
		if m := p.Manifest(); m.Kind == sdk.KindAdapter {
			f[m.Format] = true
		}
	}
	return f
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// Done reports the server's exit.
func (g *Gateway) Done() <-chan error { return g.done }
