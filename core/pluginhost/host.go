package pluginhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/mindrouter/mindrouter/sdk"
)

// Host loads plugins and serves calls to them. Its methods are safe for
// concurrent use.
type Host struct {
	logger   *slog.Logger
	baseDir  string
	cacheDir string // absolute; "": compile through the process's in-memory cache (see shared)
	cfg      atomic.Pointer[Config]

	reloadMu sync.Mutex // serialises New/Reload/Close changes to the plugin set
	set      atomic.Pointer[pluginSet]
	gen      atomic.Uint64 // +1 whenever the set or a plugin's current version changes

	versionsMu sync.Mutex
	versions   map[*Version]struct{} // every version not yet destroyed

	metrics    hostMetrics
	timekeeper timekeeper

	stop   context.CancelFunc // ends Watch and the watchdog
	bgCtx  context.Context
	bg     sync.WaitGroup
	closed atomic.Bool
}

type pluginSet struct {
	byName map[string]*Plugin
	list   []*Plugin // plugins.yaml order
}

// LoadError is a plugin that could not be loaded.
type LoadError struct {
	Plugin string
	Path   string // as written in plugins.yaml
	Err    error
}

func (e *LoadError) Error() string {
	return fmt.Sprintf("pluginhost: plugin %q (%s): %v", e.Plugin, e.Path, e.Err)
}

func (e *LoadError) Unwrap() error { return e.Err }

