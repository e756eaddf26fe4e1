package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/internal/testutil"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// TestFirstPartyPlugins runs the whole kit on the gateway's own plugins,
// with golden vectors made from each plugin's own testdata and its recorded
// upstream streams for the split check.
func TestFirstPartyPlugins(t *testing.T) {
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	plugins := firstPartyPlugins
	var files []string
	for _, p := range plugins {
		out := filepath.Join(dir, p.name+".wasm")
		if err := testutil.BuildWasm("plugins/"+p.name+"/wasm", out, "-ldflags=-s -w"); err != nil {
			t.Fatal(err)
		}
		files = append(files, out+"=trusted+strict")
	}
	if err := testutil.Precompile(cache, files...); err != nil {
		t.Fatal(err)
	}
	for _, p := range plugins {
		t.Run(p.name, func(t *testing.T) {
			gdir := filepath.Join(dir, p.name+"-golden")
			streams := p.golden(t, root, gdir)
			Run(t, filepath.Join(dir, p.name+".wasm"), Options{Kind: p.kind, GoldenDir: gdir, Streams: streams,
				CacheDir: cache, MaxSplitPrefix: 512, RandomSplits: 50, FuzzIterations: 200, BudgetCalls: 500,
				// Loose on purpose: CI machines are shared; this catches pathological
				// plugins, bench/RESULTS.md has the real figures.
				Budget: 50 * time.Millisecond})
		})
	}
}

// TestFirstPartyBundle runs the kit on the first-party bundle
// (plugins/bundle: openai, vllm, ollama in one module): every check per
// component, addressed by its index, with the golden vectors and streams
// of the separate plugins, and the fused check — fused ops against the
// canonical two-call path for every vector and every stream cut, both
// adapters behind the translator.
func TestFirstPartyBundle(t *testing.T) {
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	wasm := filepath.Join(dir, "bundle.wasm")
	if err := testutil.BuildWasm(testutil.Bundle.Pkg, wasm, "-ldflags=-s -w"); err != nil {
		t.Fatal(err)
	}
	if err := testutil.Precompile(cache, wasm+"=trusted+strict"); err != nil {
		t.Fatal(err)
	}
	gdir := filepath.Join(dir, "golden")
	parts := map[string]PartOptions{}
	for _, p := range firstPartyPlugins {
		pdir := filepath.Join(gdir, p.name)
		parts[p.name] = PartOptions{GoldenDir: pdir, Streams: p.golden(t, root, pdir)}
	}
	// More inputs for the fused check: OpenAI requests from vLLM's tests,
	// vLLM's recorded responses (status only: their canonical form is
	// vLLM's own tests' business).
	statusVectors(t, filepath.Join(root, "plugins/vllm/testdata/requests/*.json"), parts["openai"].GoldenDir, "request_decode",
		map[string]string{"no_model": "bad_input"}) // sampling.json has n: 2, which openai takes since n > 1 went in
	statusVectors(t, filepath.Join(root, "plugins/vllm/testdata/responses/*.json"), parts["vllm"].GoldenDir, "response_decode", nil)

	rep, err := Check(context.Background(), wasm, Options{Kind: sdk.KindBundle, GoldenDir: gdir, Parts: parts,
		CacheDir: cache, MaxSplitPrefix: 512, RandomSplits: 50, FuzzIterations: 200, BudgetCalls: 500,
		Budget: 50 * time.Millisecond})
	t.Log("\n" + rep.String())
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]CheckResult{}
	for _, c := range rep.Checks {
		ran[c.Name] = c
	}
	for _, name := range []string{"abi", "load", "openai/golden", "openai/fuzz", "openai/determinism", "openai/budget",
		"vllm/golden", "vllm/split", "vllm/fuzz", "vllm/memory", "ollama/golden", "ollama/split", "ollama/budget", "fused"} {
		if c, ok := ran[name]; !ok || !c.OK || c.Skipped {
			t.Errorf("check %s: %+v", name, c)
		}
	}
	if c := ran["openai/split"]; !c.Skipped {
		t.Errorf("openai/split ran on a translator: %+v", c)
	}
	if fused := ran["fused"].Detail; !strings.Contains(fused, "openai+vllm") || !strings.Contains(fused, "openai+ollama") {
		t.Errorf("fused check: %s", fused)
	}
	if len(rep.Components) != 6 || rep.Components[1].Name != "vllm" || rep.Components[2].P99 == 0 ||
		rep.Components[3].Name != "anthropic" || rep.Components[4].Name != "ollama-api" || rep.Components[4].P99 == 0 ||
		rep.Components[5].Name != "openai-responses" || rep.Components[5].P99 == 0 {
		t.Errorf("component figures %+v", rep.Components)
	}
}

