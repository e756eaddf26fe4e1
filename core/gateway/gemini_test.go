package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/matrix"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

// The official Google Gen AI Go SDK (google.golang.org/genai), unchanged,
// against the Gemini translator (plugins/gemini, a module of its own) in
// front of the vLLM-flavoured and the Ollama-flavoured fakellm. The SDK
// sends its key in x-goog-api-key and model names in the path, unescaped:
// /v1beta/models/llama3.2:3b:generateContent.

// queryKey moves the SDK's x-goog-api-key into ?key=, as Google's REST
// examples and older clients send it.
type queryKey struct{}

func (queryKey) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	k := r.Header.Get("x-goog-api-key")
	r.Header.Del("x-goog-api-key")
	q := r.URL.Query()
	q.Set("key", k)
	r.URL.RawQuery = q.Encode()
	return http.DefaultTransport.RoundTrip(r)
}

func geminiClient(t *testing.T, e *env, inQuery bool) *genai.Client {
	t.Helper()
	cfg := &genai.ClientConfig{APIKey: adminKey, Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: e.base + "/"}}
	if inQuery {
		cfg.HTTPClient = &http.Client{Transport: queryKey{}}
	}
	c, err := genai.NewClient(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func geminiConfig() *genai.GenerateContentConfig {
	return &genai.GenerateContentConfig{SystemInstruction: genai.NewContentFromText("Be brief.", genai.RoleUser),
		MaxOutputTokens: 128, Temperature: genai.Ptr[float32](0.2)}
}

// Text and stream on both engines, with the key in the header and in the
// query: the same text either way, usage and a finish reason.
func TestGeminiSDK_GenerateAndStream(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	ctx := context.Background()
	for _, model := range []string{vllmModel, ollamaModel} {
		for _, inQuery := range []bool{false, true} {
			name := model + "/header"
			if inQuery {
				name = model + "/query"
			}
			t.Run(name, func(t *testing.T) {
				c := geminiClient(t, e, inQuery)
				resp, err := c.Models.GenerateContent(ctx, model, genai.Text("Tell me about gateways"), geminiConfig())
				if err != nil {
					t.Fatal(err)
				}
				if resp.Text() == "" || len(resp.Candidates) != 1 || resp.Candidates[0].FinishReason != genai.FinishReasonStop {
					t.Fatalf("response %+v", resp)
				}
				if u := resp.UsageMetadata; u == nil || u.PromptTokenCount == 0 || u.CandidatesTokenCount == 0 ||
					u.TotalTokenCount != u.PromptTokenCount+u.CandidatesTokenCount {
					t.Fatalf("usage %+v", resp.UsageMetadata)
				}
				if resp.ModelVersion != model {
					t.Fatalf("model version %q", resp.ModelVersion)
				}
				sent := string(lastBackendBody(e, model))
				if !strings.Contains(sent, "Be brief.") || !strings.Contains(sent, "Tell me about gateways") {
					t.Fatalf("backend got %s", sent)
				}
				matrix.Mark(t, "gemini", "text", engineOf(model))

				var text strings.Builder
				var last *genai.GenerateContentResponse
				n := 0
				for r, err := range c.Models.GenerateContentStream(ctx, model, genai.Text("Tell me about gateways"), geminiConfig()) {
					if err != nil {
						t.Fatal(err)
					}
					text.WriteString(r.Text())
					last, n = r, n+1
				}
				if n < 2 || text.String() != resp.Text() {
					t.Fatalf("%d events, text %q, want %q", n, text.String(), resp.Text())
				}
				if last.UsageMetadata == nil || last.UsageMetadata.TotalTokenCount == 0 {
					t.Fatalf("last event %+v", last)
				}
				matrix.Mark(t, "gemini", "stream", engineOf(model))
			})
		}
	}
}

// Without alt=sse a stream is one JSON array of responses.
func TestGeminiRaw_StreamJSONArray(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	req, _ := http.NewRequest("POST", e.base+"/v1beta/models/"+ollamaModel+":streamGenerateContent",
		strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"Tell me about gateways"}]}]}`))
	req.Header.Set("x-goog-api-key", adminKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var events []struct {
		Candidates []struct {
			Content struct {
				Parts []struct{ Text string } `json:"parts"`
			} `json:"content"`
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s: %s", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	if err := json.Unmarshal(body, &events); err != nil || len(events) < 2 {
		t.Fatalf("%v: %s", err, body)
	}
}

var geminiWeather = &genai.Tool{FunctionDeclarations: []*genai.FunctionDeclaration{{
	Name: "get_weather", Description: "The weather in a city",
	Parameters: &genai.Schema{Type: genai.TypeObject, Required: []string{"city"},
		Properties: map[string]*genai.Schema{"city": {Type: genai.TypeString}}},
}}}

// A function call and its response, round trip, plain and streamed.
func TestGeminiSDK_FunctionCalling(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	c := geminiClient(t, e, false)
	ctx := context.Background()
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			cfg := geminiConfig()
			cfg.Tools = []*genai.Tool{geminiWeather}
			cfg.ToolConfig = &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeAuto}}
			contents := genai.Text("Weather in Paris?")
			resp, err := c.Models.GenerateContent(ctx, model, contents, cfg)
			if err != nil {
				t.Fatal(err)
			}
			calls := resp.FunctionCalls()
			if len(calls) != 1 || calls[0].Name != "get_weather" || calls[0].Args["city"] == nil {
				t.Fatalf("calls %+v in %+v", calls, resp.Candidates[0].Content)
			}
			contents = append(contents, resp.Candidates[0].Content,
				genai.NewContentFromFunctionResponse("get_weather", map[string]any{"temp_c": 21}, genai.RoleUser))
			final, err := c.Models.GenerateContent(ctx, model, contents, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(final.Candidates) != 1 || final.Candidates[0].FinishReason == "" {
				t.Fatalf("final %+v", final)
			}
			sent := string(lastBackendBody(e, model))
			if !strings.Contains(sent, `"get_weather"`) || !strings.Contains(sent, "temp_c") {
				t.Fatalf("backend did not get the call and its result: %s", sent)
			}
			matrix.Mark(t, "gemini", "tools", engineOf(model))

			var streamed []*genai.FunctionCall
			for r, err := range c.Models.GenerateContentStream(ctx, model, genai.Text("Weather in Paris?"), cfg) {
				if err != nil {
					t.Fatal(err)
				}
				streamed = append(streamed, r.FunctionCalls()...)
			}
			if len(streamed) != 1 || streamed[0].Name != "get_weather" || streamed[0].Args["city"] != calls[0].Args["city"] {
				t.Fatalf("streamed calls %+v, plain %+v", streamed, calls)
			}
			matrix.Mark(t, "gemini", "streamed-tools", engineOf(model))
		})
	}
}

// responseSchema (Gemini's OpenAPI subset) and responseJsonSchema reach
// the backend as a JSON schema; the answer parses.
func TestGeminiSDK_JSONSchema(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	c := geminiClient(t, e, false)
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			cfg := geminiConfig()
			cfg.ResponseMIMEType = "application/json"
			cfg.ResponseSchema = &genai.Schema{Type: genai.TypeObject, Required: []string{"name"},
				Properties: map[string]*genai.Schema{"name": {Type: genai.TypeString}}}
			resp, err := c.Models.GenerateContent(context.Background(), model, genai.Text("Extract the name: John Smith wrote this."), cfg)
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal([]byte(resp.Text()), &doc); err != nil || doc["name"] == nil {
				t.Fatalf("text %q: %v", resp.Text(), err)
			}
			sent := string(lastBackendBody(e, model))
			if !strings.Contains(sent, `"type":"object"`) || strings.Contains(sent, `"OBJECT"`) {
				t.Fatalf("backend got %s", sent)
			}
			cfg.ResponseSchema = nil
			cfg.ResponseJsonSchema = map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []string{"name"}}
			resp, err = c.Models.GenerateContent(context.Background(), model, genai.Text("Extract the name: John Smith wrote this."), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(resp.Text()), &doc); err != nil || doc["name"] == nil {
				t.Fatalf("json schema text %q: %v", resp.Text(), err)
			}
			matrix.Mark(t, "gemini", "json-schema", engineOf(model))
		})
	}
}

// An inlineData image reaches both engines inline.
func TestGeminiSDK_Images(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	c := geminiClient(t, e, false)
	png, _ := base64.StdEncoding.DecodeString(onePixelPNG)
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			contents := []*genai.Content{genai.NewContentFromParts([]*genai.Part{
				genai.NewPartFromBytes(png, "image/png"), genai.NewPartFromText("What is in this picture?")}, genai.RoleUser)}
			resp, err := c.Models.GenerateContent(context.Background(), model, contents, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text() == "" {
				t.Fatalf("response %+v", resp)
			}
			if sent := string(lastBackendBody(e, model)); !strings.Contains(sent, onePixelPNG) {
				t.Fatalf("backend got %s", sent)
			}
			matrix.Mark(t, "gemini", "images", engineOf(model))
		})
	}
}

// Embeddings (the Go SDK's EmbedContent is batchEmbedContents), single
// and batch, token counts and the model list and one model.
func TestGeminiSDK_EmbedCountModels(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	c := geminiClient(t, e, true)
	ctx := context.Background()
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			one, err := c.Models.EmbedContent(ctx, model, genai.Text("hello"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(one.Embeddings) != 1 || len(one.Embeddings[0].Values) != fakellm.DefaultEmbeddingDim {
				t.Fatalf("embeddings %+v", one)
			}
			batch, err := c.Models.EmbedContent(ctx, model, []*genai.Content{
				genai.NewContentFromText("a", genai.RoleUser), genai.NewContentFromText("b", genai.RoleUser),
				genai.NewContentFromText("c", genai.RoleUser)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(batch.Embeddings) != 3 {
				t.Fatalf("batch %d embeddings", len(batch.Embeddings))
			}
			matrix.Mark(t, "gemini", "embeddings", engineOf(model))

			count, err := c.Models.CountTokens(ctx, model, genai.Text("Tell me about gateways"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if count.TotalTokens < 3 {
				t.Fatalf("count %+v", count)
			}
			m, err := c.Models.Get(ctx, model, nil)
			if err != nil {
				t.Fatal(err)
			}
			if m.Name != "models/"+model {
				t.Fatalf("model %+v", m)
			}
		})
	}
	// embedContent itself (the REST route other clients use).
	req, _ := http.NewRequest("POST", e.base+"/v1beta/models/"+vllmModel+":embedContent?key="+adminKey,
		strings.NewReader(`{"content":{"parts":[{"text":"hello"}]}}`))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var one struct {
		Embedding struct{ Values []float32 } `json:"embedding"`
	}
	err = json.NewDecoder(res.Body).Decode(&one)
	res.Body.Close()
	if err != nil || res.StatusCode != 200 || len(one.Embedding.Values) != fakellm.DefaultEmbeddingDim {
		t.Fatalf("embedContent: %d %v %d values", res.StatusCode, err, len(one.Embedding.Values))
	}
	var names []string
	for m, err := range c.Models.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, m.Name)
	}
	if strings.Join(names, ",") != "models/"+vllmModel+",models/"+ollamaModel && strings.Join(names, ",") != "models/"+ollamaModel+",models/"+vllmModel {
		t.Fatalf("models %v", names)
	}
}

// Errors in Google's shape: an unknown model 404 NOT_FOUND, a bad key 401
// UNAUTHENTICATED, an empty request 400 INVALID_ARGUMENT; GET /v1/models
// with a Google key is Gemini's list, without it OpenAI's.
func TestGeminiSDK_Errors(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	ctx := context.Background()
	c := geminiClient(t, e, false)
	var apiErr genai.APIError
	_, err := c.Models.GenerateContent(ctx, "no-such-model", genai.Text("hi"), nil)
	if !errors.As(err, &apiErr) || apiErr.Code != 404 || apiErr.Status != "NOT_FOUND" || !strings.Contains(apiErr.Message, "no-such-model") {
		t.Fatalf("unknown model: %v", err)
	}
	_, err = c.Models.GenerateContent(ctx, vllmModel, nil, nil)
	if !errors.As(err, &apiErr) || apiErr.Code != 400 || apiErr.Status != "INVALID_ARGUMENT" {
		t.Fatalf("no contents: %v", err)
	}
	bad, _ := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "mr2_not_a_key_at_all_0000000000", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: e.base + "/"}})
	_, err = bad.Models.GenerateContent(ctx, vllmModel, genai.Text("hi"), nil)
	if !errors.As(err, &apiErr) || apiErr.Code != 401 || apiErr.Status != "UNAUTHENTICATED" {
		t.Fatalf("bad key: %v", err)
	}
	matrix.Mark(t, "gemini", "errors", "vllm")
	matrix.Mark(t, "gemini", "errors", "ollama")

	for _, tc := range []struct{ hdr, want string }{{"x-goog-api-key", `"models":[`}, {"Authorization", `"object":"list"`}} {
		req, _ := http.NewRequest("GET", e.base+"/v1/models", nil)
		v := adminKey
		if tc.hdr == "Authorization" {
			v = "Bearer " + adminKey
		}
		req.Header.Set(tc.hdr, v)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(body), tc.want) {
			t.Fatalf("GET /v1/models with %s: %d %s", tc.hdr, res.StatusCode, body)
		}
	}
	// GET /v1/models/{id} is Gemini's models.get only with a Google key
	// (OpenAI's clients use the path too): without one, no route.
	req, _ := http.NewRequest("GET", e.base+"/v1/models/"+vllmModel, nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 404 {
		t.Fatalf("GET /v1/models/{id} without a Google key: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	// Two different keys are refused, before any body is read.
	req, _ = http.NewRequest("POST", e.base+"/v1beta/models/"+vllmModel+":generateContent?key=mr2_other_key_0000000000000000",
		strings.NewReader(`{"contents":[{"parts":[{"text":"hi"}]}]}`))
	req.Header.Set("x-goog-api-key", adminKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 400 || !strings.Contains(string(body), `"status":"INVALID_ARGUMENT"`) {
		t.Fatalf("two keys: %d %s", res.StatusCode, body)
	}
}

// No log line and no audit row of the run carries the key, which the
// Gemini tests send in x-goog-api-key and in ?key=.
func TestGemini_KeyNeverRecorded(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	ctx := context.Background()
	for _, inQuery := range []bool{false, true} {
		c := geminiClient(t, e, inQuery)
		if _, err := c.Models.GenerateContent(ctx, vllmModel, genai.Text("hi"), nil); err != nil {
			t.Fatal(err)
		}
		for _, err := range c.Models.GenerateContentStream(ctx, ollamaModel, genai.Text("hi"), nil) {
			if err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Models.GenerateContent(ctx, "no-such-model", genai.Text("hi"), nil); err == nil {
			t.Fatal("unknown model served")
		}
	}
	var res struct {
		Total   int               `json:"total"`
		Records []json.RawMessage `json:"records"`
	}
	testutil.WaitFor(t, "the run's audit rows", 15*time.Second, func() bool {
		callAPI(t, e.base, adminKey, "GET", "/api/admin/audit/search?limit=1000", nil, &res)
		return res.Total >= 6
	})
	for _, r := range res.Records {
		var rec auditRecord
		_ = json.Unmarshal(r, &rec)
		if strings.Contains(string(r), adminKey) || strings.Contains(string(r), adminKey[4:]) {
			t.Fatalf("audit row carries the key: %s", r)
		}
		if rec.RequestID != "" {
			var full json.RawMessage
			callAPI(t, e.base, adminKey, "GET", "/api/admin/audit/"+rec.RequestID, nil, &full)
			if strings.Contains(string(full), adminKey[4:]) {
				t.Fatalf("audit record carries the key: %s", full)
			}
		}
	}
	if leaks, scanned := runLogs.Leaks(); len(leaks) > 0 || scanned == 0 {
		t.Fatalf("%d of %d log lines carry the key: %v", len(leaks), scanned, leaks)
	}
}

// thinkingConfig asks for thinking; thought parts come back, plain and
// streamed, go back to the backend as reasoning, and a budget of 0 turns
// thinking off.
func TestGeminiSDK_Thinking(t *testing.T) {
	t.Parallel()
	const ollamaThinker = "qwen3:4b"
	e := startEnv(t, fakellm.Config{}, fakellm.Config{Models: []string{ollamaThinker}}, "")
	c := geminiClient(t, e, false)
	ctx := context.Background()
	split := func(parts []*genai.Part) (thought, text string) {
		for _, p := range parts {
			if p.Thought {
				thought += p.Text
			} else {
				text += p.Text
			}
		}
		return thought, text
	}
	for _, model := range []string{vllmModel, ollamaThinker} {
		t.Run(model, func(t *testing.T) {
			cfg := &genai.GenerateContentConfig{MaxOutputTokens: 2048,
				ThinkingConfig: &genai.ThinkingConfig{IncludeThoughts: true, ThinkingBudget: genai.Ptr[int32](1024)}}
			resp, err := c.Models.GenerateContent(ctx, model, genai.Text("Why is the sky blue?"), cfg)
			if err != nil {
				t.Fatal(err)
			}
			thought, text := split(resp.Candidates[0].Content.Parts)
			if thought == "" || text == "" || !resp.Candidates[0].Content.Parts[0].Thought || resp.Text() != text {
				t.Fatalf("parts %+v", resp.Candidates[0].Content.Parts)
			}
			var sthought, stext string
			for r, err := range c.Models.GenerateContentStream(ctx, model, genai.Text("Why is the sky blue?"), cfg) {
				if err != nil {
					t.Fatal(err)
				}
				for _, cand := range r.Candidates {
					if cand.Content != nil {
						a, b := split(cand.Content.Parts)
						sthought, stext = sthought+a, stext+b
					}
				}
			}
			if sthought != thought || stext != text {
				t.Fatalf("streamed %q / %q, plain %q / %q", sthought, stext, thought, text)
			}
			history := append(genai.Text("Why is the sky blue?"), resp.Candidates[0].Content, genai.NewContentFromText("And at sunset?", genai.RoleUser))
			if _, err := c.Models.GenerateContent(ctx, model, history, cfg); err != nil {
				t.Fatal(err)
			}
			sent := e.vllm.LastBody("/v1/chat/completions")
			if model == ollamaThinker {
				sent = e.ollama.LastBody("/api/chat")
			}
			if !strings.Contains(string(sent), thought) {
				t.Fatalf("backend did not get the reasoning %q: %s", thought, sent)
			}
			cfg.ThinkingConfig = &genai.ThinkingConfig{ThinkingBudget: genai.Ptr[int32](0)}
			off, err := c.Models.GenerateContent(ctx, model, genai.Text("Why is the sky blue?"), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if thought, text := split(off.Candidates[0].Content.Parts); thought != "" || text == "" {
				t.Fatalf("thinking off: %+v", off.Candidates[0].Content.Parts)
			}
			matrix.Mark(t, "gemini", "thinking", matrix.Engine(model == ollamaThinker))
		})
	}
}
