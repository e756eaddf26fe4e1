//go:build !race

// Under the race detector wazero compiles and fuzzes about ten times
// slower; this runs in the non-race pass, as it did in plugins/anthropic.

package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/internal/testutil"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// TestFirstPartyAnthropic runs the kit on the anthropic translator's .wasm
// through the production loader: ABI, manifest, golden vectors made from
// plugins/anthropic/testdata (requests, responses, streams, errors,
// models), fuzzing of every op, determinism, call budget and memory. (It
// lived in plugins/anthropic, which may not import the gateway's packages;
// the route names and meta below are that package's.)
func TestFirstPartyAnthropic(t *testing.T) {
	const routeMessages, routeModels = "messages", "models"
	gwMeta := map[string]string{"route": routeMessages, "id": "chatcmpl-gw42", "model": "client-model", "created": "1710000000"}
	streamMeta := map[string]string{"route": routeMessages, "id": "chatcmpl-test123", "model": "client-model", "created": "1700000000", "include_usage": "0"}
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	wasm, err := testutil.PluginWasm("anthropic")
	if err != nil {
		t.Fatal(err)
	}
	cache, err := testutil.CompileCache()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(root, "plugins", "anthropic", "testdata")
	gdir := filepath.Join(t.TempDir(), "golden")
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
		b, err := os.ReadFile(filepath.Join(append([]string{src}, path...)...))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	names := func(dir, suffix string) []string {
		t.Helper()
		m, _ := filepath.Glob(filepath.Join(src, dir, "*"+suffix))
		if len(m) == 0 {
			t.Fatalf("no %s/*%s in %s", dir, suffix, src)
		}
		for i := range m {
			m[i] = strings.TrimSuffix(filepath.Base(m[i]), suffix)
		}
		return m
	}
	for _, name := range names("requests", ".req.json") {
		vector("request_decode-"+name, map[string]any{"op": "request_decode", "meta": map[string]string{"route": routeMessages},
			"input": json.RawMessage(read("requests", name+".req.json")),
			"want":  map[string]any{"payload": json.RawMessage(read("requests", name+".canon.json"))}})
	}
	vector("request_decode-no_max_tokens", map[string]any{"op": "request_decode", "meta": map[string]string{"route": routeMessages},
		"input": json.RawMessage(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`),
		"want":  map[string]any{"status": "bad_input", "error_contains": "max_tokens is required"}})
	for _, name := range names("responses", ".canon.json") {
		vector("response_encode-"+name, map[string]any{"op": "response_encode", "meta": gwMeta,
			"input": json.RawMessage(read("responses", name+".canon.json")),
			"want":  map[string]any{"payload": string(read("responses", name+".json"))}})
	}
	for _, name := range names("streams", ".json") {
		var f struct {
			Meta   []string          `json:"meta"`
			Chunks []json.RawMessage `json:"chunks"`
		}
		if err := json.Unmarshal(read("streams", name+".json"), &f); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		meta := map[string]string{}
		for k, v := range streamMeta {
			meta[k] = v
		}
		for i := 0; i+1 < len(f.Meta); i += 2 {
			meta[f.Meta[i]] = f.Meta[i+1]
		}
		var items []json.RawMessage
		for _, c := range f.Chunks {
			var ch canon.ChatChunk // canonical form, as the plugin's tests send it
			if err := ch.DecodeJSON(c); err != nil {
				t.Fatalf("%s: chunk %s: %v", name, c, err)
			}
			items = append(items, ch.AppendJSON(nil))
		}
		vector("stream_encode-"+name, map[string]any{"op": "stream_encode", "meta": meta, "flags": []string{"first", "end"},
			"items": items, "want": map[string]any{"payload": string(read("streams", name+".sse"))}})
	}
	e := canon.Error{Status: 404, Type: canon.ErrNotFound, Message: "model nope not found"}
	vector("error_encode-stream", map[string]any{"op": "error_encode", "meta": map[string]string{"route": routeMessages, "stream": "1"},
		"input": json.RawMessage(e.AppendJSON(nil)),
		"want":  map[string]any{"payload": "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"not_found_error\",\"message\":\"model nope not found\"}}\n\n"}})
	vector("models_encode", map[string]any{"op": "models_encode", "meta": map[string]string{"route": routeModels},
		"input": json.RawMessage(read("models.canon.json")), "want": map[string]any{"payload": string(read("models.json"))}})

	Run(t, wasm, Options{Kind: sdk.KindTranslator, GoldenDir: gdir, CacheDir: cache,
		FuzzIterations: 200, BudgetCalls: 500,
		// Loose on purpose: shared CI machines; this catches pathological
		// plugins, not regressions of a few microseconds.
		Budget: 50 * time.Millisecond})
}
