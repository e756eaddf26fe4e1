package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// Claude Code's request shapes (issue 20, items 1 and 2), sent with the
// official anthropic-sdk-go v2 Beta Messages API as Claude Code sends them
// (/v1/messages?beta=true, anthropic-beta
// mid-conversation-tool-changes-2026-07-01): a mid-conversation system
// message in messages, and thinking {"type":"adaptive","display":"omitted"}
// on every request, to a model that thinks (qwen3-8b on vLLM, qwen3:4b on
// Ollama) and to one that cannot (llama3.2:3b on Ollama, whose /api/show
// capabilities lack "thinking"). The plugin-level fixture of the same
// shape is plugins/anthropic/testdata/requests/claude_code_mid_system.req.json.

const (
	claudeCodeBeta = anthropic.AnthropicBetaMidConversationToolChanges2026_07_01
	claudeCodeEnv  = "# Environment\nYou have been invoked in the following environment:\n - Primary working directory: /tmp/proj\n - Platform: linux"
)

// claudeCodeParams is a main-loop turn as Claude Code sends it: system
// blocks, the user's prompt, the mid-conversation system message, a tool
// and adaptive thinking with display omitted.
func claudeCodeParams(model string) anthropic.BetaMessageNewParams {
	return anthropic.BetaMessageNewParams{
		Model:     anthropic.Model(model),
		MaxTokens: 1024,
		Betas:     []anthropic.AnthropicBeta{claudeCodeBeta},
		System: []anthropic.BetaTextBlockParam{
			{Text: "You are Claude Code, Anthropic's official CLI for Claude."},
			{Text: "\nYou are an interactive CLI tool that helps users with software engineering tasks."},
		},
		Messages: []anthropic.BetaMessageParam{
			anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("List the Go files in this directory.")),
			anthropic.NewBetaSystemMessage(anthropic.BetaSystemMessageOutputConfigParam{},
				anthropic.BetaSystemMessageParamContentUnion{OfText: &anthropic.BetaTextBlockParam{Text: claudeCodeEnv}}),
		},
		Thinking: anthropic.BetaThinkingConfigParamUnion{OfAdaptive: &anthropic.BetaThinkingConfigAdaptiveParam{
			Display: anthropic.BetaThinkingConfigAdaptiveDisplayOmitted}},
	}
}

// backendMessages returns the roles and the first message's text of the
// last chat body model's backend got.
func backendMessages(t *testing.T, e *env, model string) (roles []string, first string, body string) {
	t.Helper()
	b := lastBackendBody(e, model)
	var v struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("backend body %s: %v", b, err)
	}
	for i, m := range v.Messages {
		roles = append(roles, m.Role)
		if i == 0 {
			var s string
			if json.Unmarshal(m.Content, &s) != nil {
				s = string(m.Content)
			}
			first = s
		}
	}
	return roles, first, string(b)
}

func betaBlocks(m *anthropic.BetaMessage) (thinking, text string) {
	for _, b := range m.Content {
		switch v := b.AsAny().(type) {
		case anthropic.BetaThinkingBlock:
			thinking += v.Thinking
		case anthropic.BetaTextBlock:
			text += v.Text
		}
	}
	return thinking, text
}

