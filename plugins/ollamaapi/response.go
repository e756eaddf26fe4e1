package ollamaapi

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// EncodeResponse writes a complete /api/chat or /api/generate response
// (meta route says which): the first choice as one done:true object.
// Every usage field real Ollama sends is there (clients such as
// ollama-ai-provider-v2 validate them): the token counts, and the
// durations (total_duration, load_duration, prompt_eval_duration,
// eval_duration) as 0, because the canonical response carries no backend
// phase timings. Generate's deprecated "context" is omitted.
func (t *Translator) EncodeResponse(c *sdk.Call, resp *canon.ChatResponse, out *sdk.Output) error {
	var h header
	h.read(c)
	gen := isGenerate(c)
	var m *canon.Message
	fr := canon.FinishStop
	if len(resp.Choices) > 0 {
		ch := &resp.Choices[0]
		for i := range resp.Choices { // choice 0, wherever it is
			if resp.Choices[i].Index == 0 {
				ch = &resp.Choices[i]
				break
			}
		}
		m, fr = &ch.Message, ch.FinishReason
	} else {
		m = &canon.Message{}
	}
	b := h.appendOpen(out.Body, resp.Model, resp.Created)
	if gen {
		b = jsonw.String(append(b, `"response":`...), m.Text())
		if m.Reasoning != "" {
			b = jsonw.String(append(b, `,"thinking":`...), m.Reasoning)
		}
		b = t.appendCalls(c, b, m.ToolCalls)
	} else {
		b = jsonw.String(append(b, `"message":{"role":"assistant","content":`...), m.Text())
		if m.Reasoning != "" {
			b = jsonw.String(append(b, `,"thinking":`...), m.Reasoning)
		}
		b = append(t.appendCalls(c, b, m.ToolCalls), '}')
	}
	out.Body = appendDone(b, fr, resp.Usage)
	return nil
}

func isGenerate(c *sdk.Call) bool {
	r, _ := c.MetaBytes(abi.MetaRoute)
	return string(r) == RouteGenerate
}

// appendDone writes `,"done":true,"done_reason":…`, the durations and
// the token counts (0 when the backend reported none), closing the object:
// the final object of real Ollama always has all of them.
func appendDone(b []byte, fr canon.FinishReason, u *canon.Usage) []byte {
	b = append(b, `,"done":true,"done_reason":`...)
	b = append(b, doneReason(fr)...)
	var in, out int64
	if u != nil {
		in, out = int64(u.PromptTokens), int64(u.CompletionTokens)
	}
	b = append(b, `,"total_duration":0,"load_duration":0,"prompt_eval_count":`...)
	b = jsonw.Int(b, in)
	b = append(b, `,"prompt_eval_duration":0,"eval_count":`...)
	b = jsonw.Int(b, out)
	return append(b, `,"eval_duration":0}`...)
}

// doneReason maps a canonical finish reason to Ollama's done_reason, which
// is "stop" or "length" (a turn that called tools ends with "stop").
func doneReason(fr canon.FinishReason) string {
	if fr == canon.FinishLength {
		return `"length"`
	}
	return `"stop"`
}

// appendCalls writes `,"tool_calls":[…]` for complete calls (nothing when
// there are none).
func (t *Translator) appendCalls(c *sdk.Call, b []byte, calls []canon.ToolCall) []byte {
	if len(calls) == 0 {
		return b
	}
	b = append(b, `,"tool_calls":[`...)
	for i := range calls {
		if i > 0 {
			b = append(b, ',')
		}
		b = t.appendCall(c, b, i, calls[i].ID, calls[i].Name, calls[i].Arguments)
	}
	return append(b, ']')
}

// appendCall writes one Ollama tool call: {"id", "function": {"index",
// "name", "arguments": {…}}}. Ollama's arguments are a JSON object, so the
// canonical JSON text is parsed and written compactly (which also keeps
// an NDJSON line free of newlines); text that is not an object becomes {}
// with a warning in the plugin log.
func (t *Translator) appendCall(c *sdk.Call, b []byte, index int, id, name, args string) []byte {
	b = append(b, '{')
	if id != "" {
		b = append(jsonw.String(append(b, `"id":`...), id), ',')
	}
	b = append(b, `"function":{"index":`...)
	b = jsonw.Int(b, int64(index))
	b = jsonw.String(append(b, `,"name":`...), name)
	b = append(b, `,"arguments":`...)
	var v *fastjson.Value
	err := fastjson.Validate(args) // the parser alone is lenient
	if err == nil {
		v, err = t.p.Parse(args)
	}
	switch {
	case err == nil && v.Type() == fastjson.TypeObject:
		b = appendCompact(b, v)
	default:
		if args != "" {
			c.Log(4, "ollama-api: tool call "+name+": arguments are not a JSON object; sent as {}")
		}
		b = append(b, "{}"...)
	}
	return append(b, "}}"...)
}
