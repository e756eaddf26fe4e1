package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/matrix"
)

// The official Ollama Go client (github.com/ollama/ollama/api) against the
// gateway's Ollama-API translator (plugins/ollamaapi), in front of both
// engines.

// bearer adds the gateway key to every request of the Ollama client, which
// has no key option of its own.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

func ollamaClient(t *testing.T, e *env) *api.Client {
	t.Helper()
	u, err := url.Parse(e.base)
	if err != nil {
		t.Fatal(err)
	}
	return api.NewClient(u, &http.Client{Transport: bearer{adminKey}})
}

// lastBackendBody is what the backend serving model last received on its
// chat route.
func lastBackendBody(e *env, model string) []byte {
	if model == ollamaModel {
		return e.ollama.LastBody("/api/chat")
	}
	return e.vllm.LastBody("/v1/chat/completions")
}

// chatOnce runs a chat streamed or not and returns the concatenated
// message (content, thinking and tool calls accumulated as a client does),
// the final response and the number of lines.
func chatOnce(t *testing.T, c *api.Client, req api.ChatRequest, stream bool) (api.Message, api.ChatResponse, int) {
	t.Helper()
	req.Stream = &stream
	var msg api.Message
	var last api.ChatResponse
	n := 0
	err := c.Chat(context.Background(), &req, func(r api.ChatResponse) error {
		n++
		if last.Done {
			t.Fatalf("a line after the done line: %+v", r)
		}
		msg.Content += r.Message.Content
		msg.Thinking += r.Message.Thinking
		msg.ToolCalls = append(msg.ToolCalls, r.Message.ToolCalls...)
		msg.Role = r.Message.Role
		last = r
		return nil
	})
	if err != nil {
		t.Fatalf("chat (stream %v): %v", stream, err)
	}
	if !last.Done || last.Model != req.Model || last.CreatedAt.IsZero() {
		t.Fatalf("final line: %+v", last)
	}
	return msg, last, n
}

func TestOllamaSDK_Chat(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	c := ollamaClient(t, e)
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			req := api.ChatRequest{Model: model, Messages: []api.Message{
				{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Tell me about gateways"}}}
			full, resp, n := chatOnce(t, c, req, false)
			if n != 1 || full.Role != "assistant" || full.Content == "" || resp.DoneReason != "stop" ||
				resp.PromptEvalCount == 0 || resp.EvalCount == 0 {
				t.Fatalf("non-streamed: %d lines, %+v %+v", n, full, resp.Metrics)
			}
			matrix.Mark(t, "ollama", "text", engineOf(model))

			streamed, last, n := chatOnce(t, c, req, true)
			if n < 3 || streamed.Content != full.Content {
				t.Fatalf("streamed %d lines %q, non-streamed %q", n, streamed.Content, full.Content)
			}
			if last.DoneReason != "stop" || last.EvalCount != resp.EvalCount || last.PromptEvalCount != resp.PromptEvalCount {
				t.Fatalf("final line %+v, non-streamed %+v", last.Metrics, resp.Metrics)
			}

			// Without "stream" Ollama streams: NDJSON lines.
			body := `{"model":"` + model + `","messages":[{"role":"user","content":"Tell me about gateways"}]}`
			hr, _ := http.NewRequest("POST", e.base+"/api/chat", strings.NewReader(body))
			hr.Header.Set("Authorization", "Bearer "+adminKey)
			res, err := http.DefaultClient.Do(hr)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(res.Body)
			res.Body.Close()
			lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
			if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/x-ndjson" || len(lines) < 3 ||
				!strings.Contains(lines[len(lines)-1], `"done":true`) {
				t.Fatalf("default stream: %d %q %s", res.StatusCode, res.Header.Get("Content-Type"), raw)
			}
			matrix.Mark(t, "ollama", "stream", engineOf(model))
		})
	}
}

