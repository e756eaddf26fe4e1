package canon

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// codec is what every canonical type implements.
type codec interface {
	AppendJSON([]byte) []byte
	DecodeJSON([]byte) error
}

// equate treats nil and empty slices alike: empty ones are not written.
var equate = cmpopts.EquateEmpty()

func ptr[T any](v T) *T { return &v }

const schema = `{"type":"object","properties":{"q":{"type":"string","description":"a \"quoted\" \u00e9 \\ value"}},"required":["q"]}`

func richRequest() *ChatRequest {
	return &ChatRequest{
		Model: "llama-3.1-8b",
		Messages: []Message{
			{Role: RoleSystem, Content: []Part{{Type: PartText, Text: "Be brief.\nAlways."}}},
			{Role: RoleUser, Name: "zoë", Content: []Part{
				{Type: PartText, Text: "Hi \"there\" \\ tab\t ctrl\x01 日本語 🎉 \u2028 <script>&"},
				{Type: PartImage, URL: "https://example.com/a.png?x=1&y=2", Detail: "high"},
				{Type: PartImage, MediaType: "image/png", Data: "iVBORw0KGgo="},
			}},
			{Role: RoleAssistant, Reasoning: "thinking…", ToolCalls: []ToolCall{
				{ID: "call_1", Name: "search", Arguments: `{"q":"go \"wasm\""}`},
				{ID: "call_2", Name: "noop", Arguments: ""},
			}},
			{Role: RoleTool, ToolCallID: "call_1", Content: []Part{{Type: PartText, Text: ""}}},
		},
		Stream:            true,
		IncludeUsage:      true,
		MaxTokens:         512,
		Temperature:       ptr(0.0), // zero but set
		TopP:              ptr(0.95),
		TopK:              ptr(0),
		MinP:              ptr(1e-9),
		RepetitionPenalty: ptr(1.1),
		FrequencyPenalty:  ptr(-0.5),
		PresencePenalty:   ptr(2.0),
		Seed:              ptr(int64(math.MinInt64)),
		Stop:              []string{"\n\n", "", "</s>"},
		N:                 2,
		Logprobs:          true,
		TopLogprobs:       5,
		ResponseFormat:    &ResponseFormat{Type: FormatJSONSchema, Name: "answer", Schema: json.RawMessage(schema), Strict: true},
		Think:             ThinkHigh,
		ThinkBudget:       2048,
		ThinkOptional:     true,
		Tools: []Tool{
			{Name: "search", Description: "Search the web", Parameters: json.RawMessage(schema), Strict: true},
			{Name: "noop"},
		},
		ToolChoice:        &ToolChoice{Mode: ToolChoiceFunction, Name: "search"},
		ParallelToolCalls: ptr(false),
		User:              "user-42",
		ContextLength:     131072,
	}
}