// TestClaudeCode_MidConversationSystem (item 1): the mid-conversation
// system message is taken, streamed and not, on both engines, and reaches
// the backend merged into the system prompt (the one system message, first);
// one the gateway cannot take answers the error code Claude Code looks for
// before it resends without the message.
func TestClaudeCode_MidConversationSystem(t *testing.T) {
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	c := anthropicClient(e, false, adminKey)
	ctx := context.Background()
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			p := claudeCodeParams(model)
			msg, err := c.Beta.Messages.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if _, text := betaBlocks(msg); text == "" {
				t.Fatalf("message %s", msg.RawJSON())
			}
			roles, first, body := backendMessages(t, e, model)
			if len(roles) != 2 || roles[0] != "system" || roles[1] != "user" ||
				!strings.HasPrefix(first, "You are Claude Code") || !strings.Contains(first, "\n\n# Environment") {
				t.Fatalf("backend got %s", body)
			}

			stream := c.Beta.Messages.NewStreaming(ctx, p)
			var acc anthropic.BetaMessage
			for stream.Next() {
				if err := acc.Accumulate(stream.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if _, text := betaBlocks(&acc); text == "" || acc.StopReason == "" {
				t.Fatalf("streamed %s", acc.RawJSON())
			}

			// A tool change block (the same beta's tool_addition) cannot be
			// part of a system prompt: 400 with error.details.error_code.
			p.Messages[1] = anthropic.NewBetaSystemMessage(anthropic.BetaSystemMessageOutputConfigParam{},
				anthropic.BetaSystemMessageParamContentUnion{OfToolAddition: &anthropic.BetaRequestToolAdditionBlockParam{
					Tool: anthropic.BetaRequestToolAdditionBlockToolUnionParam{OfToolReference: &anthropic.BetaToolChangeToolReferenceParam{Name: "Bash"}}}})
			_, err = c.Beta.Messages.New(ctx, p)
			var ae *anthropic.Error
			if !errors.As(err, &ae) || ae.StatusCode != 400 || string(ae.Type()) != "invalid_request_error" {
				t.Fatalf("tool_addition: %v, want 400 invalid_request_error", err)
			}
			var body2 struct {
				Error struct {
					Details struct {
						ErrorCode string `json:"error_code"`
					} `json:"details"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(ae.RawJSON()), &body2); err != nil || body2.Error.Details.ErrorCode != "mid_conversation_system_not_supported" {
				t.Fatalf("tool_addition: error body %s", ae.RawJSON())
			}
		})
	}
}

// TestClaudeCode_AdaptiveThinking (item 2): adaptive thinking (and enabled
// thinking with a budget) to a model that cannot think is served without
// thinking, the backend never asked to think; to a model that thinks it
// still thinks. What the Messages API itself refuses stays a 400.
func TestClaudeCode_AdaptiveThinking(t *testing.T) {
	e := startEnv(t, fakellm.Config{}, fakellm.Config{Models: []string{ollamaModel, ollamaThinker}}, "")
	c := anthropicClient(e, false, adminKey)
	ctx := context.Background()
	enabled := anthropic.BetaThinkingConfigParamOfEnabled(1024)
	for _, tc := range []struct {
		model string
		think bool
	}{{ollamaModel, false}, {ollamaThinker, true}, {vllmModel, true}} {
		t.Run(tc.model, func(t *testing.T) {
			for _, mode := range []string{"adaptive", "enabled"} {
				p := claudeCodeParams(tc.model)
				p.MaxTokens = 2048
				if mode == "enabled" {
					p.Thinking = enabled
				}
				msg, err := c.Beta.Messages.New(ctx, p)
				if err != nil {
					t.Fatalf("%s: %v", mode, err)
				}
				thinking, text := betaBlocks(msg)
				if text == "" || (thinking != "") != tc.think {
					t.Fatalf("%s: message %s", mode, msg.RawJSON())
				}
				if tc.model != vllmModel {
					sent := string(e.ollama.LastBody("/api/chat"))
					if strings.Contains(sent, `"think":true`) != tc.think {
						t.Fatalf("%s: backend got %s", mode, sent)
					}
				}

				stream := c.Beta.Messages.NewStreaming(ctx, p)
				var acc anthropic.BetaMessage
				for stream.Next() {
					if err := acc.Accumulate(stream.Current()); err != nil {
						t.Fatal(err)
					}
				}
				if err := stream.Err(); err != nil {
					t.Fatalf("%s streamed: %v", mode, err)
				}
				if sthinking, stext := betaBlocks(&acc); stext != text || sthinking != thinking {
					t.Fatalf("%s: streamed %s, non-streamed %s", mode, acc.RawJSON(), msg.RawJSON())
				}
			}

			// budget_tokens the Messages API refuses is still a 400.
			_, err := c.Beta.Messages.New(ctx, claudeCodeParams(tc.model), aoption.WithJSONSet("thinking", map[string]any{"type": "enabled", "budget_tokens": 0}))
			var ae *anthropic.Error
			if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.Message, "budget_tokens") {
				t.Fatalf("budget_tokens 0: %v, want 400", err)
			}
		})
	}
}

// TestClaudeCode_PromptTooLong (item 6): an input over the model's window
// is refused in Anthropic's own words, which Claude Code matches before it
// compacts the conversation: "prompt is too long: N tokens > M maximum".
func TestClaudeCode_PromptTooLong(t *testing.T) {
	e := startEnv(t, fakellm.Config{MaxModelLen: ctxWindow}, fakellm.Config{}, "")
	c := anthropicClient(e, false, adminKey)
	p := claudeCodeParams(vllmModel)
	p.Messages[0] = anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock(strings.Repeat("word ", 2*ctxWindow)))
	_, err := c.Beta.Messages.New(context.Background(), p)
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 || string(ae.Type()) != "invalid_request_error" ||
		!strings.HasPrefix(ae.Message, "prompt is too long: ") || !strings.HasSuffix(ae.Message, " tokens > 1000 maximum") {
		t.Fatalf("%v, want 400 prompt is too long: N tokens > %d maximum", err, ctxWindow)
	}
}
