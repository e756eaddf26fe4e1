package conformance

import (
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
	cache := filepath.Join(dir, "cache")
	type plugin struct {
		name    string
		kind    sdk.Kind
		vectors func(t *testing.T, pdir, gdir string)
		streams string // glob of recorded upstream streams
	}
	plugins := []plugin{
		{"openai", sdk.KindTranslator, func(t *testing.T, pdir, gdir string) {
			pairs(t, filepath.Join(pdir, "requests"), gdir, "request_decode", ".req.json", ".canon.json")
		}, ""},
		{"vllm", sdk.KindAdapter, func(t *testing.T, _, gdir string) {
			writeVector(t, gdir, "not_found", `{"op": "error_decode", "meta": {"status": "404"},
  "input": {"error":{"message":"The model `+"`gpt-4`"+` does not exist.","type":"NotFoundError","param":"model","code":404}},
  "want": {"payload": {"status": 404, "type": "not_found", "code": "model_not_found",
    "message": "The model `+"`gpt-4`"+` does not exist.", "param": "model"}}}`)
			writeVector(t, gdir, "health", `{"op": "probe_decode", "meta": {"probe": "health", "status": "200"},
  "input": "", "want": {"payload": {"healthy": true}}}`)
		}, "streams/*.sse"},
		{"ollama", sdk.KindAdapter, func(t *testing.T, pdir, gdir string) {
			pairs(t, filepath.Join(pdir, "request"), gdir, "request_encode", ".canon.json", ".ollama.json")
			pairs(t, filepath.Join(pdir, "response"), gdir, "response_decode", ".ollama.json", ".canon.json")
		}, "stream/*.ndjson"},
	}
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
			pdir := filepath.Join(root, "plugins", p.name, "testdata")
			gdir := filepath.Join(dir, p.name+"-golden")
			if err := os.MkdirAll(gdir, 0o755); err != nil {
				t.Fatal(err)
			}
			p.vectors(t, pdir, gdir)
			var streams []string
			if p.streams != "" {
				all, _ := filepath.Glob(filepath.Join(pdir, p.streams))
				for _, f := range all {
					// Streams that end in a backend error are the plugin's own
					// tests' business; the split check needs complete ones.
					if !strings.HasPrefix(filepath.Base(f), "error") {
						streams = append(streams, f)
					}
				}
				if len(streams) == 0 {
					t.Fatalf("no recorded streams match %s", p.streams)
				}
			}
			Run(t, filepath.Join(dir, p.name+".wasm"), Options{Kind: p.kind, GoldenDir: gdir, Streams: streams,
				CacheDir: cache, MaxSplitPrefix: 512, RandomSplits: 50, FuzzIterations: 200, BudgetCalls: 500,
				// Loose on purpose: CI machines are shared; this catches pathological
				// plugins, bench/RESULTS.md has the real figures.
				Budget: 50 * time.Millisecond})
		})
	}
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
