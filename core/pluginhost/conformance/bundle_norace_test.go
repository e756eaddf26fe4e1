//go:build !race

// The bundle's conformance run is hundreds of thousands of wasm calls
// (every vector, stream cut, fuzz input and budget call, per component):
// the race detector slows wazero's host side tenfold (3-4 minutes) and
// has nothing to judge in it, so it runs in the pass without -race
// (.ci/norace-tests.sh), like the plugins' wasm parity tests.

package conformance

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/internal/testutil"
	"github.com/mindrouter/mindrouter/sdk"
)

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
	cache, err := testutil.CompileCache()
	if err != nil {
		t.Fatal(err)
	}
	wasm, err := testutil.PluginWasm("bundle")
	if err != nil {
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
