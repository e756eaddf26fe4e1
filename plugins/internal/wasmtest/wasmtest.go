// Package wasmtest runs a plugin's wasm/ main package in wazero through
// the ABI exports, as the gateway drives it. The .wasm is built for wasip1
// once per source state and shared by the test binaries (package
// buildcache; prebuilt by make when MINDROUTER_TEST_WASM names plugins/),
// and compiled through a compilation cache they share. It backs the
// plugins' wasm parity tests and benchmarks and is meant for tests only.
package wasmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/abi/hostfloat"
	"github.com/mindrouter/mindrouter/sdk/sdktest/buildcache"
)

// Module is a plugin's .wasm build, instantiated in its own wazero runtime.
type Module struct {
	mod             api.Module
	buf, init, call api.Function
	stack           [2]uint64 // Call's, as the gateway's host calls (no allocation)
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
	// t.Helper only on the way to a failure: it walks the stack
	// (runtime.Callers), which the benchmarks would otherwise measure
	// with the call, cold caches most of all.
	ctx, st := context.Background(), m.stack[:]
	st[0] = uint64(len(in))
	if err := m.buf.CallWithStack(ctx, st); err != nil {
		t.Helper()
		t.Fatal(err)
	}
	if !m.mod.Memory().Write(uint32(st[0]), in) {
		t.Helper()
		t.Fatal("write out of range")
	}
	st[0], st[1] = uint64(op), uint64(len(in))
	if err := m.call.CallWithStack(ctx, st); err != nil {
		t.Helper()
		t.Fatal(err)
	}
	return m.read(t, st[0])
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
	ptr, n := abi.Unpack(packed)
	b, ok := m.mod.Memory().Read(ptr, n)
	if !ok {
		t.Helper()
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

// LoadPlugin is Load, then the checks every plugin's .wasm must pass
// before its ops: the ABI version export says abi.Version and init (an
// empty config) answers ok with a manifest, which it returns decoded.
func LoadPlugin(t testing.TB, name string, log func(level int32, msg []byte)) (*Module, sdk.Manifest) {
	t.Helper()
	m := Load(t, name, log)
	if v := m.ABIVersion(t); v != abi.Version {
		t.Fatalf("%s: abi version %#x, want %#x", name, v, abi.Version)
	}
	res, err := abi.ParseResult(bytes.Clone(m.Init(t)))
	if err != nil {
		t.Fatalf("%s: init: %v", name, err)
	}
	if res.Status != abi.StatusOK {
		t.Fatalf("%s: init: %s %s %s", name, res.Status, res.Error, res.Payload)
	}
	var man sdk.Manifest
	if err := json.Unmarshal(res.Payload, &man); err != nil {
		t.Fatalf("%s: manifest %s: %v", name, res.Payload, err)
	}
	return m, man
}

// Result runs op on in (Call) and returns the parsed result, its areas
// copied out of the module's memory.
func (m *Module) Result(t testing.TB, op abi.Op, in []byte) abi.Result {
	t.Helper()
	r, err := abi.ParseResult(bytes.Clone(m.Call(t, op, in)))
	if err != nil {
		t.Fatalf("%s: malformed result: %v", op, err)
	}
	return r
}

// Input lays out a call's input as the host does: the header, state, the
// meta pairs (key, value, key, value...) and payload.
func Input(flags uint32, state, payload []byte, meta ...string) []byte {
	var m []byte
	for i := 0; i+1 < len(meta); i += 2 {
		m = abi.AppendMeta(m, meta[i], meta[i+1])
	}
	in := make([]byte, abi.HeaderSize, abi.HeaderSize+len(state)+len(m)+len(payload))
	abi.PutHeader(in, abi.Header{Flags: flags, StateLen: uint32(len(state)), MetaLen: uint32(len(m)), PayloadLen: uint32(len(payload))})
	return append(append(append(in, state...), m...), payload...)
}

// Parity runs the same calls through a plugin's .wasm and its native
// build (the same code, through the SDK's dispatcher) and requires
// identical results: status, flags, state, meta, payload and error, byte
// for byte. It backs the plugins' TestWasm_MatchesNative.
type Parity struct {
	t      testing.TB
	wasm   *Module
	native *sdk.Plugin
	calls  int
}

// NewParity compares wasm with native.
func NewParity(t testing.TB, wasm *Module, native *sdk.Plugin) *Parity {
	return &Parity{t: t, wasm: wasm, native: native}
}

// Check runs op on in through both builds; a difference fails the test
// (naming the call by name, with both results) and the native result is
// returned, its areas copied, for the caller's next state.
func (p *Parity) Check(name string, op abi.Op, in []byte) abi.Result {
	p.t.Helper()
	p.calls++
	want, err := abi.ParseResult(bytes.Clone(p.native.Call(op, in)))
	if err != nil {
		p.t.Fatalf("%s: native: malformed result: %v", name, err)
	}
	got := p.wasm.Result(p.t, op, in)
	if got.Status != want.Status || got.Flags != want.Flags || !bytes.Equal(got.State, want.State) ||
		!bytes.Equal(got.Meta, want.Meta) || !bytes.Equal(got.Payload, want.Payload) || !bytes.Equal(got.Error, want.Error) {
		p.t.Errorf("%s: wasm and native differ\nwasm:   %s flags %#x %q meta %q state %x\n        %s\nnative: %s flags %#x %q meta %q state %x\n        %s",
			name, got.Status, got.Flags, got.Error, got.Meta, got.State, got.Payload,
			want.Status, want.Flags, want.Error, want.Meta, want.State, want.Payload)
	}
	return want
}

// Calls is how many calls Check compared.
func (p *Parity) Calls() int { return p.calls }