// TestOllamaSDK_ChatOptions: options reach the backend in its own words;
// num_predict caps the answer (done_reason "length").
func TestOllamaSDK_ChatOptions(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	c := ollamaClient(t, e)
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			req := api.ChatRequest{Model: model, Messages: []api.Message{{Role: "user", Content: "long story"}},
				Options: map[string]any{"num_predict": 3, "temperature": 0.25, "top_k": 7, "repeat_penalty": 1.2, "stop": []string{"END"}}}
			_, resp, _ := chatOnce(t, c, req, false)
			if resp.DoneReason != "length" || resp.EvalCount != 3 {
				t.Fatalf("%+v %+v", resp.DoneReason, resp.Metrics)
			}
			sent := string(lastBackendBody(e, model))
			want := []string{`"max_tokens":3`, `"temperature":0.25`, `"top_k":7`, `"repetition_penalty":1.2`, `"stop":["END"]`}
			if model == ollamaModel {
				want = []string{`"num_predict":3`, `"temperature":0.25`, `"top_k":7`, `"repeat_penalty":1.2`, `"stop":["END"]`}
			}
			for _, w := range want {
				if !strings.Contains(sent, w) {
					t.Errorf("backend body lacks %s: %s", w, sent)
				}
			}
		})
	}
}

func TestOllamaSDK_Generate(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	c := ollamaClient(t, e)
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			run := func(stream bool) (string, api.GenerateResponse, int) {
				req := api.GenerateRequest{Model: model, System: "Be brief.", Prompt: "Tell me about gateways", Stream: &stream}
				var text string
				var last api.GenerateResponse
				n := 0
				err := c.Generate(context.Background(), &req, func(r api.GenerateResponse) error {
					n++
					text += r.Response
					last = r
					return nil
				})
				if err != nil {
					t.Fatalf("generate (stream %v): %v", stream, err)
				}
				if !last.Done || last.DoneReason != "stop" || last.Model != model || last.EvalCount == 0 || last.PromptEvalCount == 0 {
					t.Fatalf("final line %+v", last)
				}
				return text, last, n
			}
			full, resp, n := run(false)
			if n != 1 || full == "" {
				t.Fatalf("non-streamed: %d lines %q", n, full)
			}
			var sent struct {
				Messages []struct{ Role string } `json:"messages"`
			}
			if err := json.Unmarshal(lastBackendBody(e, model), &sent); err != nil || len(sent.Messages) != 2 ||
				sent.Messages[0].Role != "system" || sent.Messages[1].Role != "user" {
				t.Fatalf("backend got %s (%v)", lastBackendBody(e, model), err)
			}
			streamed, last, n := run(true)
			if n < 3 || streamed != full || last.EvalCount != resp.EvalCount {
				t.Fatalf("streamed %d lines %q (%d tokens), non-streamed %q (%d)", n, streamed, last.EvalCount, full, resp.EvalCount)
			}
		})
	}
}

func weatherToolOllama() api.Tool {
	props := api.NewToolPropertiesMap()
	props.Set("city", api.ToolProperty{Type: api.PropertyType{"string"}, Description: "the city"})
	return api.Tool{Type: "function", Function: api.ToolFunction{
		Name: "get_weather", Description: "Weather for a city",
		Parameters: api.ToolFunctionParameters{Type: "object", Required: []string{"city"}, Properties: props},
	}}
}

