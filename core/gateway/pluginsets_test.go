package gateway

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/plugins/firstparty"
)

// pluginSet is one way to load the first-party plugins, and whether the
// server serves a request of it by fused calls (translator and adapter in
// one module) or by the canonical path (two calls per direction).
type pluginSet struct {
	name  string
	set   testutil.PluginSet
	fused bool
}

// pluginSets are the first-party plugins as separate .wasm modules, as the
// .wasm bundle, and both compiled natively into the gateway.
func pluginSets(t *testing.T) []pluginSet {
	t.Helper()
	bundle, err := testutil.BuildBundle()
	if err != nil {
		t.Fatal(err)
	}
	registerFirstParty()
	native := func(name, entries string) testutil.PluginSet {
		dir := t.TempDir()
		path := filepath.Join(dir, "plugins.yaml")
		if err := os.WriteFile(path, []byte("abi: 2\nplugins:\n"+entries), 0o644); err != nil {
			t.Fatal(err)
		}
		return testutil.PluginSet{Dir: dir, YAML: path}
	}
	return []pluginSet{
		{"separate", plugins, false},
		{"bundle", bundle, true},
		{"native-bundle", native("bundle", `  - {name: firstparty, kind: bundle, path: "native:firstparty"}`+"\n"), true},
		{"native-separate", native("separate", `  - {name: openai, kind: translator, path: "native:openai"}
  - {name: anthropic, kind: translator, path: "native:anthropic"}
  - {name: ollama-api, kind: translator, path: "native:ollama-api"}
  - {name: vllm, kind: adapter, path: "native:vllm"}
  - {name: ollama, kind: adapter, path: "native:ollama"}
`), false},
	}
}

var registerOnce sync.Once

// registerFirstParty registers the first-party plugins as native ones
// ("native:NAME" in plugins.yaml), as core/cmd/mindrouter does for the
// gateway binary.
func registerFirstParty() {
	registerOnce.Do(func() {
		for name, f := range firstparty.Factories {
			pluginhost.RegisterNative(name, f)
		}
	})
}

// withPlugins runs f with the plugin set of t and its subtests (startEnv's
// and startHostile's plugins.yaml, pluginsFor) set to ps, until t ends:
// its subtests may be parallel ones, which run after f returns.
func withPlugins(t *testing.T, ps testutil.PluginSet, f func()) {
	pluginOverrides.Store(t.Name(), ps)
	t.Cleanup(func() { pluginOverrides.Delete(t.Name()) })
	f()
}

// pluginOverrides maps a test's name to the plugin set withPlugins gave it.
var pluginOverrides sync.Map

// pluginsFor is the plugin set of t: the one withPlugins gave t or the
// nearest test above it, else the first-party set (plugins).
func pluginsFor(t testing.TB) testutil.PluginSet {
	for name := t.Name(); ; {
		if ps, ok := pluginOverrides.Load(name); ok {
			return ps.(testutil.PluginSet)
		}
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			return plugins
		}
		name = name[:i]
	}
}

// TestOpenAISDK_PluginSets runs the OpenAI SDK tests against every way of
// loading the first-party plugins: the bundle's fused path and the
// separate modules' canonical path, as WebAssembly and natively; and
// checks, from the plugin metrics, which path served the requests.
func TestOpenAISDK_PluginSets(t *testing.T) {
	t.Parallel()
	for _, ps := range pluginSets(t) {
		t.Run(ps.name, func(t *testing.T) {
			t.Parallel()
			withPlugins(t, ps.set, func() {
				t.Run("ChatBothEngines", TestOpenAISDK_ChatBothEngines)
				t.Run("StreamWithoutUsageOption", TestOpenAISDK_StreamWithoutUsageOption)
				t.Run("ToolCallsStreamed", TestOpenAISDK_ToolCallsStreamed)
				t.Run("Models", TestModels)
				t.Run("Errors", TestErrors_OpenAIShape)
				t.Run("ImageURL", TestImageURL_Fetched)
				t.Run("Completions", TestOpenAISDK_Completions)
				t.Run("Path", func(t *testing.T) { checkPath(t, ps) })
			})
		})
	}
}

// checkPath serves a plain and a streamed chat on each engine and checks
// the plugin calls that served them.
func checkPath(t *testing.T, ps pluginSet) {
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	ctx := context.Background()
	for _, model := range []string{vllmModel, ollamaModel} {
		resp, err := e.client.Chat.Completions.New(ctx, chatParams(model, "which path?"))
		if err != nil || len(resp.Choices) != 1 || resp.Choices[0].Message.Content == "" {
			t.Fatalf("%s: %v %+v", model, err, resp)
		}
		stream := e.client.Chat.Completions.NewStreaming(ctx, chatParams(model, "which path?"))
		n := 0
		for stream.Next() {
			n++
		}
		if err := stream.Err(); err != nil || n < 3 {
			t.Fatalf("%s stream: %v after %d chunks", model, err, n)
		}
	}
	var b strings.Builder
	e.gw.Host.WriteMetrics(&b)
	calls := map[string]float64{} // plugin/op
	for _, line := range strings.Split(b.String(), "\n") {
		if !strings.HasPrefix(line, "mindrouter_plugin_calls_total{") {
			continue
		}
		plugin, op := label(line, "plugin"), label(line, "op")
		v, _ := metricValue(line, line[:strings.LastIndexByte(line, ' ')])
		calls[plugin+"/"+op] = v
	}
	t.Logf("%s: plugin calls %v", ps.name, calls)
	if ps.fused {
		for _, op := range []string{"fused_request", "fused_response", "fused_stream"} {
			if calls["firstparty/"+op] == 0 {
				t.Errorf("no %s call", op)
			}
		}
		if calls["firstparty/fused_request"] < 4 || calls["firstparty/request_decode"] != 0 || calls["firstparty/stream_encode"] != 0 {
			t.Errorf("not every request was fused: %v", calls)
		}
		if !strings.Contains(b.String(), `mindrouter_plugin_component_calls_total{plugin="firstparty",component="openai+ollama",op="fused_stream"}`) {
			t.Error("no fused stream call counted for openai+ollama")
		}
		return
	}
	if calls["openai/request_decode"] < 4 || calls["vllm/request_encode"] < 2 || calls["ollama/stream_decode"] == 0 || calls["openai/stream_encode"] == 0 {
		t.Errorf("canonical path calls %v", calls)
	}
	for k := range calls {
		if strings.Contains(k, "fused") {
			t.Errorf("a fused call (%s) with separate modules", k)
		}
	}
}

// label is the value of label name in a metric line.
func label(line, name string) string {
	_, rest, ok := strings.Cut(line, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// A gateway on the plugins compiled natively (for measuring the
// WebAssembly tax) serves chat like one on .wasm plugins, and says so in
// its plugin metrics.
func TestNativePlugins_ServeChat(t *testing.T) {
	t.Parallel()
	ps := pluginSets(t)[2]
	withPlugins(t, ps.set, func() {
		e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
		resp, err := e.client.Chat.Completions.New(context.Background(), chatParams(vllmModel, "Hello from native code"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Model != vllmModel || len(resp.Choices) != 1 || resp.Choices[0].Message.Content == "" || resp.Usage.TotalTokens == 0 {
			t.Fatalf("response %+v", resp)
		}
		var b strings.Builder
		e.gw.Host.WriteMetrics(&b)
		if !strings.Contains(b.String(), `sha256="native:firstparty"`) {
			t.Errorf("plugin info does not say native:\n%s", b.String())
		}
	})
}
