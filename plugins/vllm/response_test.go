package vllm

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

func assistant(content, reasoning string, calls ...canon.ToolCall) canon.Message {
	m := canon.Message{Role: canon.RoleAssistant, Reasoning: reasoning, ToolCalls: calls}
	if content != "" {
		m.Content = text(content)
	}
	return m
}

var responseCases = []struct {
	file string
	want canon.ChatResponse
}{
	{"plain.json", canon.ChatResponse{
		ID: "chatcmpl-b7c2", Model: "meta-llama/Llama-3.1-8B-Instruct", Created: 1733000123,
		Choices: []canon.Choice{{Message: assistant("Hello! How can I help?", ""), FinishReason: canon.FinishStop}},
		Usage:   &canon.Usage{PromptTokens: 25, CompletionTokens: 7, TotalTokens: 32, CachedTokens: 16},
	}},
	{"reasoning_content.json", canon.ChatResponse{
		ID: "chatcmpl-r1", Model: "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", Created: 1733000123,
		Choices: []canon.Choice{{Message: assistant("9.8 is greater.", "9.11 vs 9.8: compare decimals."), FinishReason: canon.FinishStop}},
		Usage:   &canon.Usage{PromptTokens: 18, CompletionTokens: 42, TotalTokens: 60, ReasoningTokens: 30},
	}},
	{"reasoning.json", canon.ChatResponse{
		ID: "chatcmpl-r2", Model: "openai/gpt-oss-20b", Created: 1733000123,
		Choices: []canon.Choice{{Message: assistant("Hi there.", "Simple greeting."), FinishReason: canon.FinishLength}},
		Usage:   &canon.Usage{PromptTokens: 70, CompletionTokens: 10, TotalTokens: 80},
	}},
	{"think_tags.json", canon.ChatResponse{
		ID: "chatcmpl-t1", Model: "Qwen/Qwen3-8B", Created: 1733000123,
		Choices: []canon.Choice{{Message: assistant("Hello!", "The user says hi."), FinishReason: canon.FinishStop}},
		Usage:   &canon.Usage{PromptTokens: 9, CompletionTokens: 11, TotalTokens: 20},
	}},
	{"think_close_only.json", canon.ChatResponse{
		ID: "chatcmpl-t2", Model: "Qwen/QwQ-32B", Created: 1733000123,
		Choices: []canon.Choice{{Message: assistant("There are 3.", "Counting letters: r, r, r."), FinishReason: canon.FinishStop}},
		Usage:   &canon.Usage{PromptTokens: 9, CompletionTokens: 11, TotalTokens: 20},
	}},
	{"tool_calls.json", canon.ChatResponse{
		ID: "chatcmpl-tc", Model: "Qwen/Qwen3-8B", Created: 1733000123,
		Choices: []canon.Choice{{Message: assistant("", "",
			canon.ToolCall{ID: "chatcmpl-tool-aaa", Name: "get_weather", Arguments: `{"city": "Paris"}`},
			canon.ToolCall{ID: "chatcmpl-tool-bbb", Name: "get_time", Arguments: `{"tz": "Europe/Paris"}`},
		), FinishReason: canon.FinishToolCalls}},
		Usage: &canon.Usage{PromptTokens: 300, CompletionTokens: 40, TotalTokens: 340},
	}},
	{"tool_named_stop.json", canon.ChatResponse{
		ID: "chatcmpl-tn", Model: "mistralai/Mistral-7B-Instruct-v0.3", Created: 1733000123,
		Choices: []canon.Choice{{Message: assistant("", "",
			canon.ToolCall{ID: "chatcmpl-tool-ccc", Name: "search", Arguments: `{"q": "vllm"}`},
		), FinishReason: canon.FinishToolCalls}},
		Usage: &canon.Usage{PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110},
	}},
	{"logprobs.json", canon.ChatResponse{
		ID: "chatcmpl-lp", Model: "Qwen/Qwen3-8B", Created: 1733000400,
		Choices: []canon.Choice{{Message: assistant("Hi", ""), FinishReason: canon.FinishStop,
			Logprobs: json.RawMessage(`{"content":[{"token":"Hi","logprob":-0.25,"bytes":[72,105],"top_logprobs":[{"token":"Hi","logprob":-0.25,"bytes":[72,105]}]}]}`)}},
		Usage: &canon.Usage{PromptTokens: 8, CompletionTokens: 1, TotalTokens: 9},
	}},
	{"n2.json", canon.ChatResponse{
		ID: "chatcmpl-n2", Model: "Qwen/Qwen3-8B", Created: 1733000123,
		Choices: []canon.Choice{
			{Index: 0, Message: assistant("A", ""), FinishReason: canon.FinishStop},
			{Index: 1, Message: assistant("B", ""), FinishReason: canon.FinishLength},
		},
		Usage: &canon.Usage{PromptTokens: 5, CompletionTokens: 2, TotalTokens: 7},
	}},
}