// TestOllamaSDK_Tools: a tool call comes back whole with dict arguments,
// streamed or not; the assistant's call and the tool's result sent back
// (the result naming its tool, as Ollama clients do, with no call id)
// reach each engine tied together.
func TestOllamaSDK_Tools(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	c := ollamaClient(t, e)
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			req := api.ChatRequest{Model: model, Tools: api.Tools{weatherToolOllama()},
				Messages: []api.Message{{Role: "user", Content: "Weather in Paris?"}}}
			for _, stream := range []bool{false, true} {
				msg, resp, _ := chatOnce(t, c, req, stream)
				if len(msg.ToolCalls) != 1 || resp.DoneReason != "stop" {
					t.Fatalf("stream %v: %+v done %q", stream, msg, resp.DoneReason)
				}
				call := msg.ToolCalls[0]
				if city, ok := call.Function.Arguments.Get("city"); call.Function.Name != "get_weather" || !ok || city == "" {
					t.Fatalf("stream %v: call %+v args %s", stream, call, call.Function.Arguments.String())
				}
				feature := "tools"
				if stream {
					feature = "streamed-tools"
				}
				matrix.Mark(t, "ollama", feature, engineOf(model))
			}

			msg, _, _ := chatOnce(t, c, req, false)
			call := msg.ToolCalls[0]
			call.ID = "" // many Ollama clients do not echo ids
			req.Messages = append(req.Messages,
				api.Message{Role: "assistant", ToolCalls: []api.ToolCall{call}},
				api.Message{Role: "tool", ToolName: "get_weather", Content: `{"temp_c":21}`})
			if _, resp, _ := chatOnce(t, c, req, false); resp.EvalCount == 0 {
				t.Fatalf("after the tool result: %+v", resp)
			}
			sent := string(lastBackendBody(e, model))
			if !strings.Contains(sent, `temp_c`) || !strings.Contains(sent, `"get_weather"`) {
				t.Fatalf("backend did not get the call and its result: %s", sent)
			}
			// The made-up id of the call (message 1, call 0) is the one the
			// result answers.
			if model == vllmModel && (!strings.Contains(sent, `"id":"call_1_0"`) || !strings.Contains(sent, `"tool_call_id":"call_1_0"`)) {
				t.Fatalf("vLLM body does not tie the result to its call: %s", sent)
			}
			if model == ollamaModel && !strings.Contains(sent, `"tool_name":"get_weather"`) {
				t.Fatalf("Ollama body lacks the tool name: %s", sent)
			}
		})
	}
}

// ollamaThinker is a thinking model on the Ollama engine (fakellm thinks
// for names with qwen3, deepseek-r1 or gpt-oss).
const ollamaThinker = "deepseek-r1:8b"

func TestOllamaSDK_Thinking(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{Models: []string{ollamaModel, ollamaThinker}}, "")
	c := ollamaClient(t, e)
	for _, model := range []string{vllmModel, ollamaThinker} {
		t.Run(model, func(t *testing.T) {
			on := api.ChatRequest{Model: model, Think: &api.ThinkValue{Value: true},
				Messages: []api.Message{{Role: "user", Content: "how many r in strawberry?"}}}
			full, _, _ := chatOnce(t, c, on, false)
			streamed, _, _ := chatOnce(t, c, on, true)
			if full.Thinking == "" || full.Content == "" || streamed.Thinking != full.Thinking || streamed.Content != full.Content {
				t.Fatalf("thinking on: %+v, streamed %+v", full, streamed)
			}
			off := on
			off.Think = &api.ThinkValue{Value: false}
			if m, _, _ := chatOnce(t, c, off, false); m.Thinking != "" || m.Content == "" {
				t.Fatalf("thinking off: %+v", m)
			}
			level := on
			level.Think = &api.ThinkValue{Value: "high"}
			if m, _, _ := chatOnce(t, c, level, false); m.Thinking == "" {
				t.Fatalf("think high: %+v", m)
			}
			matrix.Mark(t, "ollama", "thinking", matrix.Engine(model == ollamaThinker))
		})
	}
}

func TestOllamaSDK_FormatSchema(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	c := ollamaClient(t, e)
	schema := json.RawMessage(`{"type":"object","properties":{"age":{"type":"integer"},"available":{"type":"boolean"}},"required":["age","available"]}`)
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			req := api.ChatRequest{Model: model, Format: schema,
				Messages: []api.Message{{Role: "user", Content: "Ollama is 22 years old and busy saving the world."}}}
			for _, stream := range []bool{false, true} {
				msg, _, _ := chatOnce(t, c, req, stream)
				var got struct {
					Age       *int  `json:"age"`
					Available *bool `json:"available"`
				}
				if err := json.Unmarshal([]byte(msg.Content), &got); err != nil || got.Age == nil || got.Available == nil {
					t.Fatalf("stream %v: content %q: %v", stream, msg.Content, err)
				}
			}
			sent := string(lastBackendBody(e, model))
			if model == vllmModel && !strings.Contains(sent, `"json_schema"`) || model == ollamaModel && !strings.Contains(sent, `"format":{`) {
				t.Fatalf("backend body lacks the schema: %s", sent)
			}
			matrix.Mark(t, "ollama", "json-schema", engineOf(model))
		})
	}
}

