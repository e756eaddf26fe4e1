//go:build !race

package anthropic

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/pluginhost/conformance"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// TestConformance runs the gateway's plugin conformance kit on the built
// .wasm through the production loader: ABI, manifest, golden vectors made
// from this package's testdata (requests, responses, streams, errors,
// models), fuzzing of every op, determinism, call budget and memory.
func TestConformance(t *testing.T) {
	dir := t.TempDir()
	wasm := filepath.Join(dir, "anthropic.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w", "-o", wasm, "./wasm")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
	gdir := filepath.Join(dir, "golden")
	if err := os.MkdirAll(gdir, 0o755); err != nil {
		t.Fatal(err)
	}
	vector := func(name string, v map[string]any) {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(gdir, name+".vector.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(path ...string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(append([]string{"testdata"}, path...)...))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	meta := func(kv []string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, name := range testFiles(t, "requests", ".req.json") {
		vector("request_decode-"+name, map[string]any{"op": "request_decode", "meta": map[string]string{"route": RouteMessages},
			"input": json.RawMessage(read("requests", name+".req.json")),
			"want":  map[string]any{"payload": json.RawMessage(read("requests", name+".canon.json"))}})
	}
	vector("request_decode-no_max_tokens", map[string]any{"op": "request_decode", "meta": map[string]string{"route": RouteMessages},
		"input": json.RawMessage(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`),
		"want":  map[string]any{"status": "bad_input", "error_contains": "max_tokens is required"}})
	for _, name := range testFiles(t, "responses", ".canon.json") {
		vector("response_encode-"+name, map[string]any{"op": "response_encode", "meta": meta(gwMeta),
			"input": json.RawMessage(read("responses", name+".canon.json")),
			"want":  map[string]any{"payload": string(read("responses", name+".json"))}})
	}
	for _, name := range testFiles(t, "streams", ".json") {
		sc := loadStream(t, name)
		var items []json.RawMessage
		for i := range sc.chunks {
			items = append(items, sc.chunks[i].AppendJSON(nil))
		}
		vector("stream_encode-"+name, map[string]any{"op": "stream_encode", "meta": meta(sc.meta), "flags": []string{"first", "end"},
			"items": items, "want": map[string]any{"payload": string(read("streams", name+".sse"))}})
	}
	e := canon.Error{Status: 404, Type: canon.ErrNotFound, Message: "model nope not found"}
	vector("error_encode-stream", map[string]any{"op": "error_encode", "meta": map[string]string{"route": RouteMessages, "stream": "1"},
		"input": json.RawMessage(e.AppendJSON(nil)),
		"want":  map[string]any{"payload": "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"not_found_error\",\"message\":\"model nope not found\"}}\n\n"}})
	vector("models_encode", map[string]any{"op": "models_encode", "meta": map[string]string{"route": RouteModels},
		"input": json.RawMessage(read("models.canon.json")), "want": map[string]any{"payload": string(read("models.json"))}})

	conformance.Run(t, wasm, conformance.Options{Kind: sdk.KindTranslator, GoldenDir: gdir,
		FuzzIterations: 200, BudgetCalls: 500,
		// Loose on purpose: shared CI machines; this catches pathological
		// plugins, not regressions of a few microseconds.
		Budget: 50 * time.Millisecond})
}
