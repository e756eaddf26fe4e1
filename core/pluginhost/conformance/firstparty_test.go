package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/internal/testutil"
	"github.com/mindrouter/mindrouter/sdk"
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
	cache, err := testutil.CompileCache()
	if err != nil {
		t.Fatal(err)
	}
	plugins := firstPartyPlugins
	var files []string
	wasm := map[string]string{}
	for _, p := range plugins {
		if wasm[p.name], err = testutil.PluginWasm(p.name); err != nil {
			t.Fatal(err)
		}
		files = append(files, wasm[p.name]+"=trusted+strict")
	}
	if err := testutil.Precompile(cache, files...); err != nil {
		t.Fatal(err)
	}
	for _, p := range plugins {
		t.Run(p.name, func(t *testing.T) {
			gdir := filepath.Join(dir, p.name+"-golden")
			streams := p.golden(t, root, gdir)
			Run(t, wasm[p.name], Options{Kind: p.kind, GoldenDir: gdir, Streams: streams,
				CacheDir: cache, MaxSplitPrefix: 512, RandomSplits: 50, FuzzIterations: 200, BudgetCalls: 500,
				// Loose on purpose: CI machines are shared; this catches pathological
				// plugins, bench/RESULTS.md has the real figures.
				Budget: 50 * time.Millisecond})
		})
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