func TestOllamaSDK_Images(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	c := ollamaClient(t, e)
	png, err := base64.StdEncoding.DecodeString(onePixelPNG)
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			req := api.ChatRequest{Model: model, Messages: []api.Message{
				{Role: "user", Content: "What is in this picture?", Images: []api.ImageData{png}}}}
			if msg, _, _ := chatOnce(t, c, req, false); msg.Content == "" {
				t.Fatalf("%+v", msg)
			}
			sent := string(lastBackendBody(e, model))
			want := `"url":"data:image/png;base64,` + onePixelPNG + `"`
			if model == ollamaModel {
				want = `"images":["` + onePixelPNG + `"]`
			}
			if !strings.Contains(sent, want) {
				t.Fatalf("backend body lacks %s: %s", want, sent)
			}
			matrix.Mark(t, "ollama", "images", engineOf(model))
		})
	}
}

func TestOllamaSDK_List(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	c := ollamaClient(t, e)
	list, err := c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]api.ListModelResponse{}
	for _, m := range list.Models {
		got[m.Name] = m
		if m.Model != m.Name || len(m.Digest) != 64 {
			t.Errorf("entry %+v", m)
		}
	}
	if _, ok := got[vllmModel]; !ok {
		t.Fatalf("models %v", got)
	}
	if m, ok := got[ollamaModel]; !ok || m.Size == 0 || m.Details.Family == "" {
		t.Fatalf("Ollama-served model %+v (%v)", m, ok)
	}

	// vLLM serves its models from GPU memory: they are running.
	ps, err := c.ListRunning(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	running := map[string]api.ProcessModelResponse{}
	for _, m := range ps.Models {
		running[m.Name] = m
	}
	if m, ok := running[vllmModel]; !ok || m.ContextLength == 0 || !m.ExpiresAt.IsZero() {
		t.Fatalf("running %+v", ps.Models)
	}
}

func TestOllamaSDK_Show(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	c := ollamaClient(t, e)
	for _, model := range []string{vllmModel, ollamaModel} {
		show, err := c.Show(context.Background(), &api.ShowRequest{Model: model})
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		var caps []string
		for _, cp := range show.Capabilities {
			caps = append(caps, string(cp))
		}
		if !strings.Contains(strings.Join(caps, ","), "completion") {
			t.Errorf("%s: capabilities %v", model, caps)
		}
		// vLLM reports its context window (discovery: /v1/models); an
		// Ollama backend reports it for loaded models only (/api/ps), and
		// its family instead (/api/tags).
		ctxLen := false
		for k, v := range show.ModelInfo {
			if strings.HasSuffix(k, ".context_length") && v.(float64) > 0 {
				ctxLen = true
			}
		}
		if model == vllmModel && !ctxLen || model == ollamaModel && (show.ModelInfo["general.architecture"] != "llama" || show.Details.Family != "llama") {
			t.Errorf("%s: details %+v model_info %v", model, show.Details, show.ModelInfo)
		}
	}
	_, err := c.Show(context.Background(), &api.ShowRequest{Model: "nope"})
	var se api.StatusError
	if !errors.As(err, &se) || se.StatusCode != 404 {
		t.Fatalf("unknown model: %v", err)
	}
}

func TestOllamaSDK_Version(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	v, err := ollamaClient(t, e).Version(context.Background())
	if err != nil || v != "0.17.4" {
		t.Fatalf("version %q: %v", v, err)
	}
}

