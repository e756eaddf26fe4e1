package gateway

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mindrouter/mindrouter/core/version"
)

// logStarted writes the one start-up line: what runs, from where, with
// which state and plugins. Every field is a plain value an operator greps
// for; nothing secret (the store DSN of MySQL carries a password, so only
// the driver is named, and the SQLite path).
func (g *Gateway) logStarted(o Options, apiTLS, metTLS bool) {
	cfg := o.Config
	dataDir, _ := filepath.Abs(cfg.DataDir)
	cfgPath := o.ConfigPath
	if cfgPath == "" {
		cfgPath = "(embedded defaults)"
	} else if abs, err := filepath.Abs(cfgPath); err == nil {
		cfgPath = abs
	}
	store := slog.Group("store", slog.String("driver", cfg.Store.Driver))
	if o.Store != nil {
		store = slog.Group("store", slog.String("driver", "(given by the caller)"))
	} else if cfg.Store.Driver == "sqlite" {
		store = slog.Group("store", slog.String("driver", "sqlite"), slog.String("path", absPath(cfg.StoreDSN())))
	}
	attrs := []slog.Attr{
		slog.String("version", version.String()),
		slog.String("commit", version.CommitID()),
		slog.String("config", cfgPath),
		slog.String("data_dir", dataDir),
		store,
		slog.Group("audit", auditSinkAttrs(cfg.AuditOn(), cfg.Audit.ClickHouse.Addr, absPath(cfg.DataPath(cfg.Audit.Embedded)), absPath(cfg.DataPath(cfg.Audit.Spool)))...),
		slog.Group("listeners", g.listenerAttrs(apiTLS, metTLS)...),
		slog.String("console", g.consoleURL(cfg, apiTLS)),
		slog.Any("plugins", g.pluginVersions()),
		slog.Int("backends", len(g.Reg.Backends())),
		slog.Int("pid", os.Getpid()),
	}
	g.log.LogAttrs(context.Background(), slog.LevelInfo, "mindrouter started", attrs...)
}

// absPath is p made absolute (":memory:" and DSNs kept as they are).
func absPath(p string) string {
	if p == "" || p == ":memory:" || strings.HasPrefix(p, "file:") {
		return p
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func auditSinkAttrs(on bool, ch []string, embedded, spool string) []any {
	switch {
	case !on:
		return []any{slog.String("sink", "off")}
	case len(ch) > 0:
		return []any{slog.String("sink", "clickhouse"), slog.String("addr", strings.Join(ch, ",")), slog.String("spool", spool)}
	default:
		return []any{slog.String("sink", "embedded"), slog.String("path", embedded), slog.String("spool", spool)}
	}
}

func (g *Gateway) listenerAttrs(apiTLS, metTLS bool) []any {
	scheme := func(tls bool) string {
		if tls {
			return "https"
		}
		return "http"
	}
	a := []any{slog.String("api", scheme(apiTLS)+"://"+g.Addr.String())}
	if g.MetricsAddr != nil {
		a = append(a, slog.String("metrics", scheme(metTLS)+"://"+g.MetricsAddr.String()))
	}
	return a
}

// pluginVersions are "name@version" of the loaded plugins, a bundle's
// components included ("bundle/component@version").
func (g *Gateway) pluginVersions() []string {
	var out []string
	for _, p := range g.Host.Plugins() {
		m := p.Manifest()
		out = append(out, p.Name()+"@"+m.Version)
		for _, c := range m.Components {
			out = append(out, p.Name()+"/"+c.Name+"@"+c.Version)
		}
	}
	sort.Strings(out)
	return out
}

// writeKeyFile writes a secret to path with mode 0600 (also when the file
// existed with a wider mode), synced.
func writeKeyFile(path, key string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.WriteString(key + "\n")
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
