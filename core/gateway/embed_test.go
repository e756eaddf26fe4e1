package gateway

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/matrix"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/plugins/ollama"
	"github.com/mindrouter/mindrouter/sdk"
)

// Embeddings through the gateway with the official openai-go client
// (client.Embeddings.New) on both engines: fakellm's vLLM
// /v1/embeddings and Ollama /api/embed give deterministic unit vectors of
// fakellm.DefaultEmbeddingDim per (model, text).

var embedModels = []string{vllmModel, ollamaModel}

func embed(t *testing.T, e *env, p openai.EmbeddingNewParams) *openai.CreateEmbeddingResponse {
	t.Helper()
	resp, err := e.client.Embeddings.New(context.Background(), p)
	if err != nil {
		t.Fatalf("%s: %v", p.Model, err)
	}
	return resp
}

// checkVector: the expected length and unit norm (fakellm normalises).
func checkVector(t *testing.T, v []float64, dim int) {
	t.Helper()
	if len(v) != dim {
		t.Fatalf("vector of %d, want %d", len(v), dim)
	}
	var n float64
	for _, f := range v {
		n += f * f
	}
	if math.Abs(n-1) > 1e-3 {
		t.Fatalf("norm² %v, want 1", n)
	}
}

func TestOpenAISDK_EmbeddingsString(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	for _, model := range embedModels {
		resp := embed(t, e, openai.EmbeddingNewParams{Model: model,
			Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("The food was delicious")}})
		if resp.Object != "list" || resp.Model != model || len(resp.Data) != 1 || resp.Data[0].Index != 0 || resp.Data[0].Object != "embedding" {
			t.Fatalf("%s: %s", model, resp.RawJSON())
		}
		checkVector(t, resp.Data[0].Embedding, fakellm.DefaultEmbeddingDim)
		if resp.Usage.PromptTokens == 0 || resp.Usage.TotalTokens != resp.Usage.PromptTokens {
			t.Fatalf("%s: usage %+v", model, resp.Usage)
		}
		matrix.Mark(t, "openai", "embeddings", engineOf(model))
	}
}

func TestOpenAISDK_EmbeddingsArray(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	inputs := []string{"first document", "second document", "third, with \"quotes\" and ü"}
	for _, model := range embedModels {
		resp := embed(t, e, openai.EmbeddingNewParams{Model: model,
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: inputs}})
		if len(resp.Data) != len(inputs) {
			t.Fatalf("%s: %d vectors", model, len(resp.Data))
		}
		for i, d := range resp.Data {
			if d.Index != int64(i) {
				t.Fatalf("%s: data[%d].index = %d", model, i, d.Index)
			}
			checkVector(t, d.Embedding, fakellm.DefaultEmbeddingDim)
		}
		// Each vector is its input's, in input order: the same as asking
		// for that input alone.
		one := embed(t, e, openai.EmbeddingNewParams{Model: model,
			Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String(inputs[2])}})
		if !sameVector(one.Data[0].Embedding, resp.Data[2].Embedding) || sameVector(resp.Data[0].Embedding, resp.Data[1].Embedding) {
			t.Fatalf("%s: vectors not per input", model)
		}
	}
}

// base64 comes back as a string of float32 bytes, which the SDK decodes
// into the same numbers the float form gives.
func TestOpenAISDK_EmbeddingsBase64(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	input := openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"alpha", "beta"}}
	for _, model := range embedModels {
		flt := embed(t, e, openai.EmbeddingNewParams{Model: model, Input: input, EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat})
		b64 := embed(t, e, openai.EmbeddingNewParams{Model: model, Input: input, EncodingFormat: openai.EmbeddingNewParamsEncodingFormatBase64})
		for i := range flt.Data {
			if raw := b64.Data[i].JSON.Embedding.Raw(); !strings.HasPrefix(raw, `"`) {
				t.Fatalf("%s: base64 embedding is %.40s", model, raw)
			}
			if raw := flt.Data[i].JSON.Embedding.Raw(); !strings.HasPrefix(raw, `[`) {
				t.Fatalf("%s: float embedding is %.40s", model, raw)
			}
			if !sameVector(flt.Data[i].Embedding, b64.Data[i].Embedding) {
				t.Fatalf("%s: base64 and float vectors differ at %d", model, i)
			}
			checkVector(t, b64.Data[i].Embedding, fakellm.DefaultEmbeddingDim)
		}
	}
}

