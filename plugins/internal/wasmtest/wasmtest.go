// Package wasmtest runs a plugin's wasm/ main package in wazero through
// the ABI exports, as the gateway drives it. The .wasm is built for wasip1
// once per source state and shared by the test binaries (package
// buildcache; prebuilt by make when MINDROUTER_TEST_WASM names plugins/),
// and compiled through a compilation cache they share. It backs the
// plugins' wasm parity tests and benchmarks and is meant for tests only.
package wasmtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/abi/hostfloat"
	"github.com/mindrouter/mindrouter/sdk/sdktest/buildcache"
)

// Module is a plugin's .wasm build, instantiated in its own wazero runtime.
type Module struct {
	mod             api.Module
	buf, init, call api.Function
}

// Load instantiates the plugin name (as the Makefile names it:
// plugins/<name>.wasm), whose main package is ./wasm relative to the
// test's working directory (the plugin's package directory), in a wazero
// runtime of its own with WASI and the ABI's host module (HostModule; log
// receives the plugin's log lines, nil drops them), running its
// _initialize. The .wasm is Path's; the runtime compiles through the
// compilation cache the test binaries share (CompileCache), so a module
// compiled once is not compiled again. The runtime is closed when t ends.
func Load(t testing.TB, name string, log func(level int32, msg []byte)) *Module {
	t.Helper()
	bin, err := os.ReadFile(Path(t, name))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfig()
	if dir, err := CompileCache(); err != nil {
		t.Logf("no shared compilation cache: %v", err)
	} else if cache, err := wazero.NewCompilationCacheWithDir(dir); err != nil {
		t.Logf("no shared compilation cache: %v", err)
	} else {
		cfg = cfg.WithCompilationCache(cache)
		t.Cleanup(func() { cache.Close(ctx) })
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	t.Cleanup(func() { rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	if err := HostModule(ctx, rt, log); err != nil {
		t.Fatal(err)
	}
	mod, err := rt.InstantiateWithConfig(ctx, bin, wazero.NewModuleConfig().WithStartFunctions(abi.ExportInitialize))
	if err != nil {
		t.Fatal(err)
	}
	return &Module{mod: mod, buf: mod.ExportedFunction(abi.ExportBuf),
		init: mod.ExportedFunction(abi.ExportInit), call: mod.ExportedFunction(abi.ExportCall)}
}

// ABIVersion calls the module's ABI version export.
func (m *Module) ABIVersion(t testing.TB) uint32 {
	t.Helper()
	v, err := m.mod.ExportedFunction(abi.ExportABIVersion).Call(context.Background())
	if err != nil {
		t.Fatalf("abi version: %v", err)
	}
	return uint32(v[0])
}

// Init runs the init export with an empty config and returns the result
// area, which aliases the module's memory: it is valid until the next call.
func (m *Module) Init(t testing.TB) []byte {
	t.Helper()
	res, err := m.init.Call(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return m.read(t, res[0])
}

// Call copies in into the module's input buffer, runs op on it and returns
// the result area, which aliases the module's memory: it is valid until the
// next call.
func (m *Module) Call(t testing.TB, op abi.Op, in []byte) []byte {
	t.Helper()
	ctx := context.Background()
	res, err := m.buf.Call(ctx, uint64(len(in)))
	if err != nil {
		t.Fatal(err)
	}
	if !m.mod.Memory().Write(uint32(res[0]), in) {
		t.Fatal("write out of range")
	}
	if res, err = m.call.Call(ctx, uint64(op), uint64(len(in))); err != nil {
		t.Fatal(err)
	}
	return m.read(t, res[0])
}

// Path returns the .wasm of the plugin name whose main package is ./wasm
// relative to the working directory, built as the Makefile builds it
// (-buildmode=c-shared -trimpath -ldflags='-s -w'): the file
// $MINDROUTER_TEST_WASM/<name>.wasm when that variable is set (make test
// sets it to plugins/, which `make plugins` wrote), else the build shared
// through the per-user cache (package buildcache: built again only when a
// source it reads changed). The file is shared: never write to it.
func Path(t testing.TB, name string) string {
	t.Helper()
	if path, ok, err := buildcache.Prebuilt(name); err != nil {
		t.Fatal(err)
	} else if ok {
		return path
	}
	root, err := buildcache.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(root, filepath.Join(wd, "wasm"))
	if err != nil {
		t.Fatal(err)
	}
	path, err := buildcache.Build(buildcache.Spec{Root: root, Pkg: rel, LDFlags: buildcache.DefaultLDFlags})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// CompileCache is the wazero compilation cache directory shared by the
// test binaries, the gateway's included (buildcache.CompileCacheDir).
func CompileCache() (string, error) {
	root, err := buildcache.RepoRoot()
	if err != nil {
		return "", err
	}
	return buildcache.CompileCacheDir(root, "github.com/tetratelabs/wazero")
}

func (m *Module) read(t testing.TB, packed uint64) []byte {
	t.Helper()
	ptr, n := abi.Unpack(packed)
	b, ok := m.mod.Memory().Read(ptr, n)
	if !ok {
		t.Fatal("result out of range")
	}
	return b
}

// HostModule instantiates the ABI's host module in rt, as the gateway
// provides it: mr_v2.log (log receives the level and the message, valid
// only during the call; nil drops them) and the float text functions
// (package hostfloat, the code the gateway's host runs).
func HostModule(ctx context.Context, rt wazero.Runtime, log func(level int32, msg []byte)) error {
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	_, err := rt.NewHostModuleBuilder(abi.ImportModule).
		NewFunctionBuilder().
		WithFunc(func(ctx context.Context, m api.Module, level, ptr, n uint32) {
			if log == nil {
				return
			}
			b, _ := m.Memory().Read(ptr, n)
			log(int32(level), b)
		}).Export(abi.ImportLog).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, m api.Module, s []uint64) {
			s[0] = uint64(hostfloat.Format(m.Memory(), uint32(s[0]), uint32(s[1]), uint32(s[2]), uint32(s[3]), uint32(s[4])))
		}), []api.ValueType{i32, i32, i32, i32, i32}, []api.ValueType{i64}).
		WithParameterNames("style", "src", "n", "dst", "dst_cap").
		Export(abi.ImportF32Format).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, m api.Module, s []uint64) {
			s[0] = uint64(hostfloat.Parse(m.Memory(), uint32(s[0]), uint32(s[1]), uint32(s[2]), uint32(s[3])))
		}), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i64}).
		WithParameterNames("src", "len", "dst", "dst_cap").
		Export(abi.ImportF32Parse).
		Instantiate(ctx)
	return err
}
