package responses

import (
	"strings"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// inputDecoder turns input items into canonical messages. Items map to
// chat turns as OpenAI's own conversion does: consecutive function_call
// items (and an assistant message just before them) form one assistant
// turn with several tool calls; a function_call_output is a tool message;
// a reasoning item is the thinking of the assistant turn that follows it.
type inputDecoder struct {
	req *canon.ChatRequest
	// thinking is the text of reasoning items waiting for the next
	// assistant turn. A reasoning item with no assistant turn after it is
	// dropped: a chat request carries thinking only on assistant turns,
	// and engines discard the last turn's thinking anyway.
	thinking string
	// open is the index in req.Messages of the assistant turn that
	// function_call items may still join, or -1.
	open int
}

// decodeInput reads input: a string (one user message) or an array of
// items.
func decodeInput(v *fastjson.Value, req *canon.ChatRequest) error {
	if v == nil {
		return jsonread.ErrRequired("input")
	}
	if s, ok := jsonread.Str(v); ok {
		req.Messages = append(req.Messages, textMessage(canon.RoleUser, s))
		return nil
	}
	arr, err := v.Array()
	if err != nil {
		return jsonread.ErrType("input", "a string or an array of input items")
	}
	if len(arr) == 0 {
		return sdk.BadInput("input must not be empty")
	}
	if cap(req.Messages)-len(req.Messages) < len(arr) {
		m := make([]canon.Message, len(req.Messages), len(req.Messages)+len(arr))
		copy(m, req.Messages)
		req.Messages = m
	}
	d := inputDecoder{req: req, open: -1}
	for i, it := range arr {
		if err := d.item(it, jsonread.At("input", i)); err != nil {
			return err
		}
	}
	if len(req.Messages) == 0 {
		return sdk.BadInput("input has no message, function_call or function_call_output item")
	}
	return nil
}

// item decodes one input item at path.
func (d *inputDecoder) item(v *fastjson.Value, path string) error {
	o, err := v.Object()
	if err != nil {
		return jsonread.ErrType(path, "an object")
	}
	typ := "message" // EasyInputMessage: {role, content} with no type
	if tv := o.Get("type"); tv != nil && tv.Type() != fastjson.TypeNull {
		s, ok := jsonread.Str(tv)
		if !ok {
			return jsonread.ErrType(path+".type", "a string")
		}
		typ = s
	}
	switch typ {
	case "message":
		return d.message(o, path)
	case "function_call":
		return d.functionCall(o, path)
	case "function_call_output":
		return d.functionOutput(o, path)
	case "reasoning":
		return d.reasoning(o, path)
	case "item_reference":
		return sdk.BadInput(path + ".type: item_reference is not supported on this gateway (send the item itself)")
	}
	return sdk.BadInput(path + ".type: input item type " + typ + " is not supported (use message, function_call, function_call_output or reasoning)")
}

func (d *inputDecoder) message(o *fastjson.Object, path string) error {
	var m canon.Message
	rv := o.Get("role")
	if rv == nil || rv.Type() == fastjson.TypeNull {
		return jsonread.ErrRequired(path + ".role")
	}
	role, ok := jsonread.Str(rv)
	if !ok {
		return jsonread.ErrType(path+".role", "a string")
	}
	switch role {
	case "user":
		m.Role = canon.RoleUser
	case "assistant":
		m.Role = canon.RoleAssistant
	case "system", "developer":
		m.Role = canon.RoleSystem
	default:
		return sdk.BadInput(path + `.role "` + role + `" is not supported (use user, assistant, system or developer)`)
	}
	if err := decodeContent(o.Get("content"), path+".content", m.Role == canon.RoleAssistant, &m.Content); err != nil {
		return err
	}
	d.open = -1
	if m.Role == canon.RoleAssistant {
		m.Reasoning = d.thinking
		d.open = len(d.req.Messages)
	}
	d.thinking = "" // reasoning before a user turn belongs to no answer
	d.req.Messages = append(d.req.Messages, m)
	return nil
}

// decodeContent reads a message's content: a string or an array of parts.
func decodeContent(v *fastjson.Value, path string, assistant bool, dst *[]canon.Part) error {
	if v == nil || v.Type() == fastjson.TypeNull {
		return jsonread.ErrRequired(path)
	}
	if s, ok := jsonread.Str(v); ok {
		if s != "" {
			*dst = []canon.Part{{Type: canon.PartText, Text: s}}
		}
		return nil
	}
	arr, err := v.Array()
	if err != nil {
		return jsonread.ErrType(path, "a string or an array of content parts")
	}
	if len(arr) == 0 {
		return nil
	}
	parts := make([]canon.Part, 0, len(arr))
	for j, pv := range arr {
		var p canon.Part
		if err := decodePart(pv, jsonread.At(path, j), assistant, &p); err != nil {
			return err
		}
		parts = append(parts, p)
	}
	*dst = parts
	return nil
}

func decodePart(v *fastjson.Value, path string, assistant bool, p *canon.Part) error {
	o, err := v.Object()
	if err != nil {
		return jsonread.ErrType(path, "an object")
	}
	tv := o.Get("type")
	if tv == nil || tv.Type() == fastjson.TypeNull {
		return jsonread.ErrRequired(path + ".type")
	}
	typ, ok := jsonread.Str(tv)
	if !ok {
		return jsonread.ErrType(path+".type", "a string")
	}
	switch typ {
	case "input_text", "output_text", "refusal":
		// output_text and refusal: an assistant's earlier answer, kept as
		// text; input_text is accepted there too, as OpenAI does.
		key := "text"
		if typ == "refusal" {
			key = "refusal"
		}
		if typ != "input_text" && !assistant {
			return sdk.BadInput(path + ".type: " + typ + " is only allowed in assistant messages (use input_text)")
		}
		s, err := reqString(o, path, key)
		if err != nil {
			return err
		}
		p.Type, p.Text = canon.PartText, s
		return nil
	case "input_image":
		if assistant {
			return sdk.BadInput(path + ".type: input_image is not allowed in assistant messages")
		}
		p.Type = canon.PartImage
		return decodeImage(o, path, p)
	case "input_file":
		return sdk.BadInput(path + ".type: input_file is not supported on this gateway (send the text as input_text)")
	case "input_audio":
		return sdk.BadInput(path + ".type: input_audio is not supported on this gateway")
	}
	return sdk.BadInput(path + ".type: content part type " + typ + " is not supported (use input_text or input_image)")
}

// reqString reads a required string field.
func reqString(o *fastjson.Object, path, key string) (string, error) {
	v := o.Get(key)
	if v == nil || v.Type() == fastjson.TypeNull {
		return "", jsonread.ErrRequired(path + "." + key)
	}
	s, ok := jsonread.Str(v)
	if !ok {
		return "", jsonread.ErrType(path+"."+key, "a string")
	}
	return s, nil
}

// decodeImage reads {"image_url": "https://... | data:...", "detail"}.
// http(s) URLs are passed on (the host fetches them through its SSRF
// guard); base64 data URIs become MediaType and Data. file_id needs the
// Files API, which the gateway does not offer.
func decodeImage(o *fastjson.Object, path string, p *canon.Part) error {
	if d := o.Get("detail"); d != nil && d.Type() != fastjson.TypeNull {
		s, ok := jsonread.Str(d)
		if !ok {
			return jsonread.ErrType(path+".detail", "a string")
		}
		p.Detail = s
	}
	uv := o.Get("image_url")
	if uv == nil || uv.Type() == fastjson.TypeNull {
		if f := o.Get("file_id"); f != nil && f.Type() != fastjson.TypeNull {
			return sdk.BadInput(path + ".file_id: uploaded files are not supported on this gateway (send image_url)")
		}
		return jsonread.ErrRequired(path + ".image_url")
	}
	s, ok := jsonread.Str(uv)
	if !ok {
		return jsonread.ErrType(path+".image_url", "a string")
	}
	switch {
	case jsonread.HasPrefixFold(s, "https://"), jsonread.HasPrefixFold(s, "http://"):
		p.URL = s
		return nil
	case jsonread.HasPrefixFold(s, "data:"):
		mt, data, ok := jsonread.DataURI(s)
		if !ok {
			return sdk.BadInput(path + ".image_url must be a base64 data URI (data:<media type>;base64,<data>)")
		}
		p.MediaType, p.Data = mt, data
		return nil
	}
	return sdk.BadInput(path + ".image_url must be an http(s) URL or a base64 data URI")
}

// functionCall reads {"call_id", "name", "namespace", "arguments"}: a tool call of the
// assistant turn it joins or opens.
func (d *inputDecoder) functionCall(o *fastjson.Object, path string) error {
	var tc canon.ToolCall
	var err error
	if tc.ID, err = reqString(o, path, "call_id"); err != nil {
		return err
	}
	if tc.Name, err = reqString(o, path, "name"); err != nil {
		return err
	}
	if tc.Name == "" {
		return jsonread.ErrRequired(path + ".name")
	}
	// A call of a namespaced tool (Codex's): the model saw it flattened.
	if nv := o.Get("namespace"); nv != nil && nv.Type() != fastjson.TypeNull {
		ns, ok := jsonread.Str(nv)
		if !ok {
			return jsonread.ErrType(path+".namespace", "a string")
		}
		if ns != "" {
			tc.Name = flatName(ns, tc.Name)
		}
	}
	if tc.Arguments, err = reqString(o, path, "arguments"); err != nil {
		return err
	}
	if d.open < 0 {
		d.open = len(d.req.Messages)
		d.req.Messages = append(d.req.Messages, canon.Message{Role: canon.RoleAssistant})
	}
	m := &d.req.Messages[d.open]
	if d.thinking != "" {
		m.Reasoning += d.thinking
		d.thinking = ""
	}
	m.ToolCalls = append(m.ToolCalls, tc)
	return nil
}

// functionOutput reads {"call_id", "output"}: output is a string or an
// array of input_text / input_image parts.
func (d *inputDecoder) functionOutput(o *fastjson.Object, path string) error {
	m := canon.Message{Role: canon.RoleTool}
	var err error
	if m.ToolCallID, err = reqString(o, path, "call_id"); err != nil {
		return err
	}
	if err := decodeContent(o.Get("output"), path+".output", false, &m.Content); err != nil {
		return err
	}
	d.open, d.thinking = -1, ""
	d.req.Messages = append(d.req.Messages, m)
	return nil
}

// reasoning reads a reasoning item's text: its content (reasoning_text
// parts, the model's own words) or, when it has none, its summary
// (summary_text parts). encrypted_content is OpenAI's own and means
// nothing to another engine: ignored.
func (d *inputDecoder) reasoning(o *fastjson.Object, path string) error {
	text, err := reasoningText(o.Get("content"), path+".content", "reasoning_text")
	if err != nil {
		return err
	}
	if text == "" {
		if text, err = reasoningText(o.Get("summary"), path+".summary", "summary_text"); err != nil {
			return err
		}
	}
	if text == "" {
		return nil
	}
	if d.thinking != "" {
		d.thinking += "\n\n"
	}
	d.thinking += text
	return nil
}

func reasoningText(v *fastjson.Value, path, partType string) (string, error) {
	if v == nil || v.Type() == fastjson.TypeNull {
		return "", nil
	}
	arr, err := v.Array()
	if err != nil {
		return "", jsonread.ErrType(path, "an array")
	}
	var b strings.Builder
	for j, pv := range arr {
		pp := jsonread.At(path, j)
		po, err := pv.Object()
		if err != nil {
			return "", jsonread.ErrType(pp, "an object")
		}
		if tv := po.Get("type"); tv != nil && tv.Type() != fastjson.TypeNull && !jsonread.IsStr(tv, partType) {
			return "", jsonread.ErrType(pp+".type", `"`+partType+`"`)
		}
		s, err := reqString(po, pp, "text")
		if err != nil {
			return "", err
		}
		if s == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(s)
	}
	return b.String(), nil
}
