// Package wasmtest builds a plugin's wasm/ main package for wasip1 and runs
// it in wazero through the ABI exports, as the gateway drives it. It backs
// the plugins' wasm parity tests and benchmarks (go test -wasm) and is meant
// for tests only.
package wasmtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/abi/hostfloat"
)

// Module is a plugin's .wasm build, instantiated in its own wazero runtime.
type Module struct {
	mod             api.Module
	buf, init, call api.Function
}

// Load builds ./wasm, relative to the test's working directory (the plugin's
// package directory), with -buildmode=c-shared for GOOS=wasip1 GOARCH=wasm
// into t.TempDir()/<name>.wasm, and instantiates it with WASI and the host's
// log import, running its _initialize. log receives the plugin's log lines
// (level, message, valid only during the call); nil drops them. The runtime
// is closed when t ends.
func Load(t testing.TB, name string, log func(level int32, msg []byte)) *Module {
	t.Helper()
	out := filepath.Join(t.TempDir(), name+".wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w", "-o", out, "./wasm")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
	bin, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
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
