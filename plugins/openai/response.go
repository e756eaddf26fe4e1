package openai

import (
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// EncodeResponse writes a chat.completion object (a text_completion one
// on the completions route).
func (t *Translator) EncodeResponse(c *sdk.Call, resp *canon.ChatResponse, out *sdk.Output) error {
	if completionRoute(c) {
		return t.encodeCompletion(c, resp, out)
	}
	var h header
	h.read(c, resp.ID, resp.Model, resp.Created)
	b := h.append(out.Body, "chat.completion")
	b = append(b, `,"choices":[`...)
	for i := range resp.Choices {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendChoice(b, &h, &resp.Choices[i])
	}
	b = append(b, ']')
	if resp.Usage != nil {
		b = appendUsage(append(b, `,"usage":`...), resp.Usage)
	}
	out.Body = append(b, `,"system_fingerprint":null}`...)
	return nil
}

func appendChoice(b []byte, h *header, ch *canon.Choice) []byte {
	m := &ch.Message
	b = append(b, `{"index":`...)
	b = jsonw.Int(b, int64(ch.Index))
	b = append(b, `,"message":{"role":"assistant","content":`...)
	text := m.Text()
	if text == "" && len(m.ToolCalls) > 0 {
		b = append(b, "null"...)
	} else {
		b = jsonw.String(b, text)
	}
	b = append(b, `,"refusal":null`...)
	if m.Reasoning != "" {
		b = jsonw.String(append(b, `,"reasoning_content":`...), m.Reasoning)
	}
	if len(m.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for j := range m.ToolCalls {
			tc := &m.ToolCalls[j]
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			if tc.ID != "" {
				b = jsonw.String(b, tc.ID)
			} else {
				b = h.appendCallID(b, j)
			}
			b = append(b, `,"type":"function","function":{"name":`...)
			b = jsonw.String(b, tc.Name)
			b = append(b, `,"arguments":`...)
			b = jsonw.String(b, arguments(tc.Arguments))
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	b = appendLogprobs(append(b, `},"logprobs":`...), ch.Logprobs)
	b = append(b, `,"finish_reason":`...)
	switch {
	case ch.FinishReason != canon.FinishNone:
		b = jsonw.String(b, string(ch.FinishReason))
	case len(m.ToolCalls) > 0:
		b = append(b, `"tool_calls"`...)
	default:
		b = append(b, `"stop"`...)
	}
	return append(b, '}')
}

// appendLogprobs writes the backend's logprobs object as it came (OpenAI's
// shape; see canon.Choice.Logprobs), null when there is none.
func appendLogprobs(b, raw []byte) []byte {
	if len(raw) == 0 {
		return append(b, "null"...)
	}
	return append(b, raw...)
}

// arguments returns a complete call's arguments, "{}" when the model gave
// none, so clients that parse them always see a JSON object.
func arguments(s string) string {
	if s == "" {
		return "{}"
	}
	return s
}

// appendUsage writes an OpenAI usage object. The detail objects appear only
// when the backend reported those counts.
func appendUsage(b []byte, u *canon.Usage) []byte {
	total := u.TotalTokens
	if total == 0 {
		total = u.PromptTokens + u.CompletionTokens
	}
	b = append(b, `{"prompt_tokens":`...)
	b = jsonw.Int(b, int64(u.PromptTokens))
	b = append(b, `,"completion_tokens":`...)
	b = jsonw.Int(b, int64(u.CompletionTokens))
	b = append(b, `,"total_tokens":`...)
	b = jsonw.Int(b, int64(total))
	if u.CachedTokens > 0 {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = append(jsonw.Int(b, int64(u.CachedTokens)), '}')
	}
	if u.ReasoningTokens > 0 {
		b = append(b, `,"completion_tokens_details":{"reasoning_tokens":`...)
		b = append(jsonw.Int(b, int64(u.ReasoningTokens)), '}')
	}
	return append(b, '}')
}