func roundTripCases() []struct {
	name string
	in   codec
	zero func() codec
} {
	type c = struct {
		name string
		in   codec
		zero func() codec
	}
	req := func() codec { return new(ChatRequest) }
	resp := func() codec { return new(ChatResponse) }
	chunk := func() codec { return new(ChatChunk) }
	return []c{
		{"request/empty", &ChatRequest{}, req},
		{"request/rich", richRequest(), req},
		{"request/zero-pointers", &ChatRequest{Temperature: ptr(0.0), TopK: ptr(0), Seed: ptr(int64(0)), ParallelToolCalls: ptr(false), ResponseFormat: &ResponseFormat{}, ToolChoice: &ToolChoice{}}, req},
		{"request/empty-slices", &ChatRequest{Messages: []Message{}, Stop: []string{}, Tools: []Tool{}}, req},
		{"request/empty-message", &ChatRequest{Messages: []Message{{}, {Content: []Part{{}}}}}, req},
		{"request/big-numbers", &ChatRequest{Seed: ptr(int64(math.MaxInt64)), MaxTokens: math.MaxInt32, Temperature: ptr(math.SmallestNonzeroFloat64), TopP: ptr(math.MaxFloat64)}, req},
		{"response/rich", &ChatResponse{ID: "chatcmpl-1", Model: "m", Created: 1700000000, Choices: []Choice{
			{Index: 0, Message: Message{Role: RoleAssistant, Content: []Part{{Type: PartText, Text: "Hello ✓"}}}, FinishReason: FinishStop},
			{Index: 1, Message: Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c", Name: "f", Arguments: "{}"}}}, FinishReason: FinishToolCalls},
			{Index: 2, Message: Message{Role: RoleAssistant, Content: []Part{{Type: PartText, Text: "Hi"}}}, FinishReason: FinishStop,
				Logprobs: json.RawMessage(`{"content":[{"token":"Hi","logprob":-0.25,"bytes":[72,105],"top_logprobs":[]}]}`)},
		}, Usage: &Usage{PromptTokens: 10, CompletionTokens: 20, TotalTokens: 30, ReasoningTokens: 5, CachedTokens: 4}}, resp},
		{"response/zero-usage", &ChatResponse{Usage: &Usage{}}, resp},
		{"chunk/empty", &ChatChunk{}, chunk},
		{"chunk/usage-only", &ChatChunk{ID: "x", Usage: &Usage{PromptTokens: 1, TotalTokens: 1}}, chunk},
		{"chunk/deltas", &ChatChunk{ID: "chatcmpl-2", Model: "m", Created: -1, Choices: []ChunkChoice{
			{Index: 0, Delta: Delta{Role: RoleAssistant, Content: "Hel\u0000lo"}},
			{Index: 3, Delta: Delta{Reasoning: "hmm", ToolCalls: []ToolCallDelta{{Index: 0, ID: "c1", Name: "f"}, {Index: 1, Arguments: `{"a":`}}}, FinishReason: FinishLength},
			{Index: 0},
			{Index: 1, Delta: Delta{Content: "a"}, Logprobs: json.RawMessage(`{"content":[{"token":"a","logprob":-1e-05,"bytes":[97],"top_logprobs":[{"token":"a","logprob":-1e-05,"bytes":[97]}]}]}`)},
		}}, chunk},
		{"embedding-request", &EmbeddingRequest{Model: "e5", Input: []string{"a", "", "ü"}, Dimensions: 256, EncodingFormat: "base64", User: "u"}, func() codec { return new(EmbeddingRequest) }},
		{"embedding-response", &EmbeddingResponse{Model: "e5", Vectors: [][]float32{{0.1, -0.2, 1e-7, 3.4e38, 0}, {}, {math.SmallestNonzeroFloat32}}, Usage: &Usage{PromptTokens: 3, TotalTokens: 3}}, func() codec { return new(EmbeddingResponse) }},
		{"error", &Error{Status: 404, Type: ErrNotFound, Code: "model_not_found", Message: "model \"x\" not found", Param: "model", RequestID: "req-1"}, func() codec { return new(Error) }},
		{"model-list", &ModelList{Models: []Model{{ID: "a", OwnedBy: "mindrouter", Created: 1, ContextLength: 8192, Backends: []string{"gpu-1", "gpu-2"}}, {ID: "b"}}}, func() codec { return new(ModelList) }},
		{"model-list/empty", &ModelList{}, func() codec { return new(ModelList) }},
		{"discovery", &Discovery{Healthy: ptr(false), Models: []DiscoveredModel{
			{Name: "qwen3:8b", Loaded: true, ContextLength: 40960, SizeBytes: 5 << 30, Family: "qwen3", Capabilities: []string{"tools", "thinking"}},
			{Name: "nomic-embed"},
		}, Version: "0.9.1", HasLoad: true, Running: 3, Waiting: 0.5, KVCacheUsage: 0.731}, func() codec { return new(Discovery) }},
		{"discovery/empty", &Discovery{}, func() codec { return new(Discovery) }},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range roundTripCases() {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte("prefix:")
			b := tc.in.AppendJSON(prefix)
			if !strings.HasPrefix(string(b), "prefix:") {
				t.Fatalf("AppendJSON clobbered dst: %q", b)
			}
			b = b[len(prefix):]
			if !json.Valid(b) {
				t.Fatalf("invalid JSON: %s", b)
			}
			got := tc.zero()
			if err := got.DecodeJSON(b); err != nil {
				t.Fatalf("decode %s: %v", b, err)
			}
			if d := cmp.Diff(tc.in, got, equate); d != "" {
				t.Fatalf("round trip (-want +got):\n%s\njson: %s", d, b)
			}
			// Decoding must copy: scribbling on the input changes nothing.
			for i := range b {
				b[i] = 'X'
			}
			if d := cmp.Diff(tc.in, got, equate); d != "" {
				t.Fatalf("decoded value aliases input (-want +got):\n%s", d)
			}
		})
	}
}