// golden writes the plugin's golden vectors into gdir and returns its
// recorded upstream streams (those that end well: streams ending in a
// backend error are the plugin's own tests' business).
func (p fpPlugin) golden(t *testing.T, root, gdir string) []string {
	t.Helper()
	pdir := filepath.Join(root, "plugins", p.name, "testdata")
	if err := os.MkdirAll(gdir, 0o755); err != nil {
		t.Fatal(err)
	}
	p.vectors(t, pdir, gdir)
	var streams []string
	if p.streams != "" {
		all, _ := filepath.Glob(filepath.Join(pdir, p.streams))
		for _, f := range all {
			if !strings.HasPrefix(filepath.Base(f), "error") {
				streams = append(streams, f)
			}
		}
		if len(streams) == 0 {
			t.Fatalf("no recorded streams match %s", p.streams)
		}
	}
	return streams
}

// statusVectors writes a vector of op for each file matching glob that
// checks the status only (ok, or status[name]).
func statusVectors(t *testing.T, glob, gdir, op string, status map[string]string) {
	t.Helper()
	files, _ := filepath.Glob(glob)
	if len(files) == 0 {
		t.Fatalf("no files match %s", glob)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		st := status[name]
		if st == "" {
			st = "ok"
		}
		writeVector(t, gdir, op+"-status-"+name, fmt.Sprintf(`{"op": %q, "input": %s, "want": {"status": %q}}`, op, b, st))
	}
}

// fpPlugin is a first-party plugin with its golden vectors (made from its
// own testdata) and recorded upstream streams.
type fpPlugin struct {
	name    string
	kind    sdk.Kind
	vectors func(t *testing.T, pdir, gdir string)
	streams string // glob of recorded upstream streams
}

var firstPartyPlugins = []fpPlugin{
	{"openai", sdk.KindTranslator, func(t *testing.T, pdir, gdir string) {
		pairs(t, filepath.Join(pdir, "requests"), gdir, "request_decode", ".req.json", ".canon.json")
		pairs(t, filepath.Join(pdir, "embeddings"), gdir, "embed_request_decode", ".req.json", ".canon.json")
	}, ""},
	{"vllm", sdk.KindAdapter, func(t *testing.T, pdir, gdir string) {
		writeVector(t, gdir, "not_found", `{"op": "error_decode", "meta": {"status": "404"},
  "input": {"error":{"message":"The model `+"`gpt-4`"+` does not exist.","type":"NotFoundError","param":"model","code":404}},
  "want": {"payload": {"status": 404, "type": "not_found", "code": "model_not_found",
    "message": "The model `+"`gpt-4`"+` does not exist.", "param": "model"}}}`)
		writeVector(t, gdir, "health", `{"op": "probe_decode", "meta": {"probe": "health", "status": "200"},
  "input": "", "want": {"payload": {"healthy": true}}}`)
		// The count ops (ABI 2.7): a /tokenize body, and vLLM's answer.
		writeVector(t, gdir, "count_request", `{"op": "count_request_encode", "meta": {"context_length": "4096"},
  "input": {"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "max_tokens": 9, "stream": true},
  "want": {"payload": {"model": "m", "messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": true},
    "meta": {"path": "/tokenize", "method": "POST"}}}`)
		writeVector(t, gdir, "count_response", `{"op": "count_response_decode",
  "input": {"count": 3, "max_model_len": 32768, "tokens": [151644, 872, 198], "token_strs": null},
  "want": {"payload": {"count": 3, "max_model_len": 32768}}}`)
		writeVector(t, gdir, "count_response_error", `{"op": "count_response_decode",
  "input": {"object": "error", "message": "x", "code": 400},
  "want": {"status": "bad_input", "error_contains": "no token count"}}`)
		pairs(t, filepath.Join(pdir, "embeddings"), gdir, "embed_request_encode", ".req.canon.json", ".req.vllm.json")
		pairs(t, filepath.Join(pdir, "embeddings"), gdir, "embed_response_decode", ".resp.vllm.json", ".resp.canon.json")
	}, "streams/*.sse"},
	{"ollama", sdk.KindAdapter, func(t *testing.T, pdir, gdir string) {
		pairs(t, filepath.Join(pdir, "request"), gdir, "request_encode", ".canon.json", ".ollama.json")
		pairs(t, filepath.Join(pdir, "response"), gdir, "response_decode", ".ollama.json", ".canon.json")
		pairs(t, filepath.Join(pdir, "embed"), gdir, "embed_request_encode", ".req.canon.json", ".req.ollama.json")
		pairs(t, filepath.Join(pdir, "embed"), gdir, "embed_response_decode", ".resp.ollama.json", ".resp.canon.json")
	}, "stream/*.ndjson"},
	{"anthropic", sdk.KindTranslator, anthropicVectors, ""},
}

