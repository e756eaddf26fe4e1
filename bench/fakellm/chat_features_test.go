package fakellm

import (
	"encoding/json"
	"strings"
	"testing"
)

// Chat features the gateway's adapters are tested against: n > 1 and
// logprobs (vLLM, in OpenAI's shapes: https://platform.openai.com/docs/api-reference/chat/object),
// and a reasoning model whose <think> block arrives in content.

func TestVLLMChoicesAndLogprobs(t *testing.T) {
	_, url := startServer(t, Config{Tokens: 4})
	code, _, body := post(t, url+"/v1/chat/completions",
		`{"model":"qwen3-8b","n":3,"logprobs":true,"top_logprobs":2,"messages":[{"role":"user","content":"hi"}]}`)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var resp struct {
		Choices []struct {
			Index   int `json:"index"`
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			Logprobs struct {
				Content []struct {
					Token       string  `json:"token"`
					Logprob     float64 `json:"logprob"`
					Bytes       []int   `json:"bytes"`
					TopLogprobs []struct {
						Token string `json:"token"`
					} `json:"top_logprobs"`
				} `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 3 || resp.Usage.CompletionTokens != 12 {
		t.Fatalf("%s", body)
	}
	for i, c := range resp.Choices {
		var text string
		for _, lp := range c.Logprobs.Content {
			text += lp.Token
			if lp.Logprob > 0 || len(lp.Bytes) != len(lp.Token) || len(lp.TopLogprobs) != 2 || lp.TopLogprobs[0].Token != lp.Token {
				t.Errorf("choice %d entry %+v", i, lp)
			}
		}
		if c.Index != i || text != c.Message.Content || len(c.Logprobs.Content) != 4 {
			t.Errorf("choice %d: index %d tokens %q content %q", i, c.Index, text, c.Message.Content)
		}
	}

	// Streamed: one event per choice per token, each content event with
	// its token's logprobs.
	code, _, body = post(t, url+"/v1/chat/completions",
		`{"model":"qwen3-8b","n":2,"logprobs":true,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	content := map[int]string{}
	finish := map[int]string{}
	for _, ev := range sseEvents(t, body) {
		if ev == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Index int `json:"index"`
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
				Logprobs *struct {
					Content []struct{ Token string } `json:"content"`
				} `json:"logprobs"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(ev), &ch); err != nil {
			t.Fatal(err)
		}
		for _, c := range ch.Choices {
			content[c.Index] += c.Delta.Content
			if c.Delta.Content != "" && (c.Logprobs == nil || c.Logprobs.Content[0].Token != c.Delta.Content) {
				t.Errorf("event %s: logprobs do not match", ev)
			}
			if c.FinishReason != "" {
				finish[c.Index] = c.FinishReason
			}
		}
	}
	if len(content) != 2 || content[0] != content[1] || content[0] == "" || finish[0] != "stop" || finish[1] != "stop" {
		t.Errorf("content %v finish %v", content, finish)
	}
}

func TestThinkInContent(t *testing.T) {
	for _, engine := range []string{EngineVLLM, EngineOllama} {
		t.Run(engine, func(t *testing.T) {
			_, url := startServer(t, Config{Engine: engine, Models: []string{"deepseek-r1:7b"}, DefaultThinking: true, ThinkInContent: true, Tokens: 3, ReasoningTokens: 2})
			path, body := "/v1/chat/completions", `{"model":"deepseek-r1:7b","messages":[{"role":"user","content":"hi"}]}`
			if engine == EngineOllama {
				path, body = "/api/chat", `{"model":"deepseek-r1:7b","stream":false,"messages":[{"role":"user","content":"hi"}]}`
			}
			code, _, b := post(t, url+path, body)
			if code != 200 {
				t.Fatalf("%d %s", code, b)
			}
			var r struct {
				Choices []struct {
					Message struct{ Content, Reasoning string } `json:"message"`
				} `json:"choices"`
				Message struct{ Content, Thinking string } `json:"message"`
			}
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			content, reasoning := r.Message.Content, r.Message.Thinking
			if engine == EngineVLLM {
				content, reasoning = r.Choices[0].Message.Content, r.Choices[0].Message.Reasoning
			}
			if !strings.HasPrefix(content, "<think>\n") || !strings.Contains(content, "\n</think>\n\n") || reasoning != "" {
				t.Errorf("content %q reasoning %q", content, reasoning)
			}
		})
	}
}

// Ollama (>= 0.12.11) returns logprobs as a top-level array of OpenAI-shaped
// entries, per line when streaming.
func TestOllamaLogprobs(t *testing.T) {
	_, url := startServer(t, Config{Engine: EngineOllama, Models: []string{"llama3.2:3b"}, Tokens: 3})
	code, _, body := post(t, url+"/api/chat", `{"model":"llama3.2:3b","stream":false,"logprobs":true,"top_logprobs":1,"messages":[{"role":"user","content":"hi"}]}`)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var r struct {
		Message  struct{ Content string } `json:"message"`
		Logprobs []struct {
			Token       string
			TopLogprobs []struct{ Token string } `json:"top_logprobs"`
		} `json:"logprobs"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	text := ""
	for _, lp := range r.Logprobs {
		text += lp.Token
		if len(lp.TopLogprobs) != 1 {
			t.Errorf("entry %+v", lp)
		}
	}
	if len(r.Logprobs) != 3 || text != r.Message.Content {
		t.Errorf("%s", body)
	}
	code, _, body = post(t, url+"/api/chat", `{"model":"llama3.2:3b","logprobs":true,"messages":[{"role":"user","content":"hi"}]}`)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	n := 0
	for _, line := range ndjson(t, body) {
		if line["done"] == true {
			continue
		}
		lps, _ := line["logprobs"].([]any)
		msg, _ := line["message"].(map[string]any)
		if len(lps) != 1 || lps[0].(map[string]any)["token"] != msg["content"] {
			t.Errorf("line %v", line)
		}
		n++
	}
	if n != 3 {
		t.Errorf("%d content lines", n)
	}
}
