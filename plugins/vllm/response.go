package vllm

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/mindrouter/mindrouter/plugins/internal/rawjson"
	"github.com/mindrouter/mindrouter/plugins/internal/thinktag"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/valyala/fastjson"
)

// DecodeResponse reads a vLLM chat.completion body.
func (a *Adapter) DecodeResponse(c *sdk.Call, body []byte, resp *canon.ChatResponse) error {
	v, err := a.p.ParseBytes(body)
	if err != nil {
		return sdk.BadInput("backend response: invalid JSON: " + err.Error())
	}
	if v.Type() != fastjson.TypeObject {
		return sdk.BadInput("backend response: not a JSON object")
	}
	if msg, ok := errorPayload(v); ok {
		return sdk.BadInput("backend error: " + msg)
	}
	resp.ID = str(v.Get("id"))
	resp.Model = str(v.Get("model"))
	resp.Created = int64Of(v.Get("created"))
	choices := v.Get("choices")
	if choices == nil || choices.Type() != fastjson.TypeArray {
		return sdk.BadInput("backend response: choices: missing or not an array")
	}
	arr, _ := choices.Array()
	if len(arr) > 0 {
		resp.Choices = make([]canon.Choice, 0, len(arr))
	}
	for i, ch := range arr {
		if ch.Type() != fastjson.TypeObject {
			return sdk.BadInput("backend response: choices[" + strconv.Itoa(i) + "]: not an object")
		}
		var out canon.Choice
		out.Index = i
		if iv := ch.Get("index"); iv != nil && iv.Type() == fastjson.TypeNumber {
			out.Index = count(iv)
		}
		m := ch.Get("message")
		out.Message.Role = canon.RoleAssistant
		if m == nil { // a text_completion choice
			completionText(ch, &out.Message)
		}
		if m != nil && m.Type() == fastjson.TypeObject {
			content := contentText(m.Get("content"))
			reasoning := reasoningOf(m)
			if reasoning == "" {
				reasoning, content = splitThink(content)
			}
			if content != "" {
				out.Message.Content = []canon.Part{{Type: canon.PartText, Text: content}}
			}
			out.Message.Reasoning = reasoning
			if tcs := m.GetArray("tool_calls"); len(tcs) > 0 {
				out.Message.ToolCalls = make([]canon.ToolCall, 0, len(tcs))
				for _, tc := range tcs {
					if tc == nil || tc.Type() != fastjson.TypeObject {
						continue
					}
					f := tc.Get("function")
					out.Message.ToolCalls = append(out.Message.ToolCalls, canon.ToolCall{
						ID:        str(tc.Get("id")),
						Name:      str(f.Get("name")),
						Arguments: arguments(f.Get("arguments")),
					})
				}
			}
		}
		out.FinishReason = finishReason(ch.GetStringBytes("finish_reason"), len(out.Message.ToolCalls) > 0)
		out.Logprobs = logprobs(nil, ch.Get("logprobs"))
		resp.Choices = append(resp.Choices, out)
	}
	resp.Usage = usageOf(v.Get("usage"))
	return nil
}

