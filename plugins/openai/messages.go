package openai

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
)

// decodeMessages reads the messages array.
func decodeMessages(v *fastjson.Value, req *canon.ChatRequest) error {
	if v == nil {
		return jsonread.ErrRequired("messages")
	}
	arr, err := v.Array()
	if err != nil || len(arr) == 0 {
		return jsonread.ErrType("messages", "a non-empty array")
	}
	req.Messages = make([]canon.Message, len(arr))
	for i, mv := range arr {
		if err := decodeMessage(mv, i, &req.Messages[i]); err != nil {
			return err
		}
	}
	return nil
}

// msgFields holds one message's fields (nil: absent or null).
type msgFields struct {
	role, content, name, toolCalls, toolCallID *fastjson.Value
	reasoningContent, reasoning, functionCall  *fastjson.Value
}

func (f *msgFields) set(k []byte, v *fastjson.Value) {
	switch string(k) {
	case "role":
		f.role = v
	case "content":
		f.content = v
	case "name":
		f.name = v
	case "tool_calls":
		f.toolCalls = v
	case "tool_call_id":
		f.toolCallID = v
	case "reasoning_content":
		f.reasoningContent = v
	case "reasoning":
		f.reasoning = v
	case "function_call":
		f.functionCall = v
	}
}

func decodeMessage(v *fastjson.Value, i int, m *canon.Message) error {
	o, err := v.Object()
	if err != nil {
		return jsonread.ErrType(jsonread.At("messages", i), "an object")
	}
	var f msgFields
	jsonread.Visit(o, f.set)
	if err := decodeRole(f.role, i, m); err != nil {
		return err
	}
	if err := decodeContent(f.content, i, m); err != nil {
		return err
	}
	if f.name != nil {
		s, ok := jsonread.Str(f.name)
		if !ok {
			return jsonread.ErrType(jsonread.MsgField(i, "name"), "a string")
		}
		m.Name = s
	}
	switch m.Role {
	case canon.RoleAssistant:
		return decodeAssistant(&f, i, m)
	case canon.RoleTool:
		if f.toolCallID != nil {
			s, ok := jsonread.Str(f.toolCallID)
			if !ok {
				return jsonread.ErrType(jsonread.MsgField(i, "tool_call_id"), "a string")
			}
			m.ToolCallID = s
		}
	}
	return nil
}

func decodeRole(v *fastjson.Value, i int, m *canon.Message) error {
	if v == nil {
		return jsonread.ErrRequired(jsonread.MsgField(i, "role"))
	}
	if v.Type() != fastjson.TypeString {
		return jsonread.ErrType(jsonread.MsgField(i, "role"), "a string")
	}
	b, _ := v.StringBytes()
	switch string(b) {
	case "system", "developer":
		m.Role = canon.RoleSystem
	case "user":
		m.Role = canon.RoleUser
	case "assistant":
		m.Role = canon.RoleAssistant
	case "tool", "function": // function: the legacy form of a tool result
		m.Role = canon.RoleTool
	default:
		return sdk.BadInput(jsonread.MsgField(i, "role") + ` "` + string(b) + `" is not supported`)
	}
	return nil
}

// decodeContent reads a string or an array of content parts. Only an
// assistant message may omit it (it then usually carries tool calls).
func decodeContent(v *fastjson.Value, i int, m *canon.Message) error {
	if v == nil {
		if m.Role == canon.RoleAssistant {
			return nil
		}
		return jsonread.ErrRequired(jsonread.MsgField(i, "content"))
	}
	if v.Type() == fastjson.TypeString {
		b, _ := v.StringBytes()
		if len(b) > 0 {
			m.Content = []canon.Part{{Type: canon.PartText, Text: string(b)}}
		}
		return nil
	}
	arr, err := v.Array()
	if err != nil {
		return jsonread.ErrType(jsonread.MsgField(i, "content"), "a string or an array of content parts")
	}
	if len(arr) == 0 {
		return nil
	}
	m.Content = make([]canon.Part, 0, len(arr))
	for j, pv := range arr {
		var p canon.Part
		if err := decodePart(pv, i, j, &p); err != nil {
			return err
		}
		m.Content = append(m.Content, p)
	}
	return nil
}

func partField(i, j int, field string) string {
	s := jsonread.At(jsonread.MsgField(i, "content"), j)
	if field != "" {
		s += "." + field
	}
	return s
}

func decodePart(v *fastjson.Value, i, j int, p *canon.Part) error {
	o, err := v.Object()
	if err != nil {
		return jsonread.ErrType(partField(i, j, ""), "an object")
	}
	tv := o.Get("type")
	if tv == nil || tv.Type() == fastjson.TypeNull {
		return jsonread.ErrRequired(partField(i, j, "type"))
	}
	typ, ok := jsonread.Str(tv)
	if !ok {
		return jsonread.ErrType(partField(i, j, "type"), "a string")
	}
	switch typ {
	case "text", "refusal": // refusal: an assistant's earlier refusal, kept as text
		tx := o.Get(typ)
		s, ok := "", tx != nil
		if ok {
			s, ok = jsonread.Str(tx)
		}
		if !ok {
			return jsonread.ErrType(partField(i, j, typ), "a string")
		}
		p.Type, p.Text = canon.PartText, s
		return nil
	case "image_url":
		p.Type = canon.PartImage
		return decodeImage(o.Get("image_url"), i, j, p)
	}
	return sdk.BadInput(partField(i, j, "type") + ": content part type " + typ + " is not supported")
}