// TestOllamaSDK_Errors: the client raises the gateway's errors as
// api.StatusError with the status and message.
func TestOllamaSDK_Errors(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	c := ollamaClient(t, e)
	hi := []api.Message{{Role: "user", Content: "hi"}}
	for _, stream := range []bool{false, true} {
		err := c.Chat(context.Background(), &api.ChatRequest{Model: "nope", Messages: hi, Stream: &stream}, func(api.ChatResponse) error { return nil })
		var se api.StatusError
		if !errors.As(err, &se) || se.StatusCode != 404 || se.ErrorMessage == "" {
			t.Fatalf("unknown model (stream %v): %v", stream, err)
		}
	}
	for _, model := range []string{vllmModel, ollamaModel} {
		for _, tc := range []struct {
			name string
			run  func() error
			want string
		}{
			{"raw with images", func() error {
				return c.Generate(context.Background(), &api.GenerateRequest{Model: model, Prompt: "x", Raw: true,
					Images: []api.ImageData{api.ImageData(mustBase64(onePixelPNG))}},
					func(api.GenerateResponse) error { return nil })
			}, "images are not supported with raw"},
			{"options", func() error {
				return c.Chat(context.Background(), &api.ChatRequest{Model: model, Messages: hi, Options: map[string]any{"temperature": "hot"}},
					func(api.ChatResponse) error { return nil })
			}, "options.temperature must be a number"},
			{"think", func() error {
				return c.Chat(context.Background(), &api.ChatRequest{Model: model, Messages: hi, Think: &api.ThinkValue{Value: "max"}},
					func(api.ChatResponse) error { return nil })
			}, "invalid think value"},
		} {
			err := tc.run()
			var se api.StatusError
			if !errors.As(err, &se) || se.StatusCode != 400 || !strings.Contains(se.ErrorMessage, tc.want) {
				t.Fatalf("%s %s: %v", model, tc.name, err)
			}
		}
		matrix.Mark(t, "ollama", "errors", engineOf(model))
	}
}

// TestOllamaSDK_StreamCut: a backend that drops the stream midway ends the
// client's stream with an error line, after the lines already sent.
func TestOllamaSDK_StreamCut(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{DropRate: 1, Tokens: 40}, fakellm.Config{DropRate: 1, Tokens: 40}, "")
	c := ollamaClient(t, e)
	for _, model := range []string{vllmModel, ollamaModel} {
		n := 0
		err := c.Chat(context.Background(), &api.ChatRequest{Model: model, Messages: []api.Message{{Role: "user", Content: "hi"}}},
			func(r api.ChatResponse) error {
				if r.Done {
					t.Fatalf("%s: a cut stream reported done", model)
				}
				n++
				return nil
			})
		if err == nil || n == 0 {
			t.Fatalf("%s: %d lines, error %v", model, n, err)
		}
	}
}

// TestOllamaSDK_Embed: /api/embed and the older /api/embeddings through
// the official client, on both engines.
func TestOllamaSDK_Embed(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{EmbeddingDim: 16}, fakellm.Config{EmbeddingDim: 16}, "")
	c := ollamaClient(t, e)
	ctx := context.Background()
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			resp, err := c.Embed(ctx, &api.EmbedRequest{Model: model, Input: []string{"Why is the sky blue?", "Why is the grass green?"}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Model != model || len(resp.Embeddings) != 2 || len(resp.Embeddings[0]) != 16 || resp.PromptEvalCount == 0 {
				t.Fatalf("embed: model %q, %d vectors, %d tokens", resp.Model, len(resp.Embeddings), resp.PromptEvalCount)
			}
			one, err := c.Embed(ctx, &api.EmbedRequest{Model: model, Input: "Why is the sky blue?"})
			if err != nil || len(one.Embeddings) != 1 {
				t.Fatalf("one input: %+v %v", one, err)
			}
			for i := range one.Embeddings[0] {
				if one.Embeddings[0][i] != resp.Embeddings[0][i] {
					t.Fatalf("the same input gave different vectors: %v vs %v", one.Embeddings[0], resp.Embeddings[0])
				}
			}
			old, err := c.Embeddings(ctx, &api.EmbeddingRequest{Model: model, Prompt: "Why is the sky blue?"})
			if err != nil || len(old.Embedding) != 16 {
				t.Fatalf("embeddings: %+v %v", old, err)
			}
			for i := range old.Embedding {
				if float32(old.Embedding[i]) != resp.Embeddings[0][i] {
					t.Fatalf("/api/embeddings %v, /api/embed %v", old.Embedding, resp.Embeddings[0])
				}
			}
			_, err = c.Embed(ctx, &api.EmbedRequest{Model: model, Input: []string{}})
			var se api.StatusError
			if !errors.As(err, &se) || se.StatusCode != 400 {
				t.Fatalf("empty input: %v", err)
			}
			matrix.Mark(t, "ollama", "embeddings", engineOf(model))
		})
	}
}

func mustBase64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}
