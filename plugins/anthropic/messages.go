package anthropic

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
)

// decodeSystem reads the top-level system prompt, a string or an array of
// text blocks, into a system message at the head of req.Messages.
func decodeSystem(v *fastjson.Value, req *canon.ChatRequest) error {
	if v == nil {
		return nil
	}
	m := canon.Message{Role: canon.RoleSystem}
	if v.Type() == fastjson.TypeString {
		b, _ := v.StringBytes()
		if len(b) == 0 {
			return nil
		}
		m.Content = []canon.Part{{Type: canon.PartText, Text: string(b)}}
	} else {
		arr, err := v.Array()
		if err != nil {
			return jsonread.ErrType("system", "a string or an array of text blocks")
		}
		for i, bv := range arr {
			path := jsonread.At("system", i)
			o, err := bv.Object()
			if err != nil {
				return jsonread.ErrType(path, "an object")
			}
			typ, err := blockType(o, path)
			if err != nil {
				return err
			}
			if typ != "text" {
				return sdk.BadInput(path + ".type: system block type " + typ + " is not supported (use text)")
			}
			s, err := textField(o, path)
			if err != nil {
				return err
			}
			m.Content = append(m.Content, canon.Part{Type: canon.PartText, Text: s})
		}
		if len(m.Content) == 0 {
			return nil
		}
	}
	req.Messages = append(req.Messages, m)
	return nil
}