func TestGolden(t *testing.T) {
	tests := []struct {
		in   codec
		want string
	}{
		{&ChatRequest{
			Model:       "m",
			Messages:    []Message{{Role: RoleUser, Content: []Part{{Type: PartText, Text: "hi\n\"x\""}}}},
			Temperature: ptr(0.0),
			TopK:        ptr(40),
			Stop:        []string{"END"},
			ResponseFormat: &ResponseFormat{
				Type: FormatJSONSchema, Name: "r", Schema: json.RawMessage(`{"type":"object"}`), Strict: true,
			},
			Think:             ThinkOff,
			Tools:             []Tool{{Name: "f", Parameters: json.RawMessage(`{}`)}},
			ToolChoice:        &ToolChoice{Mode: ToolChoiceAuto},
			ParallelToolCalls: ptr(true),
		}, `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi\n\"x\""}]}],"temperature":0,"top_k":40,"stop":["END"],"response_format":{"type":"json_schema","name":"r","schema":{"type":"object"},"strict":true},"think":"off","tools":[{"name":"f","parameters":{}}],"tool_choice":{"mode":"auto"},"parallel_tool_calls":true}`},
		{&ChatChunk{ID: "c", Created: 5, Choices: []ChunkChoice{
			{Index: 0, Delta: Delta{Content: ""}},
			{Index: 1, Delta: Delta{Role: RoleAssistant, ToolCalls: []ToolCallDelta{{Index: 0, Arguments: "{"}}}, FinishReason: FinishToolCalls},
		}}, `{"id":"c","created":5,"choices":[{"index":0,"delta":{}},{"index":1,"delta":{"role":"assistant","tool_calls":[{"index":0,"arguments":"{"}]},"finish_reason":"tool_calls"}]}`},
		{&ChatChunk{Usage: &Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}},
			`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`},
		{&ChatResponse{ID: "r", Choices: []Choice{{Message: Message{Role: RoleAssistant}, FinishReason: FinishStop}}},
			`{"id":"r","choices":[{"index":0,"message":{"role":"assistant"},"finish_reason":"stop"}]}`},
		{&ChatRequest{Model: "m", N: 3, Logprobs: true, TopLogprobs: 2},
			`{"model":"m","n":3,"logprobs":true,"top_logprobs":2}`},
		{&ChatResponse{Choices: []Choice{{Index: 1, FinishReason: FinishStop, Logprobs: json.RawMessage(`{"content":null}`)}}},
			`{"choices":[{"index":1,"message":{},"finish_reason":"stop","logprobs":{"content":null}}]}`},
		{&EmbeddingResponse{Vectors: [][]float32{{0.1, 1e-7}}}, `{"vectors":["zczMPZW/1jM="]}`},
		{&Error{Status: 429, Type: ErrRateLimit, Message: "slow down"}, `{"status":429,"type":"rate_limit","message":"slow down"}`},
		{&ModelList{}, `{"models":[]}`},
		{&Discovery{Healthy: ptr(true), Models: []DiscoveredModel{{Name: "a", Loaded: true, SizeBytes: 10}}, HasLoad: true, KVCacheUsage: 0.5},
			`{"healthy":true,"models":[{"name":"a","loaded":true,"size_bytes":10}],"has_load":true,"kv_cache_usage":0.5}`},
	}
	for _, tc := range tests {
		if got := string(tc.in.AppendJSON(nil)); got != tc.want {
			t.Errorf("AppendJSON(%T):\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

func TestDecodeLenient(t *testing.T) {
	in := `{"model":"m","unknown":{"deep":[1,2,{"x":null}]},"stream":null,"max_tokens":1e3,
		"temperature":null,"seed":-5.0,"messages":[{"role":"user","content":[{"type":"text","text":"\ud83c\udf89\u00e9\/"}]}],
		"model":"m2"}`
	var r ChatRequest
	if err := r.DecodeJSON([]byte(in)); err != nil {
		t.Fatal(err)
	}
	want := ChatRequest{Model: "m2", MaxTokens: 1000, Seed: ptr(int64(-5)),
		Messages: []Message{{Role: RoleUser, Content: []Part{{Type: PartText, Text: "🎉é/"}}}}}
	if d := cmp.Diff(want, r, equate); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	// DecodeJSON resets the value first.
	if err := r.DecodeJSON([]byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(ChatRequest{}, r); d != "" {
		t.Fatalf("not reset (-want +got):\n%s", d)
	}
	// Invalid UTF-8 becomes U+FFFD, one per byte, as jsonw writes it.
	var e Error
	if err := e.DecodeJSON([]byte("{\"message\":\"a\xffb\xc3\"}")); err != nil {
		t.Fatal(err)
	}
	if e.Message != "a\uFFFDb\uFFFD" {
		t.Fatalf("message = %q", e.Message)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		in   codec
		json string
		want string // substring of the error
	}{
		{new(ChatRequest), ``, "canon: decode chat request: "},
		{new(ChatRequest), `{"model":"m"`, "canon: decode chat request: "},
		{new(ChatRequest), `{"model":"m"} x`, "canon: decode chat request: "},
		{new(ChatRequest), `[]`, "expected object, got array"},
		{new(ChatRequest), `{"model":1}`, `field "model": expected string, got number`},
		{new(ChatRequest), `{"stream":"yes"}`, `field "stream": expected boolean`},
		{new(ChatRequest), `{"max_tokens":1.5}`, `field "max_tokens": number is not an integer`},
		{new(ChatRequest), `{"max_tokens":"5"}`, `field "max_tokens": expected number, got string`},
		{new(ChatRequest), `{"max_tokens":1e30}`, `field "max_tokens": number out of range`},
		{new(ChatRequest), `{"temperature":1e999}`, `field "temperature": number out of range`},
		{new(ChatRequest), `{"temperature":NaN}`, "canon: decode chat request: "},
		{new(ChatRequest), `{"temperature":01}`, "canon: decode chat request: "},
		{new(ChatRequest), `{"model":"\x"}`, "canon: decode chat request: "},
		{new(ChatRequest), `{"messages":{}}`, `field "messages": expected array, got object`},
		{new(ChatRequest), `{"messages":[{"role":"user"},{"content":[{"text":7}]}]}`, `field "messages[1].content[0].text": expected string`},
		{new(ChatRequest), `{"tools":[{"strict":1}]}`, `field "tools[0].strict"`},
		{new(ChatRequest), `{"response_format":[]}`, `field "response_format": expected object`},
		{new(ChatChunk), `{"choices":[{"delta":{"tool_calls":[{"index":"0"}]}}]}`, `canon: decode chat chunk: field "choices[0].delta.tool_calls[0].index"`},
		{new(ChatChunk), `{"choices":[{"index":0,"delta":{"content":"a`, "canon: decode chat chunk: "},
		{new(ChatResponse), `{"usage":{"total_tokens":true}}`, `field "usage.total_tokens"`},
		{new(EmbeddingResponse), `{"vectors":[[1,"x"]]}`, `field "vectors[0][1]": expected number`},
		{new(EmbeddingResponse), `{"vectors":[[1e39]]}`, `field "vectors[0][0]": number out of range`},
		{new(EmbeddingResponse), `{"vectors":["zczMPZW/1jM","x"]}`, `field "vectors[0]": not the base64 of float32 values`},
		{new(EmbeddingResponse), `{"vectors":["zczMPQ==","AAA="]}`, `field "vectors[1]": not the base64 of float32 values`},
		{new(EmbeddingResponse), `{"vectors":["zczMPQ==",1]}`, `field "vectors[1]": expected string`},
		{new(Discovery), `{"healthy":"yes"}`, `canon: decode discovery: field "healthy"`},
		{new(ModelList), `{"models":[{"created":"now"}]}`, `canon: decode model list: field "models[0].created"`},
		{new(Error), `{"status":"404"}`, `canon: decode error: field "status"`},
		{new(EmbeddingRequest), `{"input":"one"}`, `canon: decode embedding request: field "input": expected array`},
	}
	for _, tc := range tests {
		err := tc.in.DecodeJSON([]byte(tc.json))
		if err == nil {
			t.Errorf("%T %s: no error", tc.in, tc.json)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%T %s:\n got %v\nwant %q", tc.in, tc.json, err, tc.want)
		}
	}
	// The cause is reachable with errors.Is.
	var r ChatRequest
	if err := r.DecodeJSON([]byte(`{"n":2.5}`)); !errors.Is(err, errNotIntegral) {
		t.Errorf("errors.Is(%v, errNotIntegral) = false", err)
	}
}

func TestUsageAdd(t *testing.T) {
	u := Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3, ReasoningTokens: 4, CachedTokens: 5}
	u.Add(Usage{PromptTokens: 10, CompletionTokens: 20, TotalTokens: 30, ReasoningTokens: 40, CachedTokens: 50})
	if want := (Usage{11, 22, 33, 44, 55}); u != want {
		t.Fatalf("got %+v, want %+v", u, want)
	}
}

func TestRawSchemaIsCopied(t *testing.T) {
	in := []byte(`{"response_format":{"type":"json_schema","schema":{ "a" : [1, 2.50, "\u00e9\n"] }}}`)
	var r ChatRequest
	if err := r.DecodeJSON(in); err != nil {
		t.Fatal(err)
	}
	want := `{"a":[1,2.50,"\u00e9\n"]}` // compacted, otherwise as written
	if got := string(r.ResponseFormat.Schema); got != want {
		t.Fatalf("schema = %s, want %s", got, want)
	}
	for i := range in {
		in[i] = ' '
	}
	if got := string(r.ResponseFormat.Schema); got != want {
		t.Fatalf("schema aliases input: %s", got)
	}
}

func TestRawControlCharacter(t *testing.T) {
	// fastjson's validator misses a control character followed by an escape.
	var r ChatRequest
	err := r.DecodeJSON([]byte("{\"tools\":[{\"parameters\":{\"a\":\"\x01\\\\n\"}}]}"))
	if err == nil || !strings.Contains(err.Error(), `field "tools[0].parameters"`) {
		t.Fatalf("err = %v", err)
	}
}
