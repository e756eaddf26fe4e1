package gemini_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mindrouter/mindrouter/plugins/gemini"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/sdktest"
)

func harness(t *testing.T) *sdktest.Harness {
	return sdktest.New(t, sdk.NewTranslator(gemini.Manifest(), gemini.New()))
}

func route(name string) sdktest.Option {
	return sdktest.Meta(abi.MetaRoute, name, abi.MetaCapturePrefix+"model", "openai/gpt-oss-120b")
}

const fullRequest = `{
  "systemInstruction": {"parts": [{"text": "Be brief."}]},
  "contents": [
    {"role": "user", "parts": [{"text": "What is this?"}, {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}]},
    {"role": "model", "parts": [{"text": "thinking...", "thought": true}, {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]},
    {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"temp_c": 21}}}]}
  ],
  "tools": [{"functionDeclarations": [{"name": "get_weather", "description": "Weather",
    "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING", "nullable": true}}, "required": ["city"], "propertyOrdering": ["city"]}}]}],
  "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}},
  "generationConfig": {"temperature": 0.5, "topP": 0.9, "topK": 40, "candidateCount": 2, "maxOutputTokens": 64,
    "stopSequences": ["END"], "responseMimeType": "application/json",
    "responseSchema": {"type": "OBJECT", "properties": {"type": {"type": "STRING"}}},
    "thinkingConfig": {"thinkingBudget": 512, "includeThoughts": true}}
}`

func TestDecodeRequest(t *testing.T) {
	req := harness(t).DecodeRequest([]byte(fullRequest), route("generate"))
	if req.Model != "openai/gpt-oss-120b" || req.Stream || req.MaxTokens != 64 || req.N != 2 || *req.TopK != 40 ||
		*req.Temperature != 0.5 || req.Think != canon.ThinkOn || req.ThinkBudget != 512 || !req.ThinkOptional {
		t.Fatalf("request %+v", req)
	}
	if len(req.Messages) != 4 {
		t.Fatalf("messages %+v", req.Messages)
	}
	sys, user, model, tool := req.Messages[0], req.Messages[1], req.Messages[2], req.Messages[3]
	if sys.Role != canon.RoleSystem || sys.Content[0].Text != "Be brief." ||
		user.Content[1].Type != canon.PartImage || user.Content[1].MediaType != "image/png" || user.Content[1].Data != "AAAA" {
		t.Fatalf("system %+v user %+v", sys, user)
	}
	if model.Role != canon.RoleAssistant || model.Reasoning != "thinking..." || len(model.ToolCalls) != 1 ||
		model.ToolCalls[0].Arguments != `{"city":"Paris"}` {
		t.Fatalf("model %+v", model)
	}
	if tool.Role != canon.RoleTool || tool.ToolCallID != model.ToolCalls[0].ID || tool.Content[0].Text != `{"temp_c":21}` {
		t.Fatalf("tool %+v (call id %q)", tool, model.ToolCalls[0].ID)
	}
	if req.ToolChoice == nil || req.ToolChoice.Mode != canon.ToolChoiceFunction || req.ToolChoice.Name != "get_weather" {
		t.Fatalf("tool choice %+v", req.ToolChoice)
	}
	var params, schema any
	_ = json.Unmarshal(req.Tools[0].Parameters, &params)
	_ = json.Unmarshal(req.ResponseFormat.Schema, &schema)
	wantParams := map[string]any{"type": "object", "required": []any{"city"},
		"properties": map[string]any{"city": map[string]any{"type": []any{"string", "null"}}}}
	wantSchema := map[string]any{"type": "object", "properties": map[string]any{"type": map[string]any{"type": "string"}}}
	if d := cmp.Diff(wantParams, params) + cmp.Diff(wantSchema, schema); d != "" {
		t.Fatalf("schemas (-want +got):\n%s", d)
	}
	if req.ResponseFormat.Type != canon.FormatJSONSchema {
		t.Fatalf("format %+v", req.ResponseFormat)
	}
	// The stream routes stream; countTokens reads generateContentRequest.
	if r := harness(t).DecodeRequest([]byte(`{"contents":[{"parts":[{"text":"hi"}]}]}`), route("stream-sse")); !r.Stream || !r.IncludeUsage {
		t.Fatalf("stream %+v", r)
	}
	if r := harness(t).DecodeRequest([]byte(`{"generateContentRequest":{"contents":[{"parts":[{"text":"hi"}]}]}}`), route("count")); len(r.Messages) != 1 {
		t.Fatalf("count %+v", r)
	}
}