func TestDecodeResponse(t *testing.T) {
	p := newPlugin()
	for _, tc := range responseCases {
		t.Run(tc.file, func(t *testing.T) {
			body := readTestdata(t, "responses", tc.file)
			var got canon.ChatResponse
			if err := New().DecodeResponse(&sdk.Call{}, body, &got); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("typed (-want +got):\n%s", d)
			}
			// Through the ABI: the canonical JSON must carry the same value.
			r := callOp(t, p, abi.OpResponseDecode, 0, nil, nil, body)
			if r.Status != abi.StatusOK {
				t.Fatalf("%s: %s", r.Status, r.Error)
			}
			var viaABI canon.ChatResponse
			if err := viaABI.DecodeJSON(r.Payload); err != nil {
				t.Fatalf("canonical output: %v\n%s", err, r.Payload)
			}
			if d := cmp.Diff(tc.want, viaABI); d != "" {
				t.Errorf("ABI (-want +got):\n%s", d)
			}
		})
	}
}

func TestDecodeResponseErrors(t *testing.T) {
	cases := []struct{ body, want string }{
		{``, "invalid JSON"},
		{`not json`, "invalid JSON"},
		{`[1,2]`, "not a JSON object"},
		{`{"error":{"message":"boom","type":"InternalServerError","code":500}}`, "backend error: boom"},
		{`{"object":"error","message":"old boom","type":"BadRequestError","code":400}`, "backend error: old boom"},
		{`{"error":"plain"}`, "backend error: plain"},
		{`{"id":"x"}`, "choices"},
		{`{"choices":[1]}`, "choices[0]"},
	}
	for _, tc := range cases {
		var got canon.ChatResponse
		err := New().DecodeResponse(&sdk.Call{}, []byte(tc.body), &got)
		var ie *sdk.InputError
		if err == nil || !asInputError(err, &ie) || !strings.Contains(ie.Msg, tc.want) {
			t.Errorf("%q: err = %v, want BadInput containing %q", tc.body, err, tc.want)
		}
	}
}

func TestDecodeResponseLenient(t *testing.T) {
	// Shapes seen from OpenAI-compatible servers in front of or instead of
	// vLLM: array content, object arguments, float numbers, missing total.
	body := `{"id":"x","created":1.7e9,"model":"m","choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],
	"tool_calls":[{"id":"c","function":{"name":"f","arguments":{"k":1}}},null]},"finish_reason":"function_call"}],
	"usage":{"prompt_tokens":3.0,"completion_tokens":-4}}`
	var got canon.ChatResponse
	if err := New().DecodeResponse(&sdk.Call{}, []byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want := canon.ChatResponse{ID: "x", Model: "m", Created: 1700000000,
		Choices: []canon.Choice{{Message: assistant("ab", "", canon.ToolCall{ID: "c", Name: "f", Arguments: `{"k":1}`}), FinishReason: canon.FinishToolCalls}},
		Usage:   &canon.Usage{PromptTokens: 3, TotalTokens: 3},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestSplitThink(t *testing.T) {
	cases := []struct{ in, reasoning, rest string }{
		{"plain answer", "", "plain answer"},
		{"<think>a</think>b", "a", "b"},
		{"\n<think>\n a \n</think>\n\n b ", "a", "b "},
		{"<think>unfinished", "unfinished", ""},
		{"pre</think>post", "pre", "post"},
		{"talks about <think> and </think> tags", "", "talks about <think> and </think> tags"},
		{"", "", ""},
	}
	for _, tc := range cases {
		r, rest := splitThink(tc.in)
		if r != tc.reasoning || rest != tc.rest {
			t.Errorf("splitThink(%q) = %q, %q; want %q, %q", tc.in, r, rest, tc.reasoning, tc.rest)
		}
	}
}

func TestFinishReason(t *testing.T) {
	cases := []struct {
		in    string
		tools bool
		want  canon.FinishReason
	}{
		{"", false, canon.FinishNone},
		{"stop", false, canon.FinishStop},
		{"stop", true, canon.FinishToolCalls},
		{"length", true, canon.FinishLength},
		{"tool_calls", false, canon.FinishToolCalls},
		{"content_filter", false, canon.FinishContentFilter},
		{"abort", false, canon.FinishStop},
		{"error", false, canon.FinishStop},
	}
	for _, tc := range cases {
		if got := finishReason([]byte(tc.in), tc.tools); got != tc.want {
			t.Errorf("finishReason(%q, %v) = %q, want %q", tc.in, tc.tools, got, tc.want)
		}
	}
}
