package gateway

import (
	"context"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3/shared"
	"google.golang.org/genai"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

// Thinking nobody asked for (issue 20, item 8): a request that says
// nothing about reasoning, to a Qwen3-style model whose own default is to
// think (fakellm DefaultThinking, as Qwen3's chat template), gets the
// operator's per-model thinking_default in every dialect: "off" (the
// default) sends vLLM chat_template_kwargs.enable_thinking false and
// Ollama think false, and no reasoning comes back; "model" sends nothing
// (the model thinks); "on" sends the switch on. A request that asks for
// reasoning gets it whatever the default.

// thinkDialects send "Why is the sky blue?" to model in each dialect,
// through its official SDK, and return the reasoning that came back
// (Gemini's thoughts are shown only when asked, so "" there).
var thinkDialects = []struct {
	name string
	ask  func(t *testing.T, e *env, model string) (reasoning string)
}{
	{"openai", func(t *testing.T, e *env, model string) string {
		r, err := e.client.Chat.Completions.New(context.Background(), chatParams(model, "Why is the sky blue?"))
		if err != nil {
			t.Fatal(err)
		}
		return extraString(t, r.Choices[0].Message.JSON.ExtraFields["reasoning_content"].Raw())
	}},
	{"responses", func(t *testing.T, e *env, model string) string {
		r, err := e.client.Responses.New(context.Background(), respParams(model, "Why is the sky blue?"))
		if err != nil {
			t.Fatal(err)
		}
		var reasoning string
		for _, it := range r.Output {
			if it.Type == "reasoning" {
				for _, c := range it.Content {
					reasoning += c.Text
				}
				for _, s := range it.Summary {
					reasoning += s.Text
				}
				if reasoning == "" {
					reasoning = "(a reasoning item)"
				}
			}
		}
		return reasoning
	}},
	{"anthropic", func(t *testing.T, e *env, model string) string {
		c := anthropicClient(e, false, adminKey)
		m, err := c.Messages.New(context.Background(), anthropicParams(model, "Why is the sky blue?"))
		if err != nil {
			t.Fatal(err)
		}
		thinking, _, _ := blocksOf(m)
		return thinking
	}},
	{"ollama", func(t *testing.T, e *env, model string) string {
		msg, _, _ := chatOnce(t, ollamaClient(t, e), api.ChatRequest{Model: model,
			Messages: []api.Message{{Role: "user", Content: "Why is the sky blue?"}}}, false)
		return msg.Thinking
	}},
	{"gemini", func(t *testing.T, e *env, model string) string {
		if _, err := geminiClient(t, e, false).Models.GenerateContent(context.Background(), model, genai.Text("Why is the sky blue?"), nil); err != nil {
			t.Fatal(err)
		}
		return ""
	}},
}

func TestThinkingDefault_EveryDialect(t *testing.T) {
	t.Parallel()
	thinkingDefaults(t, true)
}

// The same through the first-party bundle (the production plugins.yaml),
// whose OpenAI-to-vLLM patch rewrites the body itself (Gemini's
// translator is a module of its own, outside the bundle).
func TestThinkingDefault_Bundle(t *testing.T) {
	bundle, err := testutil.BuildBundle()
	if err != nil {
		t.Fatal(err)
	}
	withPlugins(t, bundle, func() { thinkingDefaults(t, false) })
}

func thinkingDefaults(t *testing.T, gemini bool) {
	const ollamaThinker = "qwen3:8b"
	for _, tc := range []struct {
		name, yaml    string
		modelThinks   bool
		vllmSwitch    string // what the vLLM body carries ("": no enable_thinking)
		ollamaSwitch  string
		wantReasoning bool
	}{
		{"off by default", "", true, `"enable_thinking":false`, `"think":false`, false},
		{"model", "models: {\"qwen3*\": {thinking_default: model}}\n", true, "", "", true},
		{"on", "models: {\"*\": {thinking_default: \"on\"}}\n", false, `"enable_thinking":true`, `"think":true`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := startEnv(t, fakellm.Config{DefaultThinking: tc.modelThinks}, fakellm.Config{DefaultThinking: tc.modelThinks, Models: []string{ollamaThinker}}, tc.yaml)
			for _, d := range thinkDialects {
				if d.name == "gemini" && !gemini {
					continue
				}
				for _, model := range []string{vllmModel, ollamaThinker} {
					reasoning := d.ask(t, e, model)
					body, want := string(e.vllm.LastBody("/v1/chat/completions")), tc.vllmSwitch
					if model == ollamaThinker {
						body, want = string(e.ollama.LastBody("/api/chat")), tc.ollamaSwitch
					}
					if want == "" && (strings.Contains(body, "enable_thinking") || strings.Contains(body, `"think":`)) ||
						want != "" && !strings.Contains(body, want) {
						t.Errorf("%s %s: backend got %s, want %q", d.name, model, body, want)
					}
					if d.name != "gemini" && (reasoning != "") != tc.wantReasoning {
						t.Errorf("%s %s: reasoning %q, want some: %v", d.name, model, reasoning, tc.wantReasoning)
					}
				}
			}
			if tc.name != "off by default" {
				return
			}
			// Asked for, reasoning comes whatever the default.
			p := chatParams(vllmModel, "Why is the sky blue?")
			p.ReasoningEffort = shared.ReasoningEffortHigh
			r, err := e.client.Chat.Completions.New(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if extraString(t, r.Choices[0].Message.JSON.ExtraFields["reasoning_content"].Raw()) == "" {
				t.Errorf("reasoning_effort high: no reasoning; backend got %s", e.vllm.LastBody("/v1/chat/completions"))
			}
		})
	}
}