func TestOpenAISDK_EmbeddingsDimensions(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	for _, model := range embedModels {
		resp := embed(t, e, openai.EmbeddingNewParams{Model: model, Dimensions: openai.Int(16), User: openai.String("u-1"),
			Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("short")}})
		checkVector(t, resp.Data[0].Embedding, 16)
	}
}

func TestOpenAISDK_EmbeddingsErrors(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	for _, tc := range []struct {
		name   string
		p      openai.EmbeddingNewParams
		status int
		msg    string
	}{
		{"empty string", openai.EmbeddingNewParams{Model: vllmModel, Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("")}}, 400, "empty string"},
		{"empty item", openai.EmbeddingNewParams{Model: ollamaModel, Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", ""}}}, 400, "input[1]"},
		{"tokens", openai.EmbeddingNewParams{Model: vllmModel, Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokens: []int64{1, 2}}}, 400, "token arrays"},
		{"too many", openai.EmbeddingNewParams{Model: vllmModel, Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: make([]string, 2049)}}, 400, "at most 2048"},
		{"unknown model", openai.EmbeddingNewParams{Model: "nope", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("a")}}, 404, "nope"},
		// vLLM refuses more dimensions than the model has: its 400,
		// through the adapter's error_decode, in OpenAI's shape.
		{"backend 400", openai.EmbeddingNewParams{Model: vllmModel, Dimensions: openai.Int(100000), Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("a")}}, 400, "dimensions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.client.Embeddings.New(context.Background(), tc.p)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status || !strings.Contains(apiErr.Message, tc.msg) {
				t.Fatalf("error %v, want %d %q", err, tc.status, tc.msg)
			}
			if tc.status == 400 && apiErr.Type != "invalid_request_error" {
				t.Fatalf("type %q", apiErr.Type)
			}
		})
	}
	// An empty array is refused too; the SDK omits an empty input, so post it.
	status, _, v := rawPost(t, e.base+"/v1/embeddings", adminKey, `{"model":"`+vllmModel+`","input":[]}`)
	if eobj, _ := v["error"].(map[string]any); status != 400 || eobj == nil || !strings.Contains(eobj["message"].(string), "empty array") {
		t.Fatalf("empty array: %d %v", status, v)
	}
}

// chatOnly hides an adapter's embedding ops: an engine that cannot embed.
type chatOnly struct{ sdk.Adapter }

