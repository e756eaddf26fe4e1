package pluginhost

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/mindrouter/mindrouter/sdk"
)

// Native plugins are sdk.Plugins compiled into the gateway binary (the
// same Go packages the .wasm modules are built from) served through the
// same Plugin/Version API: Pin, Call, Manifest, pools, limits, metrics,
// reload. The server cannot tell them from WebAssembly plugins. They exist
// to measure the WebAssembly tax — the same plugin code as .wasm and as
// native Go — and for tests.
//
// A native plugin has no sandbox: it shares the gateway's memory, a panic
// the SDK does not recover is the gateway's, and a call cannot be
// interrupted (it always runs as mode trusted, whatever plugins.yaml says;
// memory_mb does not apply). Use it for measurement, not in production.
//
// In plugins.yaml a native plugin is an entry whose path is "native:NAME",
// NAME being registered with RegisterNative (core/cmd/mindrouter registers
// the first-party plugins listed in package plugins/firstparty):
//
//	- {name: firstparty, kind: bundle, path: "native:firstparty"}

const nativePrefix = "native:"

// nativeName returns NAME for a path "native:NAME".
func nativeName(path string) (string, bool) {
	return strings.CutPrefix(path, nativePrefix)
}

var natives struct {
	sync.RWMutex
	m map[string]func() *sdk.Plugin
}

// RegisterNative makes factory the native plugin NAME that plugins.yaml
// entries with path "native:NAME" load. factory returns a fresh plugin
// each call (one per pooled instance), e.g. sdk.NewBundle(...) or
// sdk.NewTranslator(m, t) of a plugin package. Registering a name twice
// replaces the factory (for plugins loaded later). It panics on an empty
// name or a nil factory.
func RegisterNative(name string, factory func() *sdk.Plugin) {
	if name == "" || factory == nil {
		panic("pluginhost: RegisterNative needs a name and a factory")
	}
	natives.Lock()
	defer natives.Unlock()
	if natives.m == nil {
		natives.m = map[string]func() *sdk.Plugin{}
	}
	natives.m[name] = factory
}

// NativeNames returns the registered native plugin names, sorted.
func NativeNames() []string {
	natives.RLock()
	defer natives.RUnlock()
	names := make([]string, 0, len(natives.m))
	for n := range natives.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func lookupNative(name string) (func() *sdk.Plugin, error) {
	natives.RLock()
	f := natives.m[name]
	natives.RUnlock()
	if f != nil {
		return f, nil
	}
	have := "none"
	if names := NativeNames(); len(names) > 0 {
		have = strings.Join(names, ", ")
	}
	return nil, fmt.Errorf("no native plugin %q is compiled into this binary (registered: %s)", name, have)
}

// loadNative starts a version of p served by the registered native plugin
// name, through the checks a .wasm version passes (manifest, kind,
// components, self-test).
func (h *Host) loadNative(ctx context.Context, p *Plugin, pc PluginConfig, name string) (*Version, error) {
	factory, err := lookupNative(name)
	if err != nil {
		return nil, err
	}
	pc = pc.withDefaults()
	v := h.newVersion(p, pc, nativePrefix+name)
	v.factory = nativeFactory(v, factory)
	h.versionsMu.Lock()
	h.versions[v] = struct{}{}
	h.versionsMu.Unlock()
	if err := v.start(ctx); err != nil {
		h.forget(v)
		return nil, err
	}
	h.logger.Info("plugin loaded", slog.String("plugin", p.name), slog.String("version", v.manifest.Version),
		slog.String("native", name), slog.String("kind", string(v.manifest.Kind)), componentsAttr(&v.manifest),
		slog.Uint64("seq", v.seq), slog.String("note", "native code: no sandbox, for measurement"))
	return v, nil
}

// nativeFactory wraps factory so each plugin's log lines go to v's sink.
func nativeFactory(v *Version, factory func() *sdk.Plugin) func() *sdk.Plugin {
	return func() *sdk.Plugin {
		sp := factory()
		sp.SetLogger(func(level int, msg string) { v.sink.emit(slog.Level(level), "log", []byte(msg)) })
		return sp
	}
}

// NewNativePlugin serves a plugin compiled into the gateway outside any
// Host: the same API as a wasm plugin (Pin, Call, metrics), backed by a
// pool of native sdk.Plugins made by factory (one per concurrent call,
// like instances). It is meant for tests and for measuring the
// WebAssembly tax. If the plugin fails its manifest check or self-test,
// the returned Plugin has no version (Pin returns nil) and LastError says
// why. A Host loads native plugins from plugins.yaml (path "native:NAME",
// see RegisterNative).
func NewNativePlugin(name string, factory func() *sdk.Plugin) *Plugin {
	p := &Plugin{name: name}
	m := factory().Manifest()
	pc := PluginConfig{Name: name, Kind: m.Kind, Path: "(native)", Mode: ModeTrusted,
		Pool: PoolConfig{Min: 1, MaxCalls: 0}}.withDefaults()
	v := (*Host)(nil).newVersion(p, pc, "native")
	v.factory = nativeFactory(v, factory)
	if err := v.start(context.Background()); err != nil {
		err = &LoadError{Plugin: name, Path: pc.Path, Err: err}
		p.lastErr.Store(&err)
		return p
	}
	p.current.Store(v)
	return p
}