func TestDecodeRequest_Errors(t *testing.T) {
	h := harness(t)
	for body, want := range map[string]string{
		`{"contents":[]}`: "contents: must not be empty",
		`{"contents":[{"role":"robot","parts":[{"text":"x"}]}]}`:                                              `contents[0].role: must be "user" or "model"`,
		`{"contents":[{"parts":[{"video":{}}]}]}`:                                                             "contents[0].parts[0]: unsupported part",
		`{"contents":[{"parts":[{"inlineData":{"mimeType":"audio/wav","data":"x"}}]}]}`:                       "only image data",
		`{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"candidateCount":"two"}}`:                 "generationConfig.candidateCount",
		`{"contents":[{"parts":[{"text":"x"}]}],"toolConfig":{"functionCallingConfig":{"mode":"SOMETIMES"}}}`: "mode: must be",
	} {
		if msg := h.RequestError([]byte(body), route("generate")); !strings.Contains(msg, want) {
			t.Errorf("%s: %q, want %q", body, msg, want)
		}
	}
}

func TestEncodeResponse(t *testing.T) {
	resp := canon.ChatResponse{Choices: []canon.Choice{{Message: canon.Message{Role: canon.RoleAssistant, Reasoning: "hm",
		Content:   []canon.Part{{Type: canon.PartText, Text: "Sunny."}},
		ToolCalls: []canon.ToolCall{{ID: "c1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}}, FinishReason: canon.FinishToolCalls}},
		Usage: &canon.Usage{PromptTokens: 5, CompletionTokens: 7, ReasoningTokens: 2}}
	out := harness(t).EncodeResponse(resp, route("generate"), sdktest.Meta(abi.MetaModel, "m", abi.MetaID, "chatcmpl-1"))
	sdktest.Golden(t, "testdata/response.json", out)
	if !strings.Contains(string(out), `"finishReason":"STOP"`) || !strings.Contains(string(out), `"thoughtsTokenCount":2`) {
		t.Fatalf("%s", out)
	}
}

func streamChunks() []canon.ChatChunk {
	return []canon.ChatChunk{
		{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Role: canon.RoleAssistant}}}},
		{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: "Hel"}}}},
		{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: "lo"}}}},
		{Choices: []canon.ChunkChoice{{Delta: canon.Delta{ToolCalls: []canon.ToolCallDelta{{ID: "c1", Name: "f", Arguments: `{"a":`}}}}}},
		{Choices: []canon.ChunkChoice{{Delta: canon.Delta{ToolCalls: []canon.ToolCallDelta{{Arguments: `1}`}}}}}},
		{Choices: []canon.ChunkChoice{{FinishReason: canon.FinishToolCalls}}},
		{Usage: &canon.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}},
	}
}

// A stream's bytes do not depend on how the host batches its chunks, and
// a function call streamed in pieces arrives whole.
func TestEncodeStream(t *testing.T) {
	for _, tc := range []struct{ route, golden string }{{"stream-sse", "testdata/stream.sse"}, {"stream-json", "testdata/stream.json"}} {
		t.Run(tc.route, func(t *testing.T) {
			items := sdktest.Chunks(streamChunks()...)
			out := sdktest.SplitInvariant(t, sdk.NewTranslator(gemini.Manifest(), gemini.New()), abi.OpStreamEncode, items,
				route(tc.route), sdktest.Meta(abi.MetaModel, "m", abi.MetaID, "chatcmpl-1"))
			sdktest.Golden(t, tc.golden, out)
			if !strings.Contains(string(out), `"functionCall":{"id":"c1","name":"f","args":{"a":1}}`) {
				t.Fatalf("%s", out)
			}
			if tc.route == "stream-json" {
				var arr []json.RawMessage
				if err := json.Unmarshal(out, &arr); err != nil || len(arr) != 4 {
					t.Fatalf("%d elements, %v: %s", len(arr), err, out)
				}
			}
		})
	}
}