// New loads every plugin of cfg (paths relative to baseDir; "" means the
// directory of cfg.Path): compile once
// (serialised, through the compilation cache), check the exports, imports
// and ABI version, instantiate one instance, mr_init with the plugin's
// config, validate the manifest, run a self-test, then fill each pool to
// its min in the background. Any failure fails New with errors naming the
// plugin and file.
func New(ctx context.Context, cfg *Config, baseDir string, logger *slog.Logger) (*Host, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("pluginhost: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if baseDir == "" && cfg.Path != "" {
		baseDir = filepath.Dir(cfg.Path)
	}
	h := &Host{
		logger:   logger.With("component", "pluginhost"),
		baseDir:  baseDir,
		versions: map[*Version]struct{}{},
	}
	h.bgCtx, h.stop = context.WithCancel(context.Background())
	if cfg.CacheDir != "" {
		h.cacheDir = h.abs(cfg.CacheDir)
		if _, err := sharedCache(h.cacheDir); err != nil {
			return nil, err
		}
	}
	h.cfg.Store(cfg)
	set := &pluginSet{byName: map[string]*Plugin{}}
	var errs []error
	for i := range cfg.Plugins {
		pc := cfg.Plugins[i]
		p := h.newPlugin(pc.Name)
		v, err := h.load(ctx, p, pc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.current.Store(v)
		set.byName[p.name] = p
		set.list = append(set.list, p)
	}
	if len(errs) == 0 {
		if err := CheckRoutes(set.list); err != nil {
			errs = append(errs, err)
		}
	}
	h.set.Store(set)
	h.gen.Add(1)
	if len(errs) > 0 {
		h.Close(ctx)
		return nil, errors.Join(errs...)
	}
	h.timekeeper.start(h)
	return h, nil
}

func (h *Host) newPlugin(name string) *Plugin {
	return &Plugin{name: name, host: h}
}

func (h *Host) abs(path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(h.baseDir, path)
}

// Plugin returns the named plugin, or nil. It does not allocate.
func (h *Host) Plugin(name string) *Plugin {
	if s := h.set.Load(); s != nil {
		return s.byName[name]
	}
	return nil
}

// Generation changes whenever the plugin set or a plugin's current version
// changes (load, reload, removal), so callers can cache what they derive
// from manifests and rebuild it only then.
func (h *Host) Generation() uint64 { return h.gen.Load() }

// Plugins returns the loaded plugins in plugins.yaml order.
func (h *Host) Plugins() []*Plugin {
	if s := h.set.Load(); s != nil {
		return append([]*Plugin(nil), s.list...)
	}
	return nil
}

// load reads, checks and starts one version of a plugin.
func (h *Host) load(ctx context.Context, p *Plugin, pc PluginConfig) (*Version, error) {
	if name, ok := nativeName(pc.Path); ok {
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
	v, err := h.loadBytes(ctx, p, pc, wasm)
	if err != nil {
		return nil, &LoadError{pc.Name, pc.Path, err}
	}
	return v, nil
}

func (h *Host) loadBytes(ctx context.Context, p *Plugin, pc PluginConfig, wasm []byte) (*Version, error) {
	sum := sha256.Sum256(wasm)
	sha := hex.EncodeToString(sum[:])
	if pc.SHA256 != "" && pc.SHA256 != sha {
		return nil, fmt.Errorf("%w: file has %s, plugins.yaml pins %s", errChecksum, sha, pc.SHA256)
	}
	pc = pc.withDefaults()
	class := rtClass{strict: pc.Mode == ModeStrict, memPages: uint32(pc.Limits.MemoryMB) * 16}
	c, err := h.compile(ctx, class, sha, wasm)
	if err != nil {
		return nil, err
	}
	v := h.newVersion(p, pc, sha)
	v.mod = c
	// Registered before start so the timekeeper enforces the self-test's deadline.
	h.versionsMu.Lock()
	h.versions[v] = struct{}{}
	h.versionsMu.Unlock()
	if err := v.start(ctx); err != nil {
		h.forget(v)
		h.releaseCompiled(c)
		return nil, err
	}
	h.logger.Info("plugin loaded", slog.String("plugin", p.name), slog.String("version", v.manifest.Version),
		slog.String("sha256", sha[:12]), slog.String("mode", string(pc.Mode)), slog.String("kind", string(v.manifest.Kind)),
		componentsAttr(&v.manifest), slog.Uint64("seq", v.seq))
	return v, nil
}

// componentsAttr lists a bundle's components ("openai (translator), ...");
// for a module of one component, its name.
func componentsAttr(m *sdk.Manifest) slog.Attr {
	parts := m.Parts()
	names := make([]string, len(parts))
	for i := range parts {
		names[i] = parts[i].Name + " (" + string(parts[i].Kind) + ")"
	}
	return slog.String("components", strings.Join(names, ", "))
}

func (h *Host) newVersion(p *Plugin, pc PluginConfig, sha string) *Version {
	v := &Version{
		plugin: p, host: h, seq: p.seq.Add(1), cfg: pc, sha: sha,
		fingerprint: fingerprint(sha, &pc),
		loaded:      time.Now(),
		strict:      pc.Mode == ModeStrict,
		timeout:     time.Duration(pc.Limits.CallTimeoutMS) * time.Millisecond,
		stateMax:    pc.Limits.StateMaxKB << 10,
		payloadMax:  pc.Limits.MaxPayloadMB << 20,
		destroyed:   make(chan struct{}),
	}
	logger := slog.New(slog.DiscardHandler)
	if h != nil {
		logger = h.logger
	}
	v.sink = newLogSink(logger.With("plugin", p.name), &p.metrics.logDropped)
	v.pool = newPool(v, &v.cfg)
	v.refs.Store(1)
	return v
}

// start instantiates the first instance, checks it (ABI version, manifest,
// self-test), puts it in the pool and fills the pool to min in the
// background.
func (v *Version) start(ctx context.Context) error {
	if v.mod != nil {
		if err := checkModule(v.mod.cm); err != nil {
			return err
		}
	}
	v.pool.live.Add(1)
	in, raw, err := v.instantiate(ctx, true)
	if err != nil {
		v.pool.live.Add(-1)
		return err
	}
	v.pool.mu.Lock()
	v.pool.all[in] = struct{}{}
	v.pool.mu.Unlock()
	if v.manifest, err = parseManifest(raw, &v.cfg); err == nil {
		v.partMetrics()
		err = v.selfTest(ctx, in)
	}
	if err != nil {
		v.pool.mu.Lock()
		delete(v.pool.all, in)
		v.pool.mu.Unlock()
		in.close()
		v.pool.live.Add(-1)
		return err
	}
	v.plugin.metrics.instantiations.Add(1)
	v.pool.release(in)
	v.pool.refill()
	return nil
}

func (h *Host) forget(v *Version) {
	h.versionsMu.Lock()
	delete(h.versions, v)
	h.versionsMu.Unlock()
}

func (h *Host) liveVersions() []*Version { return h.appendVersions(nil) }

// appendVersions appends every version not yet destroyed to dst.
func (h *Host) appendVersions(dst []*Version) []*Version {
	h.versionsMu.Lock()
	defer h.versionsMu.Unlock()
	for v := range h.versions {
		dst = append(dst, v)
	}
	return dst
}

// Close retires every plugin, waits until in-flight calls and pinned
// streams release their versions (or ctx ends), then closes all instances,
// runtimes and the compilation cache.
func (h *Host) Close(ctx context.Context) error {
	if !h.closed.CompareAndSwap(false, true) {
		return nil
	}
	h.stop()
	h.reloadMu.Lock()
	if s := h.set.Load(); s != nil {
		for _, p := range s.list {
			p.swap(nil)
		}
	}
	h.reloadMu.Unlock()
	var err error
	for _, v := range h.liveVersions() {
		select {
		case <-v.destroyed:
		case <-ctx.Done():
			err = fmt.Errorf("pluginhost: close: %w (plugin %q still pinned)", ctx.Err(), v.plugin.name)
		}
		if err != nil {
			break
		}
	}
	h.bg.Wait()
	// Versions still pinned (ctx ended first) lose their instances now, as
	// they would with a Runtime of their own closed; their compiled module
	// and Runtime go with their last reference (shared).
	for _, v := range h.liveVersions() {
		v.pool.close()
	}
	return err
}

// Precompile compiles wasm for each mode into the compilation cache in dir,
// so that a Host whose cache_dir points there loads it in tens of
// milliseconds instead of seconds (e.g. at container image build time).
// The cache is keyed by the bytes, the mode and the CPU, and is specific
// to the wazero version.
func Precompile(ctx context.Context, dir string, wasm []byte, modes ...Mode) error {
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return fmt.Errorf("pluginhost: compilation cache: %w", err)
	}
	defer cache.Close(ctx)
	cctx := experimental.WithCompilationWorkers(ctx, runtime.GOMAXPROCS(0))
	for _, m := range modes {
		rc := wazero.NewRuntimeConfigCompiler().WithCompilationCache(cache).WithCloseOnContextDone(m == ModeStrict)
		rt := wazero.NewRuntimeWithConfig(ctx, rc)
		_, err := rt.CompileModule(cctx, wasm)
		rt.Close(ctx)
		if err != nil {
			return fmt.Errorf("pluginhost: precompile (%s): %w", m, err)
		}
	}
	return nil
}