// decodeMessages reads the messages array. One Anthropic message may become
// several canonical ones: each tool_result block of a user turn is a tool
// message of its own, in order with the user text around it.
func decodeMessages(v *fastjson.Value, req *canon.ChatRequest) error {
	if v == nil {
		return jsonread.ErrRequired("messages")
	}
	arr, err := v.Array()
	if err != nil || len(arr) == 0 {
		return jsonread.ErrType("messages", "a non-empty array")
	}
	if cap(req.Messages)-len(req.Messages) < len(arr) {
		req.Messages = append(make([]canon.Message, 0, len(req.Messages)+len(arr)), req.Messages...)
	}
	for i, mv := range arr {
		o, err := mv.Object()
		if err != nil {
			return jsonread.ErrType(jsonread.At("messages", i), "an object")
		}
		rv := o.Get("role")
		if rv == nil || rv.Type() == fastjson.TypeNull {
			return jsonread.ErrRequired(jsonread.MsgField(i, "role"))
		}
		role, ok := jsonread.Str(rv)
		if !ok {
			return jsonread.ErrType(jsonread.MsgField(i, "role"), "a string")
		}
		cv := o.Get("content")
		if role == "system" {
			// A mid-conversation system message (Claude Code, beta
			// mid-conversation-tool-changes-2026-07-01).
			if err := decodeMidSystem(o, cv, i, arr[i+1:], req); err != nil {
				return err
			}
			continue
		}
		if cv == nil || cv.Type() == fastjson.TypeNull {
			return jsonread.ErrRequired(jsonread.MsgField(i, "content"))
		}
		switch role {
		case "user":
			err = decodeUser(cv, i, req)
		case "assistant":
			err = decodeAssistant(cv, i, req)
		default:
			return sdk.BadInput(jsonread.MsgField(i, "role") + ` "` + role + `" is not supported (use user, assistant or system)`)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// MidSystemNotSupported is the error code (error.details.error_code) of a
// mid-conversation system message the translator cannot take; Claude Code
// resends the request without the message when it reads it. The decode
// error's message carries it (a request_decode failure has no code of its
// own), and EncodeError turns it into the details object.
const MidSystemNotSupported = "mid_conversation_system_not_supported"

// decodeMidSystem reads a system message inside messages (Anthropic's
// mid-conversation system messages: content a string or an array of text
// blocks, cache_control ignored; clear_at; output_config, whose effort is
// not carried, as the top-level one is not) and merges its text into the
// system prompt: the system message at the head of req.Messages, made when
// the request has none, its text after the prompt's, a blank line between.
// Keeping it at its position would say more, but many open-weights chat
// templates (Mistral, Gemma and others) take a system message only
// first and fail or drop it elsewhere, and the translator does not know
// the backend's template; merged, every template takes it. A message with
// clear_at "next_user_message" is shown only until a later user message
// exists, so one followed by a user message adds nothing. A block other
// than text (tool_addition and tool_removal, the tool changes of the same
// beta, or anything else) cannot be part of a system prompt: the request
// is refused with MidSystemNotSupported, so the client resends without it.
func decodeMidSystem(o *fastjson.Object, v *fastjson.Value, i int, later []*fastjson.Value, req *canon.ChatRequest) error {
	if cv := o.Get("clear_at"); cv != nil && cv.Type() != fastjson.TypeNull {
		s, ok := jsonread.Str(cv)
		switch {
		case !ok || s != "never" && s != "next_user_message":
			return jsonread.ErrType(jsonread.MsgField(i, "clear_at"), `"never" or "next_user_message"`)
		case s == "next_user_message":
			for _, m := range later {
				if r := m.Get("role"); r != nil && jsonread.IsStr(r, "user") {
					return nil
				}
			}
		}
	}
	if v == nil || v.Type() == fastjson.TypeNull {
		if oc := o.Get("output_config"); oc == nil || oc.Type() == fastjson.TypeNull {
			return jsonread.ErrRequired(jsonread.MsgField(i, "content"))
		}
		return nil
	}
	text, arr, err := blocks(v, i)
	if err != nil {
		return err
	}
	var parts []canon.Part
	if arr == nil {
		if text != "" {
			parts = []canon.Part{{Type: canon.PartText, Text: text}}
		}
	}
	for j, bv := range arr {
		path := blockPath(i, j)
		o, err := bv.Object()
		if err != nil {
			return jsonread.ErrType(path, "an object")
		}
		typ, err := blockType(o, path)
		if err != nil {
			return err
		}
		if typ != "text" {
			return sdk.BadInput(path + ".type: a mid-conversation system message can hold text blocks only here, not " + typ + " (" + MidSystemNotSupported + ")")
		}
		s, err := textField(o, path)
		if err != nil {
			return err
		}
		if s != "" {
			parts = append(parts, canon.Part{Type: canon.PartText, Text: s})
		}
	}
	if len(parts) == 0 {
		return nil
	}
	if len(req.Messages) == 0 || req.Messages[0].Role != canon.RoleSystem {
		req.Messages = append(req.Messages, canon.Message{})
		copy(req.Messages[1:], req.Messages)
		req.Messages[0] = canon.Message{Role: canon.RoleSystem}
	}
	sys := &req.Messages[0]
	if len(sys.Content) > 0 {
		parts[0].Text = "\n\n" + parts[0].Text
	}
	sys.Content = append(sys.Content, parts...)
	return nil
}

func blockPath(i, j int) string { return jsonread.At(jsonread.MsgField(i, "content"), j) }

// blocks returns a message's content as blocks: a string is one text
// block (nil, with the text), an array its elements.
func blocks(v *fastjson.Value, i int) (text string, arr []*fastjson.Value, err error) {
	if v.Type() == fastjson.TypeString {
		b, _ := v.StringBytes()
		return string(b), nil, nil
	}
	arr, err = v.Array()
	if err != nil {
		return "", nil, jsonread.ErrType(jsonread.MsgField(i, "content"), "a string or an array of content blocks")
	}
	return "", arr, nil
}

// blockType reads a content block's "type".
func blockType(o *fastjson.Object, path string) (string, error) {
	tv := o.Get("type")
	if tv == nil || tv.Type() == fastjson.TypeNull {
		return "", jsonread.ErrRequired(path + ".type")
	}
	s, ok := jsonread.Str(tv)
	if !ok {
		return "", jsonread.ErrType(path+".type", "a string")
	}
	return s, nil
}

// textField reads a text block's "text".
func textField(o *fastjson.Object, path string) (string, error) {
	tv := o.Get("text")
	if tv == nil || tv.Type() == fastjson.TypeNull {
		return "", jsonread.ErrRequired(path + ".text")
	}
	s, ok := jsonread.Str(tv)
	if !ok {
		return "", jsonread.ErrType(path+".text", "a string")
	}
	return s, nil
}

// decodeUser reads a user turn: text, image and document blocks make user
// messages; each tool_result block makes a tool message, cutting the user
// content around it in two so the order is kept.
func decodeUser(v *fastjson.Value, i int, req *canon.ChatRequest) error {
	text, arr, err := blocks(v, i)
	if err != nil {
		return err
	}
	if arr == nil {
		m := canon.Message{Role: canon.RoleUser}
		if text != "" {
			m.Content = []canon.Part{{Type: canon.PartText, Text: text}}
		}
		req.Messages = append(req.Messages, m)
		return nil
	}
	var parts []canon.Part
	flush := func() {
		if len(parts) > 0 {
			req.Messages = append(req.Messages, canon.Message{Role: canon.RoleUser, Content: parts})
			parts = nil
		}
	}
	results := 0
	for j, bv := range arr {
		path := blockPath(i, j)
		o, err := bv.Object()
		if err != nil {
			return jsonread.ErrType(path, "an object")
		}
		typ, err := blockType(o, path)
		if err != nil {
			return err
		}
		if typ == "tool_result" {
			flush()
			var m canon.Message
			if err := decodeToolResult(o, path, &m); err != nil {
				return err
			}
			req.Messages = append(req.Messages, m)
			results++
			continue
		}
		var p canon.Part
		if err := decodeUserBlock(o, typ, path, &p); err != nil {
			return err
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 && results == 0 {
		// An empty content array is still a user turn.
		req.Messages = append(req.Messages, canon.Message{Role: canon.RoleUser})
		return nil
	}
	flush()
	return nil
}

// decodeUserBlock reads a text, image or (text) document block.
func decodeUserBlock(o *fastjson.Object, typ, path string, p *canon.Part) error {
	switch typ {
	case "text":
		s, err := textField(o, path)
		if err != nil {
			return err
		}
		p.Type, p.Text = canon.PartText, s
		return nil
	case "image":
		return decodeImage(o, path, p)
	case "document":
		return decodeDocument(o, path, p)
	}
	return sdk.BadInput(path + ".type: content block type " + typ + " is not supported here")
}

// source reads a block's "source" object and its "type".
func source(o *fastjson.Object, path string) (*fastjson.Object, string, error) {
	sv := o.Get("source")
	if sv == nil || sv.Type() == fastjson.TypeNull {
		return nil, "", jsonread.ErrRequired(path + ".source")
	}
	so, err := sv.Object()
	if err != nil {
		return nil, "", jsonread.ErrType(path+".source", "an object")
	}
	typ, err := blockType(so, path+".source")
	return so, typ, err
}

// strField reads a required, non-empty string field of o.
func strField(o *fastjson.Object, key, path string) (string, error) {
	v := o.Get(key)
	if v == nil || v.Type() == fastjson.TypeNull {
		return "", jsonread.ErrRequired(path + "." + key)
	}
	s, ok := jsonread.Str(v)
	if !ok {
		return "", jsonread.ErrType(path+"."+key, "a string")
	}
	if s == "" {
		return "", jsonread.ErrRequired(path + "." + key)
	}
	return s, nil
}

// decodeImage reads {"type": "image", "source": {"type": "base64",
// "media_type", "data"} | {"type": "url", "url"}}. File sources (the Files
// API) have no meaning here.
func decodeImage(o *fastjson.Object, path string, p *canon.Part) error {
	so, typ, err := source(o, path)
	if err != nil {
		return err
	}
	p.Type = canon.PartImage
	sp := path + ".source"
	switch typ {
	case "base64":
		if p.MediaType, err = strField(so, "media_type", sp); err != nil {
			return err
		}
		p.Data, err = strField(so, "data", sp)
		return err
	case "url":
		u, err := strField(so, "url", sp)
		if err != nil {
			return err
		}
		if !jsonread.HasPrefixFold(u, "https://") && !jsonread.HasPrefixFold(u, "http://") {
			return sdk.BadInput(sp + ".url must be an http(s) URL")
		}
		p.URL = u
		return nil
	}
	return sdk.BadInput(sp + ".type: image source type " + typ + " is not supported (use base64 or url)")
}

// decodeDocument reads a document block whose source is plain text
// ({"type": "text", "media_type": "text/plain", "data"}) as a text part;
// PDF and file documents cannot be passed to an open-weights backend.
func decodeDocument(o *fastjson.Object, path string, p *canon.Part) error {
	so, typ, err := source(o, path)
	if err != nil {
		return err
	}
	if typ != "text" {
		return sdk.BadInput(path + ".source.type: document source type " + typ + " is not supported (only text documents)")
	}
	dv := so.Get("data")
	if dv == nil || dv.Type() == fastjson.TypeNull {
		return jsonread.ErrRequired(path + ".source.data")
	}
	s, ok := jsonread.Str(dv)
	if !ok {
		return jsonread.ErrType(path+".source.data", "a string")
	}
	p.Type, p.Text = canon.PartText, s
	return nil
}

// errorPrefix marks a tool result the client flagged with is_error: the
// canonical tool message has no such flag, and the model should know.
const errorPrefix = "Error: "

// decodeToolResult reads {"type": "tool_result", "tool_use_id", "content":
// string | [text and image blocks], "is_error"} into a tool message.
func decodeToolResult(o *fastjson.Object, path string, m *canon.Message) error {
	m.Role = canon.RoleTool
	id, err := strField(o, "tool_use_id", path)
	if err != nil {
		return err
	}
	m.ToolCallID = id
	isErr := false
	if ev := o.Get("is_error"); ev != nil && ev.Type() != fastjson.TypeNull {
		var ok bool
		if isErr, ok = jsonread.Bool(ev); !ok {
			return jsonread.ErrType(path+".is_error", "a boolean")
		}
	}
	cv := o.Get("content")
	switch {
	case cv == nil || cv.Type() == fastjson.TypeNull:
	case cv.Type() == fastjson.TypeString:
		b, _ := cv.StringBytes()
		if len(b) > 0 {
			m.Content = []canon.Part{{Type: canon.PartText, Text: string(b)}}
		}
	default:
		arr, err := cv.Array()
		if err != nil {
			return jsonread.ErrType(path+".content", "a string or an array of content blocks")
		}
		for k, bv := range arr {
			bp := jsonread.At(path+".content", k)
			bo, err := bv.Object()
			if err != nil {
				return jsonread.ErrType(bp, "an object")
			}
			typ, err := blockType(bo, bp)
			if err != nil {
				return err
			}
			var p canon.Part
			if err := decodeUserBlock(bo, typ, bp, &p); err != nil {
				return err
			}
			m.Content = append(m.Content, p)
		}
	}
	if isErr {
		if len(m.Content) > 0 && m.Content[0].Type == canon.PartText {
			m.Content[0].Text = errorPrefix + m.Content[0].Text
		} else {
			m.Content = append([]canon.Part{{Type: canon.PartText, Text: "Error"}}, m.Content...)
		}
	}
	return nil
}

// decodeAssistant reads an assistant turn: text blocks are its content,
// tool_use blocks its tool calls, thinking blocks its reasoning
// (redacted_thinking is encrypted for Anthropic's models and is dropped).
func decodeAssistant(v *fastjson.Value, i int, req *canon.ChatRequest) error {
	m := canon.Message{Role: canon.RoleAssistant}
	text, arr, err := blocks(v, i)
	if err != nil {
		return err
	}
	if arr == nil && text != "" {
		m.Content = []canon.Part{{Type: canon.PartText, Text: text}}
	}
	for j, bv := range arr {
		path := blockPath(i, j)
		o, err := bv.Object()
		if err != nil {
			return jsonread.ErrType(path, "an object")
		}
		typ, err := blockType(o, path)
		if err != nil {
			return err
		}
		switch typ {
		case "text":
			s, err := textField(o, path)
			if err != nil {
				return err
			}
			m.Content = append(m.Content, canon.Part{Type: canon.PartText, Text: s})
		case "tool_use":
			var tc canon.ToolCall
			if err := decodeToolUse(o, path, &tc); err != nil {
				return err
			}
			m.ToolCalls = append(m.ToolCalls, tc)
		case "thinking":
			tv := o.Get("thinking")
			if tv == nil || tv.Type() == fastjson.TypeNull {
				return jsonread.ErrRequired(path + ".thinking")
			}
			s, ok := jsonread.Str(tv)
			if !ok {
				return jsonread.ErrType(path+".thinking", "a string")
			}
			m.Reasoning += s
		case "redacted_thinking":
		default:
			return sdk.BadInput(path + ".type: content block type " + typ + " is not supported in an assistant message")
		}
	}
	req.Messages = append(req.Messages, m)
	return nil
}

// decodeToolUse reads {"type": "tool_use", "id", "name", "input": {...}};
// the input object becomes the call's JSON arguments text.
func decodeToolUse(o *fastjson.Object, path string, tc *canon.ToolCall) error {
	var err error
	if tc.ID, err = strField(o, "id", path); err != nil {
		return err
	}
	if tc.Name, err = strField(o, "name", path); err != nil {
		return err
	}
	iv := o.Get("input")
	switch {
	case iv == nil || iv.Type() == fastjson.TypeNull:
		tc.Arguments = "{}"
	case iv.Type() == fastjson.TypeObject:
		tc.Arguments = string(iv.MarshalTo(nil))
	default:
		return jsonread.ErrType(path+".input", "an object")
	}
	return nil
}