// errorPayload recognises vLLM's error bodies: {"error":{"message":...}}
// (current), {"object":"error","message":...} (older) and a bare
// {"error":"..."} some proxies send.
func errorPayload(v *fastjson.Value) (string, bool) {
	if e := v.Get("error"); e != nil {
		switch e.Type() {
		case fastjson.TypeObject:
			return orDefault(str(e.Get("message")), "unknown error"), true
		case fastjson.TypeString:
			return orDefault(str(e), "unknown error"), true
		}
	}
	if bytes.Equal(v.GetStringBytes("object"), []byte("error")) {
		return orDefault(str(v.Get("message")), "unknown error"), true
	}
	return "", false
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// reasoningOf returns the message's or delta's reasoning text: vLLM named the
// field reasoning_content until 0.10 and reasoning since.
func reasoningOf(m *fastjson.Value) string { return string(reasoningBytes(m)) }

func reasoningBytes(m *fastjson.Value) []byte {
	if b := m.GetStringBytes("reasoning_content"); len(b) > 0 {
		return b
	}
	return m.GetStringBytes("reasoning")
}

// contentText reads message content: a string, null, or (from servers that
// mirror OpenAI's input shape) an array of text parts.
func contentText(v *fastjson.Value) string {
	if v == nil {
		return ""
	}
	switch v.Type() {
	case fastjson.TypeString:
		return str(v)
	case fastjson.TypeArray:
		arr, _ := v.Array()
		var b []byte
		for _, p := range arr {
			b = append(b, p.GetStringBytes("text")...)
		}
		return string(b)
	}
	return ""
}

// arguments is the package-level arguments with its string in a.text.
func (a *Adapter) arguments(v *fastjson.Value) string {
	if v == nil {
		return ""
	}
	switch v.Type() {
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		return a.str(b)
	case fastjson.TypeObject, fastjson.TypeArray:
		n := len(a.text)
		a.text = v.MarshalTo(a.text)
		if len(a.text) == n {
			return ""
		}
		return unsafe.String(&a.text[n], len(a.text)-n)
	}
	return ""
}

// arguments reads tool-call arguments: a JSON string normally, an object
// from a few non-conforming servers (kept as compact JSON text).
func arguments(v *fastjson.Value) string {
	if v == nil {
		return ""
	}
	switch v.Type() {
	case fastjson.TypeString:
		return str(v)
	case fastjson.TypeObject, fastjson.TypeArray:
		return string(v.MarshalTo(nil))
	}
	return ""
}

// splitThink extracts a leading <think>…</think> block from content, for
// reasoning models served without a reasoning parser, by the rule streams
// follow too (thinktag). A whole response also has the form whose opening
// tag was part of the prompt (Qwen3, DeepSeek-R1 templates), where content
// only holds "…</think>answer"; a stream cannot know such text is
// reasoning until the tag comes, so streams pass it through as content.
// Content without the tags comes back unchanged.
func splitThink(content string) (reasoning, rest string) {
	if r, c := thinktag.Split(content); r != "" || c != content {
		return r, c
	}
	const open, closeTag = "<think>", "</think>"
	if end := strings.Index(content, closeTag); end >= 0 && !strings.Contains(content[:end], open) {
		return strings.Trim(content[:end], " \t\r\n"), strings.TrimLeft(content[end+len(closeTag):], " \t\r\n")
	}
	return "", content
}

// logprobs appends a choice's logprobs object (OpenAI's shape) to b as
// compact JSON and returns it; nil when absent, null or not an object.
func logprobs(b []byte, v *fastjson.Value) []byte {
	if v == nil || v.Type() != fastjson.TypeObject {
		return nil
	}
	n := len(b)
	b = rawjson.AppendCompact(b, v)
	return b[n:len(b):len(b)]
}

// finishReason maps vLLM's finish reasons onto canon's. vLLM reports "stop"
// when a tool call ends a turn under a named tool_choice; the turn did end in
// tool calls, which is what every client dialect needs to know (Anthropic's
// stop_reason "tool_use" in particular), so it becomes tool_calls.
func finishReason(b []byte, hadToolCalls bool) canon.FinishReason {
	switch string(b) {
	case "":
		return canon.FinishNone
	case "length":
		return canon.FinishLength
	case "tool_calls", "function_call":
		return canon.FinishToolCalls
	case "content_filter":
		return canon.FinishContentFilter
	}
	// "stop", and vLLM's "abort"/"error" which have no canonical
	// equivalent: the turn is over.
	if hadToolCalls {
		return canon.FinishToolCalls
	}
	return canon.FinishStop
}

// usageOf reads an OpenAI usage object; nil when absent or null.
func usageOf(v *fastjson.Value) *canon.Usage {
	if v == nil || v.Type() != fastjson.TypeObject {
		return nil
	}
	u := &canon.Usage{
		PromptTokens:     count(v.Get("prompt_tokens")),
		CompletionTokens: count(v.Get("completion_tokens")),
		TotalTokens:      count(v.Get("total_tokens")),
		CachedTokens:     count(v.Get("prompt_tokens_details", "cached_tokens")),
		ReasoningTokens:  count(v.Get("completion_tokens_details", "reasoning_tokens")),
	}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	return u
}

// str returns a JSON string's value ("" for anything else).
func str(v *fastjson.Value) string { return string(strBytes(v)) }

// strBytes is str without the copy: the bytes alias the parser's.
func strBytes(v *fastjson.Value) []byte {
	if v == nil || v.Type() != fastjson.TypeString {
		return nil
	}
	b, _ := v.StringBytes()
	return b
}

// int64Of reads a JSON number as an integer, tolerating floats (1.7e9) and
// clamping to ±2^53; anything else is 0.
func int64Of(v *fastjson.Value) int64 {
	if v == nil || v.Type() != fastjson.TypeNumber {
		return 0
	}
	f, err := v.Float64()
	if err != nil || math.IsNaN(f) {
		return 0
	}
	const lim = 1 << 53
	switch {
	case f > lim:
		return lim
	case f < -lim:
		return -lim
	}
	return int64(f)
}

func intOf(v *fastjson.Value) int {
	n := int64Of(v)
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	if n < math.MinInt32 {
		return math.MinInt32
	}
	return int(n)
}

// count is intOf for token counts and indexes: never negative.
func count(v *fastjson.Value) int {
	n := intOf(v)
	if n < 0 {
		return 0
	}
	return n
}
