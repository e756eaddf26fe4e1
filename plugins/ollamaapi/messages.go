package ollamaapi

import (
	"strconv"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
)

// decodeMessages reads /api/chat's messages. Ollama answers a chat without
// messages by loading the model; every request here goes to a backend for
// a completion, so that is refused.
func decodeMessages(v *fastjson.Value, req *canon.ChatRequest) error {
	if v == nil {
		return jsonread.ErrRequired("messages")
	}
	arr, err := v.Array()
	if err != nil {
		return jsonread.ErrType("messages", "an array")
	}
	if len(arr) == 0 {
		return sdk.BadInput("messages must not be empty: this gateway does not support Ollama's load-only requests")
	}
	req.Messages = make([]canon.Message, len(arr))
	var calls callIndex
	for i, mv := range arr {
		m := &req.Messages[i]
		if err := decodeMessage(mv, i, m); err != nil {
			return err
		}
		switch m.Role {
		case canon.RoleAssistant:
			calls.add(i, m.ToolCalls)
		case canon.RoleTool:
			if m.ToolCallID == "" {
				m.ToolCallID = calls.answer(m.Name)
			} else {
				calls.answered(m.ToolCallID)
			}
		}
	}
	return nil
}

// msgFields holds one message's fields (nil: absent or null).
type msgFields struct {
	role, content, images, toolCalls, toolName, toolCallID, thinking *fastjson.Value
}

func (f *msgFields) set(k []byte, v *fastjson.Value) {
	switch string(k) {
	case "role":
		f.role = v
	case "content":
		f.content = v
	case "images":
		f.images = v
	case "tool_calls":
		f.toolCalls = v
	case "tool_name":
		f.toolName = v
	case "tool_call_id":
		f.toolCallID = v
	case "thinking":
		f.thinking = v
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
	// Ollama places a message's images before its text in the prompt.
	if err := decodeImages(f.images, jsonread.MsgField(i, "images"), m); err != nil {
		return err
	}
	if f.content != nil {
		s, ok := jsonread.Str(f.content)
		if !ok {
			return jsonread.ErrType(jsonread.MsgField(i, "content"), "a string")
		}
		if s != "" {
			m.Content = append(m.Content, canon.Part{Type: canon.PartText, Text: s})
		}
	}
	for _, s := range [...]struct {
		v    *fastjson.Value
		name string
		dst  *string
	}{
		{f.thinking, "thinking", &m.Reasoning},
		{f.toolName, "tool_name", &m.Name},
		{f.toolCallID, "tool_call_id", &m.ToolCallID},
	} {
		if s.v == nil {
			continue
		}
		str, ok := jsonread.Str(s.v)
		if !ok {
			return jsonread.ErrType(jsonread.MsgField(i, s.name), "a string")
		}
		*s.dst = str
	}
	if m.Role != canon.RoleTool {
		m.ToolCallID = ""
		m.Name = ""
	}
	if m.Role != canon.RoleAssistant {
		m.Reasoning = ""
		return nil
	}
	return decodeToolCalls(f.toolCalls, i, m)
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
	case "system":
		m.Role = canon.RoleSystem
	case "user":
		m.Role = canon.RoleUser
	case "assistant":
		m.Role = canon.RoleAssistant
	case "tool":
		m.Role = canon.RoleTool
	default:
		return sdk.BadInput(jsonread.MsgField(i, "role") + ` "` + string(b) + `" is not supported (use system, user, assistant or tool)`)
	}
	return nil
}

// decodeToolCalls reads an assistant turn's tool_calls:
// [{"id"?, "function": {"index"?, "name", "arguments": {...}}}]. Ollama's
// arguments are an object; the canonical form is its JSON text. A call
// without an id gets call_<message index>_<call index>, which a later tool
// message can be matched to.
func decodeToolCalls(v *fastjson.Value, i int, m *canon.Message) error {
	if v == nil {
		return nil
	}
	arr, err := v.Array()
	if err != nil {
		return jsonread.ErrType(jsonread.MsgField(i, "tool_calls"), "an array")
	}
	if len(arr) == 0 {
		return nil
	}
	m.ToolCalls = make([]canon.ToolCall, len(arr))
	for j, tv := range arr {
		path := jsonread.At(jsonread.MsgField(i, "tool_calls"), j)
		tc := &m.ToolCalls[j]
		o, err := tv.Object()
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
		if tc.ID == "" {
			tc.ID = "call_" + strconv.Itoa(i) + "_" + strconv.Itoa(j)
		}
		fv := o.Get("function")
		if fv == nil || fv.Type() == fastjson.TypeNull {
			return jsonread.ErrRequired(path + ".function")
		}
		fo, err := fv.Object()
		if err != nil {
			return jsonread.ErrType(path+".function", "an object")
		}
		nv := fo.Get("name")
		if nv == nil || nv.Type() == fastjson.TypeNull {
			return jsonread.ErrRequired(path + ".function.name")
		}
		name, ok := jsonread.Str(nv)
		if !ok || name == "" {
			return jsonread.ErrType(path+".function.name", "a non-empty string")
		}
		tc.Name = name
		switch av := fo.Get("arguments"); {
		case av == nil || av.Type() == fastjson.TypeNull:
			tc.Arguments = "{}"
		case av.Type() == fastjson.TypeObject:
			tc.Arguments = string(appendCompact(nil, av))
		case av.Type() == fastjson.TypeString:
			// OpenAI's form, JSON text in a string: accepted when it holds
			// an object, since some clients replay calls that way.
			b, _ := av.StringBytes()
			if fastjson.ValidateBytes(b) != nil || len(b) == 0 || firstNonSpace(b) != '{' {
				return jsonread.ErrType(path+".function.arguments", "an object")
			}
			tc.Arguments = string(b)
		default:
			return jsonread.ErrType(path+".function.arguments", "an object")
		}
	}
	return nil
}

func firstNonSpace(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}

// callIndex remembers the assistant tool calls seen so far, to give a tool
// message without tool_call_id the id of the call it answers.
type callIndex struct {
	calls []pendingCall
}

type pendingCall struct {
	msg      int
	id, name string
	answered bool
}

func (x *callIndex) add(msg int, calls []canon.ToolCall) {
	for _, c := range calls {
		x.calls = append(x.calls, pendingCall{msg: msg, id: c.ID, name: c.Name})
	}
}

// answered marks the calls with id as answered.
func (x *callIndex) answered(id string) {
	for k := range x.calls {
		if x.calls[k].id == id {
			x.calls[k].answered = true
		}
	}
}

// answer returns the id of the call a tool result answers: the first
// unanswered call of the latest assistant turn with that tool name (any
// name when name is ""), else the latest call of that name anywhere, else
// "" (the backend then sees a tool result without a call id).
func (x *callIndex) answer(name string) string {
	if len(x.calls) == 0 {
		return ""
	}
	last := x.calls[len(x.calls)-1].msg
	for k := range x.calls {
		c := &x.calls[k]
		if c.msg == last && !c.answered && (name == "" || c.name == name) {
			c.answered = true
			return c.id
		}
	}
	if name == "" {
		return ""
	}
	for k := len(x.calls) - 1; k >= 0; k-- {
		if x.calls[k].name == name {
			return x.calls[k].id
		}
	}
	return ""
}
