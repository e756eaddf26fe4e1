package pluginhost

import (
	"context"
	"log/slog"

	"github.com/mindrouter/mindrouter/sdk"
)

// NewNativePlugin serves a plugin compiled into the gateway: the same API
// as a wasm plugin (Pin, Call, metrics), backed by a pool of native
// sdk.Plugins made by factory (one per concurrent call, like instances).
// It is meant for tests and for measuring the WebAssembly tax. If the
// plugin fails its manifest check or self-test, the returned Plugin has no
// version (Pin returns nil) and LastError says why.
func NewNativePlugin(name string, factory func() *sdk.Plugin) *Plugin {
	p := &Plugin{name: name}
	m := factory().Manifest()
	pc := PluginConfig{Name: name, Kind: m.Kind, Path: "(native)", Mode: ModeTrusted,
		Pool: PoolConfig{Min: 1, MaxCalls: 0}}.withDefaults()
	v := (*Host)(nil).newVersion(p, pc, "native")
	v.factory = func() *sdk.Plugin {
		sp := factory()
		sp.SetLogger(func(level int, msg string) { v.sink.emit(slog.Level(level), "log", []byte(msg)) })
		return sp
	}
	if err := v.start(context.Background()); err != nil {
		err = &LoadError{Plugin: name, Path: pc.Path, Err: err}
		p.lastErr.Store(&err)
		return p
	}
	p.current.Store(v)
	return p
}