// decodeImage reads {"url": ..., "detail": ...} (or, leniently, a bare URL
// string). http(s) URLs are passed on; base64 data URIs become MediaType
// and Data.
func decodeImage(v *fastjson.Value, i, j int, p *canon.Part) error {
	field := func(f string) string { return partField(i, j, f) }
	var url *fastjson.Value
	switch {
	case v == nil || v.Type() == fastjson.TypeNull:
		return jsonread.ErrRequired(field("image_url"))
	case v.Type() == fastjson.TypeString:
		url = v
	case v.Type() == fastjson.TypeObject:
		url = v.Get("url")
		if d := v.Get("detail"); d != nil && d.Type() != fastjson.TypeNull {
			s, ok := jsonread.Str(d)
			if !ok {
				return jsonread.ErrType(field("image_url.detail"), "a string")
			}
			p.Detail = s
		}
	default:
		return jsonread.ErrType(field("image_url"), "an object")
	}
	if url == nil || url.Type() == fastjson.TypeNull {
		return jsonread.ErrRequired(field("image_url.url"))
	}
	s, ok := jsonread.Str(url)
	if !ok {
		return jsonread.ErrType(field("image_url.url"), "a string")
	}
	switch {
	case jsonread.HasPrefixFold(s, "https://"), jsonread.HasPrefixFold(s, "http://"):
		p.URL = s
		return nil
	case jsonread.HasPrefixFold(s, "data:"):
		mt, data, ok := jsonread.DataURI(s)
		if !ok {
			return sdk.BadInput(field("image_url.url") + " must be a base64 data URI (data:<media type>;base64,<data>)")
		}
		p.MediaType, p.Data = mt, data
		return nil
	}
	return sdk.BadInput(field("image_url.url") + " must be an http(s) URL or a base64 data URI")
}

// decodeAssistant reads an assistant turn's tool calls and reasoning.
func decodeAssistant(f *msgFields, i int, m *canon.Message) error {
	if f.toolCalls != nil {
		arr, err := f.toolCalls.Array()
		if err != nil {
			return jsonread.ErrType(jsonread.MsgField(i, "tool_calls"), "an array")
		}
		if len(arr) > 0 {
			m.ToolCalls = make([]canon.ToolCall, len(arr))
		}
		for j, tv := range arr {
			if err := decodeToolCall(tv, jsonread.At(jsonread.MsgField(i, "tool_calls"), j), &m.ToolCalls[j]); err != nil {
				return err
			}
		}
	} else if f.functionCall != nil { // legacy single function call
		var tc canon.ToolCall
		if err := decodeFunction(f.functionCall, jsonread.MsgField(i, "function_call"), &tc); err != nil {
			return err
		}
		m.ToolCalls = []canon.ToolCall{tc}
	}
	// reasoning_content (DeepSeek, vLLM) beats reasoning (OpenRouter, newer vLLM).
	for _, r := range [...]struct {
		v    *fastjson.Value
		name string
	}{{f.reasoning, "reasoning"}, {f.reasoningContent, "reasoning_content"}} {
		if r.v == nil {
			continue
		}
		s, ok := jsonread.Str(r.v)
		if !ok {
			return jsonread.ErrType(jsonread.MsgField(i, r.name), "a string")
		}
		if s != "" {
			m.Reasoning = s
		}
	}
	return nil
}

// decodeToolCall reads {"id", "type": "function", "function": {...}}.
func decodeToolCall(v *fastjson.Value, path string, tc *canon.ToolCall) error {
	o, err := v.Object()
	if err != nil {
		return jsonread.ErrType(path, "an object")
	}
	if id := o.Get("id"); id != nil && id.Type() != fastjson.TypeNull {
		s, ok := jsonread.Str(id)
		if !ok {
			return jsonread.ErrType(path+".id", "a string")
		}
		tc.ID = s
	}
	if typ := o.Get("type"); typ != nil && typ.Type() != fastjson.TypeNull && !jsonread.IsStr(typ, "function") {
		s, ok := jsonread.Str(typ)
		if !ok {
			return jsonread.ErrType(path+".type", "a string")
		}
		return sdk.BadInput(path + ".type: tool call type " + s + " is not supported")
	}
	return decodeFunction(o.Get("function"), path+".function", tc)
}

// decodeFunction reads {"name", "arguments"}. arguments is JSON text in a
// string; an object is accepted too and kept as its JSON text.
func decodeFunction(v *fastjson.Value, path string, tc *canon.ToolCall) error {
	if v == nil || v.Type() == fastjson.TypeNull {
		return jsonread.ErrRequired(path)
	}
	o, err := v.Object()
	if err != nil {
		return jsonread.ErrType(path, "an object")
	}
	nv := o.Get("name")
	if nv == nil || nv.Type() == fastjson.TypeNull {
		return jsonread.ErrRequired(path + ".name")
	}
	s, ok := jsonread.Str(nv)
	if !ok {
		return jsonread.ErrType(path+".name", "a string")
	}
	tc.Name = s
	av := o.Get("arguments")
	switch {
	case av == nil || av.Type() == fastjson.TypeNull:
	case av.Type() == fastjson.TypeString:
		b, _ := av.StringBytes()
		tc.Arguments = string(b)
	case av.Type() == fastjson.TypeObject:
		tc.Arguments = string(av.MarshalTo(nil))
	default:
		return jsonread.ErrType(path+".arguments", "a string")
	}
	return nil
}