// anthropicVectors are the Anthropic translator's golden vectors from its
// testdata: requests, responses and streams with the meta the gateway
// sends, a streamed error and the model list (the plugin's own tests
// check the same files natively, and read them with anthropic-sdk-go).
func anthropicVectors(t *testing.T, pdir, gdir string) {
	const route = "messages" // anthropic.RouteMessages
	vector := func(name string, v map[string]any) {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		writeVector(t, gdir, name, string(b))
	}
	read := func(path ...string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(append([]string{pdir}, path...)...))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	names := func(dir, suffix string) []string {
		t.Helper()
		m, _ := filepath.Glob(filepath.Join(pdir, dir, "*"+suffix))
		if len(m) == 0 {
			t.Fatalf("no %s/*%s in %s", dir, suffix, pdir)
		}
		for i := range m {
			m[i] = strings.TrimSuffix(filepath.Base(m[i]), suffix)
		}
		return m
	}
	for _, name := range names("requests", ".req.json") {
		vector("request_decode-"+name, map[string]any{"op": "request_decode", "meta": map[string]string{"route": route},
			"input": json.RawMessage(read("requests", name+".req.json")),
			"want":  map[string]any{"payload": json.RawMessage(read("requests", name+".canon.json"))}})
	}
	vector("request_decode-no_max_tokens", map[string]any{"op": "request_decode", "meta": map[string]string{"route": route},
		"input": json.RawMessage(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`),
		"want":  map[string]any{"status": "bad_input", "error_contains": "max_tokens is required"}})
	gw := map[string]string{"route": route, "id": "chatcmpl-gw42", "model": "client-model", "created": "1710000000"}
	for _, name := range names("responses", ".canon.json") {
		vector("response_encode-"+name, map[string]any{"op": "response_encode", "meta": gw,
			"input": json.RawMessage(read("responses", name+".canon.json")),
			"want":  map[string]any{"payload": string(read("responses", name+".json"))}})
	}
	for _, name := range names("streams", ".json") {
		var f struct {
			Meta   []string          `json:"meta"`
			Chunks []json.RawMessage `json:"chunks"`
		}
		if err := json.Unmarshal(read("streams", name+".json"), &f); err != nil {
			t.Fatalf("streams/%s.json: %v", name, err)
		}
		meta := map[string]string{"route": route, "id": "chatcmpl-test123", "model": "client-model", "created": "1700000000", "include_usage": "0"}
		for i := 0; i+1 < len(f.Meta); i += 2 {
			meta[f.Meta[i]] = f.Meta[i+1]
		}
		items := make([]json.RawMessage, len(f.Chunks))
		for i, c := range f.Chunks {
			var ch canon.ChatChunk // as the gateway sends it: canonical JSON
			if err := ch.DecodeJSON(c); err != nil {
				t.Fatalf("streams/%s.json: chunk %s: %v", name, c, err)
			}
			items[i] = ch.AppendJSON(nil)
		}
		vector("stream_encode-"+name, map[string]any{"op": "stream_encode", "meta": meta, "flags": []string{"first", "end"},
			"items": items, "want": map[string]any{"payload": string(read("streams", name+".sse"))}})
	}
	e := canon.Error{Status: 404, Type: canon.ErrNotFound, Message: "model nope not found"}
	vector("error_encode-stream", map[string]any{"op": "error_encode", "meta": map[string]string{"route": route, "stream": "1"},
		"input": json.RawMessage(e.AppendJSON(nil)),
		"want":  map[string]any{"payload": "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"not_found_error\",\"message\":\"model nope not found\"}}\n\n"}})
	vector("models_encode", map[string]any{"op": "models_encode", "meta": map[string]string{"route": "models"},
		"input": json.RawMessage(read("models.canon.json")), "want": map[string]any{"payload": string(read("models.json"))}})
}

// pairs turns src/NAME<inExt> + src/NAME<outExt> into three-file vectors.
func pairs(t *testing.T, src, gdir, op, inExt, outExt string) {
	t.Helper()
	ins, _ := filepath.Glob(filepath.Join(src, "*"+inExt))
	if len(ins) == 0 {
		t.Fatalf("no %s files in %s", inExt, src)
	}
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), inExt)
		out := filepath.Join(src, name+outExt)
		if _, err := os.Stat(out); err != nil {
			continue // an input without an expected output is an error case
		}
		base := filepath.Join(gdir, op+"-"+name)
		copyFile(t, in, base+".in.json")
		copyFile(t, out, base+".out.json")
		if err := os.WriteFile(base+".op", []byte(op), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeVector(t *testing.T, gdir, name, v string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(gdir, name+".vector.json"), []byte(v), 0o644); err != nil {
		t.Fatal(err)
	}
}