// A backend whose adapter cannot embed answers the client 400 in its
// dialect, naming the model; the other engine still embeds.
func TestOpenAISDK_EmbeddingsUnsupportedBackend(t *testing.T) {
	t.Parallel()
	registerFirstParty()
	pluginhost.RegisterNative("ollama-chat-only", func() *sdk.Plugin {
		return sdk.NewAdapter(ollama.Manifest(), chatOnly{ollama.New()})
	})
	dir := t.TempDir()
	yaml := filepath.Join(dir, "plugins.yaml")
	if err := os.WriteFile(yaml, []byte(`abi: 2
plugins:
  - {name: openai, kind: translator, path: "native:openai"}
  - {name: vllm, kind: adapter, path: "native:vllm"}
  - {name: ollama, kind: adapter, path: "native:ollama-chat-only"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	withPlugins(t, testutil.PluginSet{Dir: dir, YAML: yaml}, func() {
		e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
		in := openai.EmbeddingNewParamsInputUnion{OfString: openai.String("a")}
		_, err := e.client.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: ollamaModel, Input: in})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Type != "invalid_request_error" ||
			apiErr.Message != "model "+ollamaModel+"'s backend cannot produce embeddings" {
			t.Fatalf("error %v", err)
		}
		resp := embed(t, e, openai.EmbeddingNewParams{Model: vllmModel, Input: in})
		checkVector(t, resp.Data[0].Embedding, fakellm.DefaultEmbeddingDim)
		// Chat still works on the chat-only adapter.
		if _, err := e.client.Chat.Completions.New(context.Background(), chatParams(ollamaModel, "hi")); err != nil {
			t.Fatal(err)
		}
	})
}

// TestOpenAISDK_EmbeddingsPluginSets runs the embedding tests on every way
// of loading the first-party plugins (separate modules, the bundle, as
// WebAssembly and natively): the embedding ops are unfused calls naming
// their components, so the bundle must serve them like the separate
// modules; and checks from the plugin metrics which modules served them.
func TestOpenAISDK_EmbeddingsPluginSets(t *testing.T) {
	t.Parallel()
	for _, ps := range pluginSets(t) {
		t.Run(ps.name, func(t *testing.T) {
			t.Parallel()
			withPlugins(t, ps.set, func() {
				t.Run("String", TestOpenAISDK_EmbeddingsString)
				t.Run("Array", TestOpenAISDK_EmbeddingsArray)
				t.Run("Base64", TestOpenAISDK_EmbeddingsBase64)
				t.Run("Dimensions", TestOpenAISDK_EmbeddingsDimensions)
				t.Run("Errors", TestOpenAISDK_EmbeddingsErrors)
				t.Run("Calls", func(t *testing.T) { checkEmbedCalls(t, ps) })
			})
		})
	}
}

// checkEmbedCalls embeds on each engine and checks the plugin calls.
func checkEmbedCalls(t *testing.T, ps pluginSet) {
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	for _, model := range embedModels {
		embed(t, e, openai.EmbeddingNewParams{Model: model, Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("which path?")}})
	}
	var b strings.Builder
	e.gw.Host.WriteMetrics(&b)
	calls := map[string]float64{}
	for _, line := range strings.Split(b.String(), "\n") {
		if !strings.HasPrefix(line, "mindrouter_plugin_calls_total{") {
			continue
		}
		v, _ := metricValue(line, line[:strings.LastIndexByte(line, ' ')])
		calls[label(line, "plugin")+"/"+label(line, "op")] = v
	}
	want := map[string]float64{"openai/embed_request_decode": 2, "openai/embed_response_encode": 2,
		"vllm/embed_request_encode": 1, "vllm/embed_response_decode": 1, "ollama/embed_request_encode": 1, "ollama/embed_response_decode": 1}
	if ps.fused {
		want = map[string]float64{"firstparty/embed_request_decode": 2, "firstparty/embed_response_encode": 2,
			"firstparty/embed_request_encode": 2, "firstparty/embed_response_decode": 2}
		for _, c := range []string{"openai", "vllm", "ollama"} {
			if !strings.Contains(b.String(), `mindrouter_plugin_component_calls_total{plugin="firstparty",component="`+c+`",op="embed_`) {
				t.Errorf("no embedding call counted for component %s", c)
			}
		}
	}
	for k, n := range want {
		if calls[k] != n {
			t.Errorf("%s: %v calls, want %v (all: %v)", k, calls[k], n, calls)
		}
	}
}

func sameVector(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if float32(a[i]) != float32(b[i]) {
			return false
		}
	}
	return true
}

// BenchmarkEmbeddings measures an 8-input embedding request through the
// gateway (openai translator, .wasm adapters) on each engine, and the same
// request straight to the backend.
func BenchmarkEmbeddings(b *testing.B) {
	t := &testing.T{}
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "log: {level: warn}\n")
	_, ollamaURL := startFake(t, fakellm.Config{Engine: "ollama", Models: []string{ollamaModel}})
	inputs := `["one","two three","four five six","seven","eight nine","ten","eleven twelve","thirteen"]`
	for _, tc := range []struct{ name, model, direct, directBody string }{
		{"vllm", vllmModel, e.vllmURL + "/v1/embeddings", `{"model":"` + vllmModel + `","input":` + inputs + `}`},
		{"ollama", ollamaModel, ollamaURL + "/api/embed", `{"model":"` + ollamaModel + `","input":` + inputs + `}`},
	} {
		for _, enc := range []string{"float", "base64"} {
			body := []byte(`{"model":"` + tc.model + `","input":` + inputs + `,"encoding_format":"` + enc + `"}`)
			b.Run("gateway/"+tc.name+"/"+enc, func(b *testing.B) {
				benchPost(b, e.base+"/v1/embeddings", body, "Bearer "+adminKey)
			})
		}
		b.Run("direct/"+tc.name, func(b *testing.B) {
			benchPost(b, tc.direct, []byte(tc.directBody), "")
		})
	}
}
