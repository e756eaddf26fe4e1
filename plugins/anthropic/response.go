package anthropic

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// EncodeResponse writes a Message object
// (https://docs.claude.com/en/api/messages): a thinking block when the
// model reasoned, one text block, then a tool_use block per call.
func (t *Translator) EncodeResponse(c *sdk.Call, resp *canon.ChatResponse, out *sdk.Output) error {
	b := append(out.Body, `{"id":`...)
	b = appendMessageID(b, c, resp.ID)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendModel(b, c, resp.Model)
	b = append(b, `,"content":[`...)
	var fr canon.FinishReason
	var calls bool
	if len(resp.Choices) > 0 {
		ch := &resp.Choices[0] // the Messages API has one choice
		m := &ch.Message
		fr, calls = ch.FinishReason, len(m.ToolCalls) > 0
		start := len(b)
		if m.Reasoning != "" {
			b = append(b, `{"type":"thinking","thinking":`...)
			b = jsonw.String(b, m.Reasoning)
			b = append(b, `,"signature":""}`...)
		}
		if text := m.Text(); text != "" {
			if len(b) > start {
				b = append(b, ',')
			}
			b = append(b, `{"type":"text","text":`...)
			b = jsonw.String(b, text)
			b = append(b, '}')
		}
		for j := range m.ToolCalls {
			tc := &m.ToolCalls[j]
			if len(b) > start {
				b = append(b, ',')
			}
			b = append(b, `{"type":"tool_use","id":`...)
			b = appendToolID(b, c, resp.ID, tc.ID, j)
			b = append(b, `,"name":`...)
			b = jsonw.String(b, tc.Name)
			b = append(b, `,"input":`...)
			b = t.appendInput(b, tc.Arguments)
			b = append(b, '}')
		}
	}
	b = append(b, `],"stop_reason":`...)
	b = jsonw.String(b, stopReason(fr, calls))
	b = append(b, `,"stop_sequence":null,"usage":`...)
	var u canon.Usage
	if resp.Usage != nil {
		u = *resp.Usage
	}
	b = appendUsage(b, &u)
	out.Body = append(b, '}')
	return nil
}

// appendInput writes a complete call's arguments as the input object.
// Anthropic's input is always an object: arguments that are not one (a
// call cut off by max_tokens, a backend's odd output) become {}.
func (t *Translator) appendInput(b []byte, args string) []byte {
	if args == "" {
		return append(b, "{}"...)
	}
	if fastjson.Validate(args) == nil {
		if v, err := t.p.Parse(args); err == nil && v.Type() == fastjson.TypeObject {
			return v.MarshalTo(b) // compact, as the API sends it
		}
	}
	return append(b, "{}"...)
}

// stopReason maps a canonical finish reason to Anthropic's stop_reason. A
// turn with tool calls ends with tool_use whatever the backend said (vLLM
// finishes a named tool_choice with "stop"): that is what tells a client's
// agent loop to run the tools.
func stopReason(fr canon.FinishReason, calls bool) string {
	switch {
	case fr == canon.FinishLength:
		return "max_tokens"
	case calls || fr == canon.FinishToolCalls:
		return "tool_use"
	case fr == canon.FinishContentFilter:
		return "refusal"
	}
	return "end_turn"
}

// appendUsage writes {"input_tokens", "cache_creation_input_tokens",
// "cache_read_input_tokens", "output_tokens"}. Anthropic's input_tokens
// excludes cache reads, OpenAI's prompt_tokens includes them.
func appendUsage(b []byte, u *canon.Usage) []byte {
	in, cached := u.PromptTokens, u.CachedTokens
	if cached < 0 || cached > in {
		cached = 0
	}
	b = append(b, `{"input_tokens":`...)
	b = jsonw.Int(b, int64(in-cached))
	b = append(b, `,"cache_creation_input_tokens":0,"cache_read_input_tokens":`...)
	b = jsonw.Int(b, int64(cached))
	b = append(b, `,"output_tokens":`...)
	b = jsonw.Int(b, int64(u.CompletionTokens))
	return append(b, '}')
}

// idPrefix is the gateway's request id prefix ("chatcmpl-<32 hex>").
const idPrefix = "chatcmpl-"

// idSuffix returns the gateway's request id (meta) or else the backend's,
// without an OpenAI-style prefix.
func idSuffix(c *sdk.Call, backendID string) string {
	id, _ := c.MetaBytes(abi.MetaID)
	s := string(id)
	if s == "" {
		s = backendID
	}
	if len(s) > len(idPrefix) && s[:len(idPrefix)] == idPrefix {
		s = s[len(idPrefix):]
	}
	return s
}

// appendMessageID writes "msg_<id>": the gateway's request id with
// Anthropic's prefix, so a response and its X-Request-ID match.
func appendMessageID(b []byte, c *sdk.Call, backendID string) []byte {
	b = append(b, `"msg_`...)
	b = jsonw.Escaped(b, idSuffix(c, backendID))
	return append(b, '"')
}

// appendToolID writes the backend's call id, or "toolu_<id>_<index>" when
// it gave none (stable within a response, so the tool_result can name it).
func appendToolID(b []byte, c *sdk.Call, backendID, id string, index int) []byte {
	if id != "" {
		return jsonw.String(b, id)
	}
	b = append(b, `"toolu_`...)
	b = jsonw.Escaped(b, idSuffix(c, backendID))
	b = append(b, '_')
	b = jsonw.Int(b, int64(index))
	return append(b, '"')
}

// appendModel writes the gateway's model name (meta) or else the backend's.
func appendModel(b []byte, c *sdk.Call, model string) []byte {
	if m, ok := c.MetaBytes(abi.MetaModel); ok && len(m) > 0 {
		return jsonw.Bytes(b, m)
	}
	return jsonw.String(b, model)
}
