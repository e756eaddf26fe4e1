package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Wire format: https://platform.openai.com/docs/api-reference/completions
// (the legacy Completions API: text_completion objects, choices[].text).

func TestCompletion_Decode(t *testing.T) {
	p := newPlugin()
	r := call(t, p, abi.OpRequestDecode, 0, nil, []byte(`{"model":"m","prompt":["Once upon","a time"],"max_tokens":16,
		"temperature":0.5,"n":2,"stop":"\n","seed":7,"logprobs":2,"stream":true,"stream_options":{"include_usage":true},"user":"u1","echo":false,"suffix":null,"best_of":1}`),
		"route", RouteCompletions)
	if r.Status != abi.StatusOK {
		t.Fatalf("%s: %s", r.Status, r.Error)
	}
	var req canon.ChatRequest
	if err := req.DecodeJSON(r.Payload); err != nil {
		t.Fatal(err)
	}
	if strings.Join(req.Prompt, "|") != "Once upon|a time" || len(req.Messages) != 0 || req.MaxTokens != 16 || req.N != 2 ||
		*req.Temperature != 0.5 || req.Stop[0] != "\n" || *req.Seed != 7 || !req.Logprobs || req.TopLogprobs != 2 ||
		!req.Stream || !req.IncludeUsage || req.User != "u1" {
		t.Fatalf("%+v", req)
	}
	for body, want := range map[string]string{
		`{"model":"m"}`:                               "prompt is required",
		`{"model":"m","prompt":[1,2,3]}`:              "token-id prompts are not supported",
		`{"model":"m","prompt":[]}`:                   "between 1 and 128",
		`{"model":"m","prompt":5}`:                    "prompt must be",
		`{"model":"m","prompt":"x","echo":true}`:      "echo is not supported",
		`{"model":"m","prompt":"x","suffix":"end"}`:   "suffix is not supported",
		`{"model":"m","prompt":"x","best_of":3}`:      "best_of is not supported",
		`{"model":"m","prompt":"x","logprobs":9}`:     "logprobs must be an integer between 0 and 5",
		`{"model":"m","prompt":"x","logprobs":true}`:  "logprobs must be an integer",
		`{"model":"m","prompt":"x","temperature":-1}`: "temperature",
	} {
		r := call(t, p, abi.OpRequestDecode, 0, nil, []byte(body), "route", RouteCompletions)
		if r.Status != abi.StatusBadInput || !strings.Contains(r.Error, want) {
			t.Errorf("%s: %s %q, want %q", body, r.Status, r.Error, want)
		}
	}
}

var completionMeta = []string{"route", RouteCompletions, "id", "chatcmpl-abc123", "model", "m", "created", "1700000000"}

func TestCompletion_Response(t *testing.T) {
	resp := canon.ChatResponse{ID: "backend", Model: "b", Created: 1, Choices: []canon.Choice{
		{Index: 0, Message: canon.Message{Role: canon.RoleAssistant, Content: []canon.Part{{Type: canon.PartText, Text: " there was"}}}, FinishReason: canon.FinishLength},
		{Index: 1, Message: canon.Message{Role: canon.RoleAssistant, Content: []canon.Part{{Type: canon.PartText, Text: "\"q\""}}}, Logprobs: json.RawMessage(`{"tokens":["a"]}`)},
	}, Usage: &canon.Usage{PromptTokens: 3, CompletionTokens: 5}}
	r := call(t, newPlugin(), abi.OpResponseEncode, 0, nil, resp.AppendJSON(nil), completionMeta...)
	want := `{"id":"cmpl-abc123","object":"text_completion","created":1700000000,"model":"m","choices":[` +
		`{"index":0,"text":" there was","logprobs":null,"finish_reason":"length"},` +
		`{"index":1,"text":"\"q\"","logprobs":{"tokens":["a"]},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8},"system_fingerprint":null}`
	if r.Status != abi.StatusOK || string(r.Payload) != want {
		t.Fatalf("%s %s\n got %s\nwant %s", r.Status, r.Error, r.Payload, want)
	}
}

func TestCompletion_Stream(t *testing.T) {
	chunks := []canon.ChatChunk{
		{Choices: []canon.ChunkChoice{{Index: 0, Delta: canon.Delta{Role: canon.RoleAssistant}}}}, // nothing to write
		{Choices: []canon.ChunkChoice{{Index: 0, Delta: canon.Delta{Content: "Hel"}}}},
		{Choices: []canon.ChunkChoice{{Index: 0, Delta: canon.Delta{Content: "lo", Reasoning: "dropped"}, FinishReason: canon.FinishStop}}},
		{Usage: &canon.Usage{PromptTokens: 2, CompletionTokens: 2, TotalTokens: 4}},
	}
	head := `{"id":"cmpl-abc123","object":"text_completion","created":1700000000,"model":"m"`
	for _, usage := range []string{"0", "1"} {
		meta := append(append([]string{}, completionMeta...), "include_usage", usage)
		var got []byte
		// One chunk per call, then the end: the bytes are the same however
		// the chunks are batched, as the encoder keeps no state.
		for i := range chunks {
			r := call(t, newPlugin(), abi.OpStreamEncode, 0, nil, chunkItems(t, chunks[i:i+1]), meta...)
			got = append(got, r.Payload...)
		}
		r := call(t, newPlugin(), abi.OpStreamEncode, abi.FlagEnd, nil, chunkItems(t, nil), meta...)
		got = append(got, r.Payload...)
		all := call(t, newPlugin(), abi.OpStreamEncode, abi.FlagFirst|abi.FlagEnd, nil, chunkItems(t, chunks), meta...)
		want := "data: " + head + `,"choices":[{"index":0,"text":"Hel","logprobs":null,"finish_reason":null}]}` + "\n\n" +
			"data: " + head + `,"choices":[{"index":0,"text":"lo","logprobs":null,"finish_reason":"stop"}]}` + "\n\n"
		if usage == "1" {
			want += "data: " + head + `,"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":2,"total_tokens":4}}` + "\n\n"
		}
		want += "data: [DONE]\n\n"
		if string(got) != want || string(all.Payload) != want {
			t.Fatalf("include_usage %s:\n got %s\n all %s\nwant %s", usage, got, all.Payload, want)
		}
	}
}

// chunkItems lays chunks out as a stream op's payload.
func chunkItems(t *testing.T, chunks []canon.ChatChunk) []byte {
	t.Helper()
	var b []byte
	for i := range chunks {
		b = abi.AppendItem(b, chunks[i].AppendJSON(nil))
	}
	return b
}
