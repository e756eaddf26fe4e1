package pluginhost

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Reload re-reads plugins.yaml (when the host was built from a file) and
// the wasm files. Each plugin whose bytes or settings changed is loaded as a
// new version (compiled, checked, instantiated, initialised, self-tested)
// and then swapped in atomically; calls and streams pinned to the old
// version finish on it, and its instances are closed when the last one
// releases it. A plugin that fails to load keeps its old version (the error
// is logged, counted, returned and kept in Plugin.LastError). Plugins gone
// from the file are retired the same way; new ones are added.
func (h *Host) Reload(ctx context.Context) error {
	h.reloadMu.Lock()
	defer h.reloadMu.Unlock()
	if h.closed.Load() {
		return fmt.Errorf("pluginhost: reload: %w", ErrClosed)
	}
	cfg := h.cfg.Load()
	if cfg.Path != "" {
		next, err := LoadConfig(cfg.Path)
		if err != nil {
			h.metrics.reloadsFailed.Add(1)
			h.logger.Error("plugin reload refused: bad config", slog.Any("err", err))
			return err
		}
		if next.CacheDir != cfg.CacheDir {
			h.logger.Warn("plugin reload: cache_dir change needs a restart", slog.String("cache_dir", next.CacheDir))
		}
		cfg = next
	}
	old := h.set.Load()
	set := &pluginSet{byName: map[string]*Plugin{}}
	var errs []error
	// New versions are swapped in only once the whole set's routes are
	// known not to conflict (CheckRoutes), so a reload that would make two
	// plugins claim one request changes nothing.
	pending := map[*Plugin]*Version{}
	var next []namedManifest
	for i := range cfg.Plugins {
		pc := cfg.Plugins[i]
		p := old.byName[pc.Name]
		if p == nil {
			p = h.newPlugin(pc.Name)
		}
		v, err := h.reloadOne(ctx, p, pc)
		if err != nil {
			errs = append(errs, err)
			p.metrics.reloadsFailed.Add(1)
			p.lastErr.Store(&err)
			h.logger.Error("plugin reload refused: keeping the running version", slog.String("plugin", pc.Name), slog.Any("err", err))
		}
		switch cur := p.current.Load(); {
		case v != nil:
			pending[p] = v
			next = append(next, namedManifest{p.name, v.manifest})
		case cur != nil:
			next = append(next, namedManifest{p.name, cur.manifest})
		default:
			continue
		}
		set.byName[p.name] = p
		set.list = append(set.list, p)
	}
	if err := checkRoutes(next); err != nil {
		for _, v := range pending {
			v.Release() // never current: its only reference
		}
		h.metrics.reloadsFailed.Add(1)
		h.logger.Error("plugin reload refused: keeping the running plugins", slog.Any("err", err))
		return err
	}
	for p, v := range pending {
		p.swap(v)
		p.metrics.reloadsOK.Add(1)
		p.lastErr.Store(nil)
	}
	for _, p := range old.list {
		if set.byName[p.name] == nil {
			h.logger.Info("plugin removed", slog.String("plugin", p.name))
			p.swap(nil)
		}
	}
	h.set.Store(set)
	h.gen.Add(1)
	h.cfg.Store(cfg)
	if len(errs) > 0 {
		h.metrics.reloadsFailed.Add(1)
		return errors.Join(errs...)
	}
	h.metrics.reloadsOK.Add(1)
	return nil
}

// reloadOne loads pc as a new version of p unless nothing changed (nil);
// the caller swaps it in.
func (h *Host) reloadOne(ctx context.Context, p *Plugin, pc PluginConfig) (*Version, error) {
	if name, ok := nativeName(pc.Path); ok {
		pcd := pc.withDefaults()
		if cur := p.current.Load(); cur != nil && cur.fingerprint == fingerprint(nativePrefix+name, &pcd) {
			return nil, nil
		}
		v, err := h.loadNative(ctx, p, pc, name)
		if err != nil {
			return nil, &LoadError{pc.Name, pc.Path, err}
		}
		return v, nil
	}
	wasm, err := os.ReadFile(h.abs(pc.Path))
	if err != nil {
		return nil, &LoadError{pc.Name, pc.Path, err}
	}
	sum := sha256.Sum256(wasm)
	pcd := pc.withDefaults()
	if cur := p.current.Load(); cur != nil && cur.fingerprint == fingerprint(fmt.Sprintf("%x", sum), &pcd) {
		return nil, nil
	}
	v, err := h.loadBytes(ctx, p, pc, wasm)
	if err != nil {
		return nil, &LoadError{pc.Name, pc.Path, err}
	}
	return v, nil
}

// Watch polls plugins.yaml and the wasm files it names every interval
// (mtime and size; sha256 when those change), waits for one quiet interval
// (debounce: a file being copied keeps changing), then reloads. SIGHUP
// reloads at once. Watch returns immediately; polling stops when ctx ends
// or the host closes. Reload errors are logged and counted.
func (h *Host) Watch(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = time.Second
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP) // before returning: a SIGHUP right after Watch must not kill the process
	last := h.stamps(nil)              // before returning: changes made after Watch returns are seen
	h.bg.Add(1)
	go func() {
		defer h.bg.Done()
		defer signal.Stop(hup)
		t := time.NewTicker(every)
		defer t.Stop()
		pending := false
		for {
			select {
			case <-ctx.Done():
				return
			case <-h.bgCtx.Done():
				return
			case <-hup:
				h.watchReload(ctx, "sighup")
				last = h.stamps(last)
			case <-t.C:
				cur := h.stamps(last)
				if !sameStamps(cur, last) {
					last, pending = cur, true
					continue
				}
				if pending {
					pending = false
					h.watchReload(ctx, "files changed")
					last = h.stamps(last)
				}
			}
		}
	}()
}

func (h *Host) watchReload(ctx context.Context, why string) {
	h.logger.Info("plugin reload", slog.String("reason", why))
	_ = h.Reload(ctx) // logged and counted by Reload
}

// stamp identifies a file's content cheaply: sha256 is recomputed only
// when mtime or size changed.
type stamp struct {
	mtime time.Time
	size  int64
	sum   [32]byte
	err   bool
}

// stamps returns the stamps of plugins.yaml and every wasm file it names.
func (h *Host) stamps(prev map[string]stamp) map[string]stamp {
	cfg := h.cfg.Load()
	paths := make([]string, 0, len(cfg.Plugins)+1)
	if cfg.Path != "" {
		paths = append(paths, cfg.Path)
	}
	for i := range cfg.Plugins {
		if _, native := nativeName(cfg.Plugins[i].Path); !native {
			paths = append(paths, h.abs(cfg.Plugins[i].Path))
		}
	}
	out := make(map[string]stamp, len(paths))
	for _, path := range paths {
		fi, err := os.Stat(path)
		if err != nil {
			out[path] = stamp{err: true}
			continue
		}
		s := stamp{mtime: fi.ModTime(), size: fi.Size()}
		if p, ok := prev[path]; ok && !p.err && p.mtime.Equal(s.mtime) && p.size == s.size {
			s.sum = p.sum
		} else {
			s.sum = fileSum(path)
		}
		out[path] = s
	}
	return out
}

func sameStamps(a, b map[string]stamp) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok || x.err != y.err || x.sum != y.sum {
			return false
		}
	}
	return true
}

func fileSum(path string) (sum [32]byte) {
	f, err := os.Open(path)
	if err != nil {
		return sum
	}
	defer f.Close()
	d := sha256.New()
	if _, err := io.Copy(d, f); err == nil {
		copy(sum[:], d.Sum(nil))
	}
	return sum
}
