//go:build !race

package bundle

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/plugins/internal/wasmtest"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// BenchmarkWasmOpenAIToVLLM is BenchmarkOpenAIToVLLM's fused calls on the
// bundle's .wasm in wazero, driven through the ABI exports as the gateway
// drives it (the input copied into guest memory, the result read in
// place). allocs/op counts the host's side only; for the guest's, run the
// native benchmark inside wazero:
//
//	go build -o /tmp/wasmexec ./plugins/internal/wasmtest/wasmexec
//	GOOS=wasip1 GOARCH=wasm go test -exec /tmp/wasmexec -run '^$' -bench OpenAIToVLLM -benchmem ./plugins/bundle
func BenchmarkWasmOpenAIToVLLM(b *testing.B) {
	w := wasmtest.Load(b, "bundle", nil)
	parse(b, w.Init(b))
	req := read(b, filepath.Join("..", "openai/testdata/requests/basic.req.json"))
	resp := read(b, filepath.Join("..", "vllm/testdata/responses/plain.json"))
	reqMeta := metaList(append(append([]string{}, routeMeta...), abi.MetaContextLength, "32768")...)
	hdr := metaList(headerMeta...)
	events, _, _, fstate := streamBatch(b)
	for _, c := range []struct {
		name    string
		op      abi.Op
		state   []byte
		meta    []byte
		payload []byte
	}{
		{"request/fused", abi.OpFusedRequest, nil, reqMeta, req},
		{"response/fused", abi.OpFusedResponse, nil, hdr, resp},
		{"stream20/fused", abi.OpFusedStream, fstate, hdr, events},
	} {
		in := input(OpenAI, VLLM, 0, c.state, c.meta, c.payload)
		if r, err := abi.ParseResult(w.Call(b, c.op, in)); err != nil || r.Status != abi.StatusOK {
			b.Fatalf("%s: %v %s %s", c.name, err, r.Status, r.Error)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			c0 := processCPU()
			for b.Loop() {
				w.Call(b, c.op, in)
			}
			b.ReportMetric(float64(processCPU()-c0)/float64(b.N)/1e3, "cpu-µs/op")
		})
	}
}

// BenchmarkWasmDefaultPath is BenchmarkDefaultPath's calls on the .wasm.
// Instruction counts per call, independent of the machine's load: run it
// under callgrind with -test.benchtime Nx and (N+k)x and divide the
// difference by k (bench/README.md, "Guest instructions").
func BenchmarkWasmDefaultPath(b *testing.B) {
	w := wasmtest.Load(b, "bundle", nil)
	parse(b, w.Init(b))
	for _, c := range defaultPathCalls(b) {
		in := input(OpenAI, c.ai, c.flags, c.state, c.meta, c.body)
		checkOK(b, c.name, w.Call(b, c.op, in))
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			c0 := processCPU()
			for b.Loop() {
				w.Call(b, c.op, in)
			}
			b.ReportMetric(float64(processCPU()-c0)/float64(b.N)/1e3, "cpu-µs/op")
		})
	}
}

// BenchmarkWasmDefaultPathCold is BenchmarkWasmDefaultPath's calls with
// the caches cold, as a request finds them at concurrency 1 on a small
// machine (the client, the backend and the gateway's other goroutines
// run between two calls of one request): before each call the benchmark
// writes to 16 MiB of other memory, and call-µs is the time of the calls
// alone. native is the same calls compiled into the host. The difference
// between this and the warm figure is what a cold call pays in cache
// misses on the guest's code and data (bench/RESULTS.md).
func BenchmarkWasmDefaultPathCold(b *testing.B) {
	w := wasmtest.Load(b, "bundle", nil)
	parse(b, w.Init(b))
	junk := make([]byte, 16<<20)
	run := func(b *testing.B, call func()) {
		var d time.Duration
		for b.Loop() {
			for i := 0; i < len(junk); i += 64 {
				junk[i]++
			}
			t := time.Now()
			call()
			d += time.Since(t)
		}
		b.ReportMetric(float64(d.Nanoseconds())/float64(b.N)/1e3, "call-µs")
	}
	for _, c := range defaultPathCalls(b) {
		in := input(OpenAI, c.ai, c.flags, c.state, c.meta, c.body)
		checkOK(b, c.name, w.Call(b, c.op, in))
		b.Run("wasm/"+c.name, func(b *testing.B) { run(b, func() { w.Call(b, c.op, in) }) })
		p := New()
		b.Run("native/"+c.name, func(b *testing.B) { run(b, func() { p.Call(c.op, in) }) })
	}
}