func TestEncodeError(t *testing.T) {
	h := harness(t)
	e := canon.Error{Status: 404, Type: canon.ErrNotFound, Message: `model "x" not found`}
	r := h.EncodeError(e, route("generate"))
	if got := string(r.Payload); got != `{"error":{"code":404,"message":"model \"x\" not found","status":"NOT_FOUND"}}` {
		t.Fatalf("%s", got)
	}
	if got := string(h.EncodeError(e, route("stream-sse"), sdktest.Meta(abi.MetaStream, "1")).Payload); !strings.HasPrefix(got, "data: {") || !strings.HasSuffix(got, "}\n\n") {
		t.Fatalf("sse %q", got)
	}
	if got := string(h.EncodeError(e, route("stream-json"), sdktest.Meta(abi.MetaStream, "1")).Payload); !strings.HasPrefix(got, ",\r\n{") || !strings.HasSuffix(got, "}]") {
		t.Fatalf("json %q", got)
	}
}

func TestEncodeModels(t *testing.T) {
	list := canon.ModelList{Models: []canon.Model{{ID: "qwen3-8b", ContextLength: 32768, Capabilities: []string{canon.CapCompletion}},
		{ID: "nomic", Capabilities: []string{canon.CapEmbedding}}}}
	sdktest.Golden(t, "testdata/models.json", harness(t).EncodeModels(list, route("list")))
	one := harness(t).EncodeModels(canon.ModelList{Models: list.Models[:1]}, route("get"), sdktest.Meta(abi.MetaModel, "qwen3-8b"))
	if !strings.HasPrefix(string(one), `{"name":"models/qwen3-8b"`) {
		t.Fatalf("%s", one)
	}
}

func TestEmbedding(t *testing.T) {
	h := harness(t)
	req := h.DecodeEmbeddingRequest([]byte(`{"requests":[{"model":"models/openai/gpt-oss-120b","content":{"parts":[{"text":"a"}]}},{"content":{"parts":[{"text":"b"}]},"outputDimensionality":8}]}`), route("batch-embed"))
	if d := cmp.Diff([]string{"a", "b"}, req.Input); d != "" || req.Dimensions != 8 || req.Model != "openai/gpt-oss-120b" {
		t.Fatalf("%+v %s", req, d)
	}
	out := h.EncodeEmbeddingResponse(canon.EmbeddingResponse{Vectors: [][]float32{{0.5, 1}, {2, -1}}}, route("batch-embed"))
	if string(out) != `{"embeddings":[{"values":[0.5,1]},{"values":[2,-1]}]}` {
		t.Fatalf("%s", out)
	}
	out = h.EncodeEmbeddingResponse(canon.EmbeddingResponse{Vectors: [][]float32{{0.5}}}, route("embed"))
	if string(out) != `{"embedding":{"values":[0.5]}}` {
		t.Fatalf("%s", out)
	}
	if r := h.Call(abi.OpEmbedRequestDecode, sdktest.Payload([]byte(`{"requests":[{"model":"models/other","content":{"parts":[{"text":"a"}]}}]}`)), route("batch-embed")); r.Status != abi.StatusBadInput {
		t.Fatalf("another model: %v", r.Status)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	sdktest.FuzzOp(f, sdk.NewTranslator(gemini.Manifest(), gemini.New()), abi.OpRequestDecode, []byte(fullRequest))
}
