package ollama

import (
	"strconv"

	"github.com/mindrouter/mindrouter/plugins/internal/rawjson"
	"github.com/mindrouter/mindrouter/plugins/internal/thinktag"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/valyala/fastjson"
)

// DecodeResponse parses a non-streamed /api/chat response. The response id
// is left empty: the gateway assigns ids.
func (a *Adapter) DecodeResponse(c *sdk.Call, body []byte, resp *canon.ChatResponse) error {
	v, err := a.parseObject(body, "response")
	if err != nil {
		return err
	}
	if e := v.Get("error"); e != nil && e.Type() != fastjson.TypeNull {
		return sdk.BadInput("backend error: " + errorText(e))
	}
	resp.Model = string(v.GetStringBytes("model"))
	resp.Created = parseCreated(v.GetStringBytes("created_at"))
	resp.Choices = make([]canon.Choice, 1)
	ch := &resp.Choices[0]
	m := &ch.Message
	m.Role = canon.RoleAssistant
	if text, ok := generateText(v); ok && text != "" { // a raw /api/generate answer: no <think> split
		m.Content = []canon.Part{{Type: canon.PartText, Text: text}}
	}
	if msg := v.Get("message"); msg != nil && msg.Type() != fastjson.TypeNull {
		if msg.Type() != fastjson.TypeObject {
			return sdk.BadInput("ollama response: message is not an object")
		}
		content := string(msg.GetStringBytes("content"))
		m.Reasoning = string(msg.GetStringBytes("thinking"))
		if m.Reasoning == "" {
			// think unset: some models write their thinking in content.
			m.Reasoning, content = thinktag.Split(content)
		}
		if content != "" {
			m.Content = []canon.Part{{Type: canon.PartText, Text: content}}
		}
		calls, err := toolCalls(msg)
		if err != nil {
			return err
		}
		if len(calls) > 0 {
			m.ToolCalls = make([]canon.ToolCall, len(calls))
			for i, tc := range calls {
				t := &m.ToolCalls[i]
				t.ID, t.Name, t.Arguments, err = a.toolCall(tc, i)
				if err != nil {
					return err
				}
			}
		}
	}
	ch.FinishReason = finishReason(len(m.ToolCalls) > 0, v.GetStringBytes("done_reason"))
	ch.Logprobs = logprobs(v.Get("logprobs"))
	resp.Usage = usage(v)
	return nil
}

// logprobs maps Ollama's logprobs, an array of {token, logprob, bytes,
// top_logprobs} (api.Logprob, Ollama ≥ 0.12.11), to OpenAI's choice
// logprobs object, which holds the same entries under "content"; nil when
// absent or not an array.
func logprobs(v *fastjson.Value) []byte {
	if v == nil || v.Type() != fastjson.TypeArray {
		return nil
	}
	b := append([]byte(nil), `{"content":`...)
	b = rawjson.AppendCompact(b, v)
	return append(b, '}')
}

// parseObject parses one JSON object with the adapter's parser. Strings read
// from the result alias the parser and must be copied before the next parse.
func (a *Adapter) parseObject(b []byte, what string) (*fastjson.Value, error) {
	v, err := a.p.ParseBytes(b)
	if err != nil {
		return nil, sdk.BadInput("ollama " + what + ": invalid JSON: " + err.Error())
	}
	if v.Type() != fastjson.TypeObject {
		return nil, sdk.BadInput("ollama " + what + ": not a JSON object")
	}
	return v, nil
}

// toolCalls returns message.tool_calls (nil when absent or null).
func toolCalls(msg *fastjson.Value) ([]*fastjson.Value, error) {
	v := msg.Get("tool_calls")
	if v == nil || v.Type() == fastjson.TypeNull {
		return nil, nil
	}
	calls, err := v.Array()
	if err != nil {
		return nil, sdk.BadInput("ollama: message.tool_calls is not an array")
	}
	return calls, nil
}

// toolCall reads one Ollama tool call. Ollama sends arguments as a JSON
// object; canonical arguments are JSON text, so the object is re-encoded
// compactly. A call without an id gets "call_<n>".
func (a *Adapter) toolCall(v *fastjson.Value, n int) (id, name, args string, err error) {
	fn := v.Get("function")
	if fn == nil || fn.Type() != fastjson.TypeObject {
		return "", "", "", sdk.BadInput("ollama: tool_calls[" + strconv.Itoa(n) + "].function is not an object")
	}
	nb := fn.GetStringBytes("name")
	if len(nb) == 0 {
		return "", "", "", sdk.BadInput("ollama: tool_calls[" + strconv.Itoa(n) + "].function.name is missing")
	}
	name = string(nb)
	switch av := fn.Get("arguments"); {
	case av == nil || av.Type() == fastjson.TypeNull:
		args = "{}"
	case av.Type() == fastjson.TypeString:
		args = string(av.GetStringBytes())
	default:
		a.scratch = appendCompact(a.scratch[:0], av)
		args = string(a.scratch)
	}
	if idb := v.GetStringBytes("id"); len(idb) > 0 {
		id = string(idb)
	} else {
		id = "call_" + strconv.Itoa(n)
	}
	return id, name, args, nil
}

// appendCompact writes v as compact JSON (see rawjson.AppendCompact).
func appendCompact(b []byte, v *fastjson.Value) []byte { return rawjson.AppendCompact(b, v) }

// finishReason maps Ollama's done_reason ("stop", "length", "load", ...)
// to the canonical vocabulary; tool calls win.
func finishReason(tools bool, doneReason []byte) canon.FinishReason {
	switch {
	case tools:
		return canon.FinishToolCalls
	case string(doneReason) == "length":
		return canon.FinishLength
	}
	return canon.FinishStop
}

// usage reads the token counts of a final (done) Ollama message.
func usage(v *fastjson.Value) *canon.Usage {
	p, e := count(v, "prompt_eval_count"), count(v, "eval_count")
	return &canon.Usage{PromptTokens: p, CompletionTokens: e, TotalTokens: p + e}
}

// count reads a non-negative token count; anything else counts as 0.
func count(v *fastjson.Value, key string) int {
	n := v.GetInt(key)
	if n < 0 || int64(n) > 1<<40 {
		return 0
	}
	return n
}

// errorText returns an "error" member's message: the string itself, an
// object's "message", or the compact JSON of anything else.
func errorText(e *fastjson.Value) string {
	switch e.Type() {
	case fastjson.TypeString:
		return string(e.GetStringBytes())
	case fastjson.TypeObject:
		if m := e.GetStringBytes("message"); m != nil {
			return string(m)
		}
	}
	return string(appendCompact(nil, e))
}
