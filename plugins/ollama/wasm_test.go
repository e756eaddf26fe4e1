package ollama

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

var wasmFlag = flag.Bool("wasm", false, "also build ./wasm for wasip1 and compare it with the native plugin in wazero")

// wasmPlugin drives the .wasm build through its ABI exports, as the gateway
// does.
type wasmPlugin struct {
	mod       api.Module
	buf, call api.Function
}

func loadWasm(t testing.TB) *wasmPlugin {
	t.Helper()
	if !*wasmFlag {
		t.Skip("run with -wasm")
	}
	out := filepath.Join(t.TempDir(), "ollama.wasm")
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
	if _, err := rt.NewHostModuleBuilder(abi.ImportModule).NewFunctionBuilder().
		WithFunc(func(ctx context.Context, m api.Module, level, ptr, n uint32) {}).
		Export(abi.ImportLog).Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	mod, err := rt.InstantiateWithConfig(ctx, bin, wazero.NewModuleConfig().WithStartFunctions(abi.ExportInitialize))
	if err != nil {
		t.Fatal(err)
	}
	w := &wasmPlugin{mod: mod, buf: mod.ExportedFunction(abi.ExportBuf), call: mod.ExportedFunction(abi.ExportCall)}
	res, err := mod.ExportedFunction(abi.ExportInit).Call(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r := w.read(t, res[0]); r.Status != abi.StatusOK || !bytes.Contains(r.Payload, []byte(`"name":"ollama"`)) {
		t.Fatalf("init: %s %s %s", r.Status, r.Error, r.Payload)
	}
	return w
}

func (w *wasmPlugin) read(t testing.TB, packed uint64) result {
	ptr, n := abi.Unpack(packed)
	b, ok := w.mod.Memory().Read(ptr, n)
	if !ok {
		t.Fatal("result out of range")
	}
	return parse(t, b)
}

func (w *wasmPlugin) do(t testing.TB, op abi.Op, in []byte) result {
	ctx := context.Background()
	res, err := w.buf.Call(ctx, uint64(len(in)))
	if err != nil {
		t.Fatal(err)
	}
	if !w.mod.Memory().Write(uint32(res[0]), in) {
		t.Fatal("write out of range")
	}
	if res, err = w.call.Call(ctx, uint64(op), uint64(len(in))); err != nil {
		t.Fatal(err)
	}
	return w.read(t, res[0])
}

// TestWasmMatchesNative runs every golden input through the wasm build and
// requires results identical to the native plugin's.
func TestWasmMatchesNative(t *testing.T) {
	w := loadWasm(t)
	h := newHarness()
	same := func(name string, op abi.Op, in []byte) result {
		t.Helper()
		got := w.do(t, op, in)
		want := parse(t, h.p.Call(op, in))
		if got.Status != want.Status || got.Flags != want.Flags || got.Error != want.Error ||
			!bytes.Equal(got.Payload, want.Payload) || !bytes.Equal(got.State, want.State) || !bytes.Equal(got.Meta, want.Meta) {
			t.Errorf("%s: wasm and native differ\nwasm:   %s %q %s\nnative: %s %q %s",
				name, got.Status, got.Error, got.Payload, want.Status, want.Error, want.Payload)
		}
		return got
	}
	for _, name := range testFiles(t, "request", ".canon.json") {
		same("request "+name, abi.OpRequestEncode, input(0, nil, readFile(t, "request/"+name+".canon.json")))
	}
	for _, name := range testFiles(t, "response", ".ollama.json") {
		same("response "+name, abi.OpResponseDecode, input(0, nil, readFile(t, "response/"+name+".ollama.json")))
	}
	for _, name := range testFiles(t, "stream", ".ndjson") {
		var state []byte
		for i, ev := range lines(string(readFile(t, "stream/"+name+".ndjson"))) {
			r := same(name+" line "+strconv.Itoa(i), abi.OpStreamDecode, input(0, state, items([][]byte{ev})))
			if !r.keepState() {
				state = r.State
			}
		}
	}
	same("stream error", abi.OpStreamDecode, input(0, nil, items([][]byte{[]byte(`{"error":"boom"}`)})))
	for _, tc := range []struct{ probe, file string }{{"models", "tags"}, {"loaded", "ps"}, {"health", "version"}} {
		same("probe "+tc.probe, abi.OpProbeDecode, input(0, nil, readFile(t, "probe/"+tc.file+".json"), "probe", tc.probe, "status", "200"))
	}
	same("error", abi.OpErrorDecode, input(0, nil, []byte(`{"error":"model \"x\" not found, try pulling it first"}`), "status", "404"))
}

// BenchmarkWasm measures the per-line stream op and the request op inside
// wazero (run with -wasm).
func BenchmarkWasm(b *testing.B) {
	w := loadWasm(b)
	b.Run("stream_line", func(b *testing.B) {
		in := streamInput(benchLine)
		b.ReportAllocs()
		for b.Loop() {
			if r := w.do(b, abi.OpStreamDecode, in); r.Status != abi.StatusOK {
				b.Fatal(r.Error)
			}
		}
	})
	b.Run("request", func(b *testing.B) {
		in := input(0, nil, readFile(b, "request/tools.canon.json"))
		b.ReportAllocs()
		for b.Loop() {
			if r := w.do(b, abi.OpRequestEncode, in); r.Status != abi.StatusOK {
				b.Fatal(r.Error)
			}
		}
	})
}
