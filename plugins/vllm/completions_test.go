package vllm

import (
	"encoding/json"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Wire format: vLLM's OpenAI-compatible server, Completions API
// (https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html),
// which answers in OpenAI's legacy text_completion shape
// (https://platform.openai.com/docs/api-reference/completions).

func TestCompletion_Request(t *testing.T) {
	req := canon.ChatRequest{Model: "m", Prompt: []string{"Once upon"}, MaxTokens: 8, N: 2, Stream: true,
		Logprobs: true, TopLogprobs: 2, Temperature: ptr(0.5), Stop: []string{"\n"}, Seed: ptr(int64(3)), User: "u"}
	r := callOp(t, newPlugin(), abi.OpRequestEncode, 0, nil, nil, req.AppendJSON(nil))
	if r.Status != abi.StatusOK {
		t.Fatalf("%s: %s", r.Status, r.Error)
	}
	want := `{"model":"m","prompt":"Once upon","stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":false},` +
		`"max_tokens":8,"n":2,"logprobs":2,"temperature":0.5,"seed":3,"stop":["\n"],"user":"u"}`
	if string(r.Payload) != want || r.meta(abi.MetaPath) != "/v1/completions" {
		t.Fatalf("path %q body\n got %s\nwant %s", r.meta(abi.MetaPath), r.Payload, want)
	}
	req.Prompt = []string{"a", "b"}
	req.Stream = false
	r = callOp(t, newPlugin(), abi.OpRequestEncode, 0, nil, nil, req.AppendJSON(nil))
	var body map[string]any
	if err := json.Unmarshal(r.Payload, &body); err != nil || len(body["prompt"].([]any)) != 2 || body["stream"] != nil {
		t.Fatalf("%s (%v)", r.Payload, err)
	}
	for _, bad := range []canon.ChatRequest{
		{Model: "m", Prompt: []string{"x"}, Tools: []canon.Tool{{Name: "f"}}},
		{Model: "m", Prompt: []string{"x"}, ResponseFormat: &canon.ResponseFormat{Type: canon.FormatJSONObject}},
	} {
		if r := callOp(t, newPlugin(), abi.OpRequestEncode, 0, nil, nil, bad.AppendJSON(nil)); r.Status != abi.StatusBadInput {
			t.Errorf("%+v: %s", bad, r.Status)
		}
	}
}

func TestCompletion_Response(t *testing.T) {
	body := `{"id":"cmpl-1","object":"text_completion","created":1700000000,"model":"m","choices":[` +
		`{"index":0,"text":" there was <think>not split</think>","logprobs":{"tokens":[" there"],"token_logprobs":[-0.1]},"finish_reason":"length","stop_reason":null},` +
		`{"index":1,"text":"","logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":2,"total_tokens":7,"completion_tokens":5}}`
	r := callOp(t, newPlugin(), abi.OpResponseDecode, 0, nil, nil, []byte(body))
	var resp canon.ChatResponse
	if r.Status != abi.StatusOK || resp.DecodeJSON(r.Payload) != nil {
		t.Fatalf("%s %s %s", r.Status, r.Error, r.Payload)
	}
	c0, c1 := resp.Choices[0], resp.Choices[1]
	if c0.Message.Text() != " there was <think>not split</think>" || c0.Message.Reasoning != "" || c0.FinishReason != canon.FinishLength ||
		string(c0.Logprobs) != `{"tokens":[" there"],"token_logprobs":[-0.1]}` || c1.Index != 1 || c1.Message.Text() != "" ||
		resp.Usage.CompletionTokens != 5 {
		t.Fatalf("%+v", resp)
	}
}

func TestCompletion_Stream(t *testing.T) {
	events := [][]byte{
		[]byte(`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"Hel","logprobs":null,"finish_reason":null}]}`),
		[]byte(`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"lo","logprobs":null,"finish_reason":"stop","stop_reason":null}]}`),
		[]byte(`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":2,"total_tokens":4,"completion_tokens":2}}`),
		[]byte(`[DONE]`),
	}
	for _, batches := range [][][][]byte{{events}, {events[:1], events[1:3], events[3:]}} {
		out, done, errMsg := streamABI(t, newPlugin(), batches)
		if errMsg != "" || !done {
			t.Fatalf("%s done=%v", errMsg, done)
		}
		ch := decodeChunks(t, out)
		if len(ch) != 3 || ch[0].Choices[0].Delta.Content != "Hel" || ch[1].Choices[0].Delta.Content != "lo" ||
			ch[1].Choices[0].FinishReason != canon.FinishStop || ch[2].Usage == nil || ch[2].Usage.TotalTokens != 4 {
			t.Fatalf("%s", out)
		}
	}
}
