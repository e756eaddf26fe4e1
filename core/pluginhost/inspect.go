package pluginhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"sort"

	"github.com/mindrouter/mindrouter/sdk"
)

// Inspection is what Inspect found in a plugin file.
type Inspection struct {
	SHA256   string
	Size     int
	Imports  []string // "module.name", as the file declares them
	Exports  []string // exported function names
	Manifest sdk.Manifest
}

// Inspect runs the load-time checks on wasm without a plugins.yaml entry:
// compile (strict mode, through the compilation cache in cacheDir if not
// empty), exports, imports, ABI version, mr_init with no config, manifest
// (any kind) and the self-test. It fills as much of the Inspection as it
// got to before an error. For the conformance kit and a "plugin check" CLI.
func Inspect(ctx context.Context, wasm []byte, cacheDir string) (Inspection, error) {
	sum := sha256.Sum256(wasm)
	ins := Inspection{SHA256: hex.EncodeToString(sum[:]), Size: len(wasm)}
	h, err := New(ctx, &Config{ABI: abi.VersionMajor, CacheDir: cacheDir}, "", nil)
	if err != nil {
		return ins, err
	}
	defer h.Close(ctx)
	// Inspection is about shape, not speed (the kit's budget check times
	// calls): a generous deadline keeps a cold first call under -race or a
	// loaded machine from failing the self-test.
	pc := PluginConfig{Name: "inspect", Path: "(inspect)", Mode: ModeStrict, Pool: PoolConfig{Min: 0, Max: 1},
		Limits: Limits{CallTimeoutMS: 10000}}.withDefaults()
	class := rtClass{strict: true, memPages: uint32(pc.Limits.MemoryMB) * 16}
	c, err := h.compile(ctx, class, ins.SHA256, wasm)
	if err != nil {
		return ins, err
	}
	for _, def := range c.cm.ImportedFunctions() {
		mod, name, _ := def.Import()
		ins.Imports = append(ins.Imports, mod+"."+name)
	}
	for name := range c.cm.ExportedFunctions() {
		ins.Exports = append(ins.Exports, name)
	}
	sort.Strings(ins.Exports)
	v, err := h.loadBytes(ctx, h.newPlugin(pc.Name), pc, wasm) // reuses c
	h.releaseCompiled(c)
	if err != nil {
		return ins, err
	}
	ins.Manifest = v.manifest
	v.Release()
	return ins, nil
}
